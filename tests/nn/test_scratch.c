/* The tutorials' from-scratch LeNet written with the public tensor ops only:
 * parameters as tensors, forward, softmax cross-entropy, backward by hand,
 * SGD. A few steps on a fixed batch must lower the loss. */
#include <string.h>

#include "check.h"

#define N 16
#define T(dims...) tensor((int64_t[]){dims}, (int)(sizeof((int64_t[]){dims}) / sizeof(int64_t)))

static clt_device *dev;

static clt_tensor *tensor(const int64_t *shape, int ndim)
{
    clt_tensor *t = NULL;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, ndim, shape, &t));
    return t;
}

int main(void)
{
    test_need_devices(1);
    REQUIRE_OK(clt_device_open(0, &dev));
    /* parameters: W1 (20,1,3,3) b1, W2 (50,20,5,5) b2, W3 (128,800) b3, W4 (10,128) b4 */
    clt_tensor *w1 = T(20, 1, 3, 3), *b1 = T(20), *w2 = T(50, 20, 5, 5), *b2 = T(50);
    clt_tensor *w3 = T(128, 800), *b3 = T(128), *w4 = T(10, 128), *b4 = T(10);
    clt_tensor *params[] = {w1, b1, w2, b2, w3, b3, w4, b4};
    clt_tensor *grads[8];
    for (int i = 0; i < 8; i++) {
        int64_t shape[4];
        for (int d = 0; d < clt_tensor_ndim(params[i]); d++) shape[d] = clt_tensor_dim(params[i], d);
        grads[i] = tensor(shape, clt_tensor_ndim(params[i]));
        if (i % 2 == 0) CHECK_OK(clt_tensor_init_xavier(params[i], 100 + (uint64_t)i, clt_tensor_numel(params[i]) / clt_tensor_dim(params[i], 0), clt_tensor_dim(params[i], 0), 1.0f));
    }
    /* activations */
    clt_tensor *x = T(N, 1, 28, 28), *h1 = T(N, 20, 26, 26), *p1 = T(N, 20, 13, 13), *h2 = T(N, 50, 9, 9);
    clt_tensor *p2 = T(N, 50, 4, 4), *h3 = T(N, 128), *z = T(N, 10);
    clt_tensor *dz = T(N, 10), *dh3 = T(N, 128), *dp2 = T(N, 50, 4, 4), *dh2 = T(N, 50, 9, 9);
    clt_tensor *dp1 = T(N, 20, 13, 13), *dh1 = T(N, 20, 26, 26);
    clt_tensor *y = NULL;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_INT32, 1, (int64_t[]){N}, &y));

    static float img[N * 784];
    int32_t lab[N];
    for (int s = 0; s < N; s++) {
        lab[s] = s % 10;
        for (int p = 0; p < 784; p++) /* a class-dependent stripe pattern */
            img[s * 784 + p] = ((p / 28 + p % 28 * lab[s]) % 10 < 3) ? 1.0f : 0.0f;
    }
    CHECK_OK(clt_tensor_upload(x, img, N * 784));
    CHECK_OK(clt_tensor_upload(y, lab, N));

    double first = 0, last = 0;
    for (int step = 0; step < 30; step++) {
        /* forward */
        CHECK_OK(clt_conv2d_forward(x, w1, b1, 1, 0, h1));
        CHECK_OK(clt_activation_forward(CLT_ACT_RELU, h1, h1));
        CHECK_OK(clt_pool2d_forward(CLT_POOL_AVG, h1, 2, 2, p1, NULL));
        CHECK_OK(clt_conv2d_forward(p1, w2, b2, 1, 0, h2));
        CHECK_OK(clt_activation_forward(CLT_ACT_RELU, h2, h2));
        CHECK_OK(clt_pool2d_forward(CLT_POOL_AVG, h2, 2, 2, p2, NULL));
        CHECK_OK(clt_tensor_reshape(p2, 2, (int64_t[]){N, 800}));
        CHECK_OK(clt_dense_forward(p2, w3, b3, h3));
        CHECK_OK(clt_activation_forward(CLT_ACT_RELU, h3, h3));
        CHECK_OK(clt_dense_forward(h3, w4, b4, z));
        double loss;
        int64_t correct;
        CHECK_OK(clt_softmax_xent_forward(z, y, &loss, &correct));
        if (step == 0) first = loss / N;
        last = loss / N;
        /* backward (mean loss) */
        CHECK_OK(clt_softmax_xent_backward(z, y, 1.0f / N, dz));
        CHECK_OK(clt_dense_backward(h3, w4, dz, dh3, grads[6], grads[7]));
        CHECK_OK(clt_activation_backward(CLT_ACT_RELU, h3, dh3, dh3));
        CHECK_OK(clt_tensor_reshape(dp2, 2, (int64_t[]){N, 800}));
        CHECK_OK(clt_dense_backward(p2, w3, dh3, dp2, grads[4], grads[5]));
        CHECK_OK(clt_tensor_reshape(dp2, 4, (int64_t[]){N, 50, 4, 4}));
        CHECK_OK(clt_tensor_reshape(p2, 4, (int64_t[]){N, 50, 4, 4}));
        CHECK_OK(clt_pool2d_backward(CLT_POOL_AVG, dp2, NULL, 2, 2, dh2));
        CHECK_OK(clt_activation_backward(CLT_ACT_RELU, h2, dh2, dh2));
        CHECK_OK(clt_conv2d_backward(p1, w2, dh2, 1, 0, dp1, grads[2], grads[3]));
        CHECK_OK(clt_pool2d_backward(CLT_POOL_AVG, dp1, NULL, 2, 2, dh1));
        CHECK_OK(clt_activation_backward(CLT_ACT_RELU, h1, dh1, dh1));
        CHECK_OK(clt_conv2d_backward(x, w1, dh1, 1, 0, NULL, grads[0], grads[1]));
        for (int i = 0; i < 8; i++) CHECK_OK(clt_sgd_step(params[i], grads[i], NULL, 0.5f, 0.0f, 0.0f));
    }
    CHECK(last < 0.5 * first, "from-scratch LeNet: loss %g -> %g after 30 steps", first, last);

    clt_tensor *all[] = {x, h1, p1, h2, p2, h3, z, dz, dh3, dp2, dh2, dp1, dh1, y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) clt_tensor_destroy(all[i]);
    for (int i = 0; i < 8; i++) clt_tensor_destroy(params[i]), clt_tensor_destroy(grads[i]);
    clt_device_destroy(dev);
    return test_result();
}
