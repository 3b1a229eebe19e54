/* Gradient clipping by global L2 norm (clip.h). */
#include "optim/clip.h"

#include <math.h>

double clt_grad_norm(const float *g, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)g[i] * (double)g[i];
    return sqrt(sum);
}

float clt_clip_factor(double norm, float max_norm)
{
    /* PyTorch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1 */
    double coef = (double)max_norm / (norm + 1e-6);
    return coef < 1.0 ? (float)coef : 1.0f;
}
