/* Fine-grained SVM buffers (svm.h). The rest of the library builds
 * against OpenCL 1.2's API; this file alone needs 2.0's, and calls it only
 * on devices that report 2.0 or later. */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 200
#include "runtime/svm.h"

#include <stdio.h>

#include "core/error.h"

#ifndef CL_DEVICE_SVM_CAPABILITIES
#error "OpenCL 2.0 headers needed (opencl-c-headers)"
#endif

/* "OpenCL <major>.<minor> ..." >= 2.0 */
static int version_2(cl_device_id id)
{
    char v[128] = {0};
    int major = 0, minor = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_VERSION, sizeof v - 1, v, NULL) != CL_SUCCESS) return 0;
    return sscanf(v, "OpenCL %d.%d", &major, &minor) == 2 && major >= 2;
}

int clt_svm_shared(const clt_device *dev)
{
    if (!dev || dev->settings.no_shared_grads || !version_2(dev->id)) return 0;
    cl_bool unified = CL_FALSE;
    cl_device_svm_capabilities caps = 0;
    if (clGetDeviceInfo(dev->id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL) != CL_SUCCESS ||
        !unified)
        return 0;
    if (clGetDeviceInfo(dev->id, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL) != CL_SUCCESS) return 0;
    return (caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
}

clt_status clt_svm_buffer(clt_device *dev, size_t bytes, const char *what, cl_mem *out, void **host)
{
    *out = NULL;
    *host = clSVMAlloc(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, bytes, 0);
    if (!*host)
        return clt_fail(CLT_ERR_DEVICE_MEMORY, "%s: clSVMAlloc of %zu bytes (fine-grained) failed on device %d (%s)",
                        what, bytes, dev->info.index, dev->info.name);
    cl_int err;
    /* With an SVM pointer, USE_HOST_PTR makes that memory the buffer's storage. */
    *out = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, *host, &err);
    if (!*out) {
        clSVMFree(dev->ctx, *host);
        *host = NULL;
        return clt_cl_fail(err, what);
    }
    return CLT_OK;
}

void clt_svm_free(clt_device *dev, void *host)
{
    if (host) clSVMFree(dev->ctx, host);
}
