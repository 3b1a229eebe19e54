/* Fine-grained SVM buffers (runtime/svm.h): clt_svm_shared agrees with what
 * the device reports (OpenCL >= 2.0, host-unified memory, fine-grained
 * buffer SVM) and with CLTRAIN_SHARED_GRADS; where it says yes, the host's
 * writes through the pointer reach the device's reads and the device's
 * writes, through the buffer and through a sub-buffer (as a net's
 * parameters use it), reach the host's pointer, with no map or copy. */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 200 /* the test asks the device in 2.0's words itself */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "runtime/device_impl.h"
#include "runtime/svm.h"

/* What the device says, asked here without the library. */
static int reports_sharing(const clt_device *dev)
{
    char v[128] = {0};
    int major = 0, minor = 0;
    cl_bool unified = CL_FALSE;
    cl_device_svm_capabilities caps = 0;
    clGetDeviceInfo(dev->id, CL_DEVICE_VERSION, sizeof v - 1, v, NULL);
    if (sscanf(v, "OpenCL %d.%d", &major, &minor) != 2 || major < 2) return 0;
    clGetDeviceInfo(dev->id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    if (clGetDeviceInfo(dev->id, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL) != CL_SUCCESS) return 0;
    return unified && (caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER);
}

int main(void)
{
    test_need_devices(1);
    clt_device *dev;
    REQUIRE_OK(clt_device_open(0, &dev));
    int want = reports_sharing(dev);
    CHECK(clt_svm_shared(dev) == want, "clt_svm_shared %d, the device reports %d", clt_svm_shared(dev), want);
    clt_device_settings s = *clt_device_get_settings(dev);
    s.no_shared_grads = 1;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    CHECK(!clt_svm_shared(dev), "CLTRAIN_SHARED_GRADS=0 (no_shared_grads) still shares");
    s.no_shared_grads = 0;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    if (!want) {
        printf("device 0 cannot share gradients: only the agreement checked\n");
        clt_device_destroy(dev);
        return test_result();
    }
    enum { N = 1000 };
    cl_mem buf;
    float *host;
    REQUIRE_OK(clt_svm_buffer(dev, N * sizeof(float), "test buffer", &buf, (void **)&host));
    for (int i = 0; i < N; i++) host[i] = (float)i;
    float back[N];
    CHECK_OK(clt_device_read(dev, buf, 0, sizeof back, back, "read"));
    CHECK(back[0] == 0.0f && back[999] == 999.0f, "the host's writes, read by the device: %g %g", back[0], back[999]);
    float fill = -2.5f;
    CHECK(clEnqueueFillBuffer(dev->queue, buf, &fill, sizeof fill, 400 * sizeof(float), 100 * sizeof(float), 0, NULL,
                              NULL) == CL_SUCCESS,
          "fill");
    CHECK_OK(clt_device_finish(dev));
    CHECK(host[399] == 399.0f && host[400] == -2.5f && host[499] == -2.5f && host[500] == 500.0f,
          "the device's writes, seen through the pointer: %g %g %g %g", host[399], host[400], host[499], host[500]);
    cl_int err;
    cl_uint align_bits = 1024;
    clGetDeviceInfo(dev->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    size_t at = align_bits / 8 < 512 ? 512 : align_bits / 8; /* bytes: a multiple of the alignment */
    if (at + 16 * sizeof(float) <= N * sizeof(float)) {
        cl_buffer_region region = {at, 16 * sizeof(float)};
        cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
        CHECK(sub != NULL, "clCreateSubBuffer: %d", err);
        float seven = 7.0f;
        size_t first = at / sizeof(float);
        if (sub) {
            CHECK(clEnqueueFillBuffer(dev->queue, sub, &seven, sizeof seven, 0, 16 * sizeof(float), 0, NULL, NULL) ==
                      CL_SUCCESS,
                  "fill (sub-buffer)");
            CHECK_OK(clt_device_finish(dev));
            CHECK(host[first - 1] != 7.0f && host[first] == 7.0f && host[first + 15] == 7.0f &&
                      host[first + 16] != 7.0f,
                  "the device's writes through a sub-buffer at %zu floats: %g %g %g %g", first, host[first - 1],
                  host[first], host[first + 15], host[first + 16]);
            clReleaseMemObject(sub);
        }
    }
    clReleaseMemObject(buf);
    CHECK_OK(clt_device_finish(dev));
    clt_svm_free(dev, host);
    clt_device_destroy(dev);
    return test_result();
}
