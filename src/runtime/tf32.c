/* The host's TF32 arithmetic (tf32.h): the reference the device probe and
 * the tests compare tensor-core products with. */
#include "runtime/tf32.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

float clt_tf32_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return x; /* inf and NaN */
    /* sign and magnitude: adding half of the dropped unit to the magnitude
     * rounds ties away from zero; a carry moves into the exponent, up to
     * infinity, as the hardware's does */
    u = (u + 0x1000u) & ~(uint32_t)0x1fff;
    memcpy(&x, &u, sizeof x);
    return x;
}

void clt_tf32_product(int m, int n, int k, const float *a, const float *b, double *c)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int t = 0; t < k; t++)
                s += (double)clt_tf32_round(a[i * k + t]) * (double)clt_tf32_round(b[t * n + j]);
            c[i * n + j] = s;
        }
}

int clt_tf32_matches(int m, int n, int k, const float *a, const float *b, const double *ref, const float *got)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double mag = 0;
            for (int t = 0; t < k; t++)
                mag += fabs((double)clt_tf32_round(a[i * k + t]) * (double)clt_tf32_round(b[t * n + j]));
            if (!(fabs((double)got[i * n + j] - ref[i * n + j]) <= 1e-5 * mag + 1e-30)) return 0;
        }
    return 1;
}
