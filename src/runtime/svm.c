/* Fine-grained SVM buffers (svm.h). The library builds against OpenCL
 * 1.2's API and must load with a 1.2 ICD loader: OpenCL 2.0's two calls
 * are looked up in the process at run time (the loader exports them from
 * 2.0 on) and made only on devices that report 2.0 or later; the few
 * constants are 2.0's values where the headers predate them. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "runtime/svm.h"
#include "runtime/device_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

#ifndef CL_DEVICE_SVM_CAPABILITIES
#define CL_DEVICE_SVM_CAPABILITIES 0x1053
#endif
#ifndef CL_DEVICE_SVM_FINE_GRAIN_BUFFER
#define CL_DEVICE_SVM_FINE_GRAIN_BUFFER (1 << 1)
#endif
#ifndef CL_MEM_SVM_FINE_GRAIN_BUFFER
#define CL_MEM_SVM_FINE_GRAIN_BUFFER (1 << 10)
#endif

typedef void *(CL_API_CALL *svm_alloc_fn)(cl_context, cl_bitfield, size_t, cl_uint);
typedef void(CL_API_CALL *svm_free_fn)(cl_context, void *);

/* The loader's clSVMAlloc and clSVMFree, NULL where it has none. */
static void svm_calls(svm_alloc_fn *alloc, svm_free_fn *release)
{
    /* copied: ISO C has no conversion from dlsym's object pointer to a function pointer */
    void *a = dlsym(RTLD_DEFAULT, "clSVMAlloc"), *f = dlsym(RTLD_DEFAULT, "clSVMFree");
    *alloc = NULL;
    *release = NULL;
    if (!a || !f) return;
    memcpy(alloc, &a, sizeof a);
    memcpy(release, &f, sizeof f);
}

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
    svm_alloc_fn alloc;
    svm_free_fn release;
    svm_calls(&alloc, &release);
    if (!alloc) return 0;
    cl_bool unified = CL_FALSE;
    cl_bitfield caps = 0; /* cl_device_svm_capabilities */
    if (clGetDeviceInfo(dev->id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL) != CL_SUCCESS ||
        !unified)
        return 0;
    if (clGetDeviceInfo(dev->id, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, NULL) != CL_SUCCESS) return 0;
    return (caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
}

clt_status clt_svm_buffer(clt_device *dev, size_t bytes, const char *what, cl_mem *out, void **host)
{
    *out = NULL;
    *host = NULL;
    svm_alloc_fn alloc;
    svm_free_fn release;
    svm_calls(&alloc, &release);
    if (!alloc) return clt_fail(CLT_ERR_UNSUPPORTED, "%s: the OpenCL loader has no clSVMAlloc", what);
    /* alignment 0: the device's largest data type, which sub-buffer offsets respect */
    void *p = alloc(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, bytes, 0);
    if (!p)
        return clt_fail(CLT_ERR_DEVICE_MEMORY, "%s: clSVMAlloc of %zu bytes (fine-grained) failed on device %d (%s)",
                        what, bytes, dev->info.index, dev->info.name);
    cl_int err;
    /* With an SVM pointer, USE_HOST_PTR makes that memory the buffer's storage. */
    *out = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, p, &err);
    if (!*out) {
        release(dev->ctx, p);
        return clt_cl_fail(err, what);
    }
    *host = p;
    return CLT_OK;
}

void clt_svm_free(clt_device *dev, void *host)
{
    svm_alloc_fn alloc;
    svm_free_fn release;
    svm_calls(&alloc, &release);
    if (host && release) release(dev->ctx, host);
}
