/* A device handle destroyed while nets and tensors on it exist: they keep
 * the device alive and stay usable until the last of them is destroyed
 * (use-after-free before; run under ASan to see it). Only the public API. */
#include <stdatomic.h>
#include <string.h>
#include <threads.h>

#include "check.h"

static clt_tensor *shared_tensor;

/* Destroys a tensor on another thread: the device's count is atomic. */
static int destroy_tensor(void *arg)
{
    (void)arg;
    clt_tensor_destroy(shared_tensor);
    return 0;
}

int main(void)
{
    test_need_devices(1);
    clt_device *dev;
    REQUIRE_OK(clt_device_open(0, &dev));
    clt_net *net;
    REQUIRE_OK(clt_net_create(dev, "conv:2:3,flatten,dense:3", 1, 6, 6, &net));
    clt_tensor *t, *u;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 1, (int64_t[]){5}, &t));
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, 1, (int64_t[]){5}, &shared_tensor));
    clt_device_destroy(dev); /* the handle goes; the net and tensors keep the device */

    CHECK_OK(clt_tensor_fill(t, 2.5f));
    float host[5] = {0};
    CHECK_OK(clt_tensor_download(t, host, 5));
    CHECK(host[0] == 2.5f && host[4] == 2.5f, "tensor after its device handle was destroyed: %g", host[0]);
    CHECK(clt_tensor_device(t) == clt_net_device(net), "the tensor's and the net's device");
    /* New objects on the still-living device, through an object's handle. */
    REQUIRE_OK(clt_tensor_create(clt_net_device(net), CLT_DTYPE_FLOAT32, 1, (int64_t[]){3}, &u));
    CHECK_OK(clt_net_init(net, 1, CLT_INIT_XAVIER));
    int n = clt_net_param_count(net);
    CHECK(n == 4, "net parameters %d", n);
    clt_net_destroy(net);
    CHECK_OK(clt_tensor_fill(t, 1.0f));
    clt_tensor_destroy(t);

    thrd_t th;
    CHECK(thrd_create(&th, destroy_tensor, NULL) == thrd_success, "thread");
    thrd_join(th, NULL);
    CHECK_OK(clt_tensor_fill(u, 0.5f));
    clt_tensor_destroy(u); /* the last reference: the device goes now */
    return test_result();
}
