/* Inverted dropout (kernels/dropout.cl): the keep rate is 1 - p, kept
 * values are scaled by 1 / (1 - p) exactly, the mask is a function of
 * (seed, step, sample index in the batch, element) only: a batch dropped in
 * two shards equals the batch dropped at once, on either device; another
 * step or seed gives another mask; p = 0 is the identity. */
#include <string.h>

#include "check.h"
#include "ops/dropout.h"
#include "ref_misc.h"
#include "tensor/tensor.h"

static uint64_t rng = 0x5eed0d0d;

/* Dropout of n samples of `per` floats starting at sample `first`, on dev. */
static float *dropped(clt_device *dev, const float *x, size_t per, int n, float p, clt_rng_key key)
{
    int64_t count = (int64_t)per * n;
    clt_tensor *t = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, x);
    CHECK_OK(clt_dropout_raw(dev, per, n, t->buf, t->buf, p, key));
    float *y = ref_misc_download(t);
    clt_tensor_destroy(t);
    return y;
}

int main(void)
{
    int count = test_need_devices(1);
    clt_device *dev = NULL, *dev1 = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    if (count > 1) REQUIRE_OK(clt_device_open(1, &dev1));
    enum { PER = 1000, N = 200 };
    size_t total = (size_t)PER * N;
    float *x = ref_misc_alloc(total, 4);
    ref_misc_fill(x, total, &rng, 0.5f, 1.5f); /* never 0: a zero marks a dropped element */
    const clt_rng_key key = {7, 3, 0};
    const float ps[] = {0.5f, 0.1f, 0.9f};
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
        float p = ps[k];
        float *y = dropped(dev, x, PER, N, p, key);
        size_t kept = 0, wrong = 0;
        for (size_t i = 0; i < total; i++) {
            if (y[i] != 0) kept++;
            if (y[i] != 0 && y[i] != x[i] * (1.0f / (1.0f - p))) wrong++;
        }
        double rate = (double)kept / (double)total;
        /* binomial standard deviation at most 0.0011 here: 5 of them */
        CHECK(fabs(rate - (1.0 - p)) < 0.006, "p %g: keep rate %.4f, want %.4f", p, rate, 1.0 - p);
        CHECK(wrong == 0, "p %g: %zu kept values not scaled by 1/(1-p)", p, wrong);
        free(y);
    }
    /* the same batch in two shards (samples 0..72 and 73..199), on two devices */
    float *whole = dropped(dev, x, PER, N, 0.5f, key);
    float *a = dropped(dev, x, PER, 73, 0.5f, key);
    float *b = dropped(dev1 ? dev1 : dev, x + 73 * PER, PER, N - 73, 0.5f, (clt_rng_key){7, 3, 73});
    CHECK(memcmp(whole, a, 73 * PER * 4) == 0 && memcmp(whole + 73 * PER, b, (size_t)(N - 73) * PER * 4) == 0,
          "a batch dropped in two shards differs from the batch dropped at once");
    /* another step, seed or sample: another mask (about half agree at p 0.5) */
    const clt_rng_key others[] = {{7, 4, 0}, {8, 3, 0}, {7, 3, 1}};
    for (size_t k = 0; k < 3; k++) {
        float *o = dropped(dev, x, PER, N, 0.5f, others[k]);
        size_t same = 0;
        for (size_t i = 0; i < total; i++) same += (o[i] == 0) == (whole[i] == 0);
        double agree = (double)same / (double)total;
        CHECK(fabs(agree - 0.5) < 0.01, "key %zu: masks agree on %.4f of the elements", k, agree);
        free(o);
    }
    float *id = dropped(dev, x, PER, N, 0.0f, key);
    CHECK(memcmp(id, x, total * 4) == 0, "p 0 is not the identity");
    int64_t one = 1;
    clt_tensor *t = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &one, x);
    CHECK_FAIL(clt_dropout_raw(dev, 1, 1, t->buf, t->buf, 1.0f, key), CLT_ERR_INVALID_ARG, "probability 1");
    clt_tensor_destroy(t);
    free(whole), free(a), free(b), free(id), free(x);
    clt_device_destroy(dev1);
    clt_device_destroy(dev);
    return test_result();
}
