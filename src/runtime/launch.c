#include "runtime/launch.h"
#include "runtime/device_impl.h"

#include <stdio.h>

static clt_status set_args(clt_device *dev, cl_kernel k, const char *kernel, int nargs,
                           const clt_arg *args)
{
    for (int i = 0; i < nargs; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (err != CL_SUCCESS) {
            char what[128];
            snprintf(what, sizeof what, "clSetKernelArg(%s, %d)", kernel, i);
            return clt_cl_fail(err, what);
        }
    }
    (void)dev;
    return CLT_OK;
}

static size_t round_up(size_t n, size_t m) { return m ? (n + m - 1) / m * m : n; }

static clt_status enqueue(clt_device *dev, cl_kernel k, const char *kernel, cl_uint dims,
                          const size_t *global, const size_t *local)
{
    cl_int err = clEnqueueNDRangeKernel(dev->queue, k, dims, NULL, global, local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char what[400];
        snprintf(what, sizeof what, "enqueue %s on device %d (%s)", kernel, dev->info.index,
                 dev->info.name);
        return clt_cl_fail(err, what);
    }
    return CLT_OK;
}

clt_status clt_launch_1d_local(clt_device *dev, const char *program, const char *kernel, size_t n,
                               size_t local, int nargs, const clt_arg *args)
{
    if (n == 0) return CLT_OK;
    cl_kernel k;
    CLT_TRY(clt_device_kernel(dev, program, kernel, &k));
    CLT_TRY(set_args(dev, k, kernel, nargs, args));
    size_t global = round_up(n, local);
    return enqueue(dev, k, kernel, 1, &global, local ? &local : NULL);
}

clt_status clt_launch_1d(clt_device *dev, const char *program, const char *kernel, size_t n,
                         int nargs, const clt_arg *args)
{
    size_t local = 64;
    if (dev->info.max_work_group_size > 0 && (size_t)dev->info.max_work_group_size < local)
        local = (size_t)dev->info.max_work_group_size;
    return clt_launch_1d_local(dev, program, kernel, n, local, nargs, args);
}

/* The program spec of an elementwise kernel on dev, and its floats per work-item. */
static int elementwise_spec(const clt_device *dev, const char *program, char *spec, size_t cap)
{
    int w = dev->info.type == CLT_DEVICE_CPU ? clt_device_vector_width(dev) : 1;
    snprintf(spec, cap, "%s -DEW=%d", program, w);
    return w;
}

clt_status clt_launch_elementwise(clt_device *dev, const char *program, const char *kernel, size_t n,
                                  int nargs, const clt_arg *args)
{
    char spec[96];
    int w = elementwise_spec(dev, program, spec, sizeof spec);
    return clt_launch_1d(dev, spec, kernel, (n + (size_t)w - 1) / (size_t)w, nargs, args);
}

clt_status clt_elementwise_build(clt_device *dev, const char *program, const char *kernel)
{
    char spec[96];
    elementwise_spec(dev, program, spec, sizeof spec);
    cl_kernel k;
    return clt_device_kernel(dev, spec, kernel, &k);
}

clt_status clt_launch_2d(clt_device *dev, const char *program, const char *kernel, size_t gx,
                         size_t gy, size_t lx, size_t ly, int nargs, const clt_arg *args)
{
    if (gx == 0 || gy == 0) return CLT_OK;
    cl_kernel k;
    CLT_TRY(clt_device_kernel(dev, program, kernel, &k));
    CLT_TRY(set_args(dev, k, kernel, nargs, args));
    if (lx && ly && dev->info.max_work_group_size > 0 &&
        (int64_t)(lx * ly) > dev->info.max_work_group_size)
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: work-group %zux%zu exceeds device %d's limit %lld",
                        kernel, lx, ly, dev->info.index, (long long)dev->info.max_work_group_size);
    size_t global[2] = {round_up(gx, lx), round_up(gy, ly)};
    size_t local[2] = {lx, ly};
    return enqueue(dev, k, kernel, 2, global, lx && ly ? local : NULL);
}

clt_status clt_device_zero(clt_device *dev, cl_mem buf, size_t off, size_t bytes, const char *what)
{
    float zero = 0.0f;
    CLT_CL(clEnqueueFillBuffer(dev->queue, buf, &zero, sizeof zero, off, bytes, 0, NULL, NULL), what);
    return CLT_OK;
}

void clt_device_scratch_release(clt_device *dev)
{
    /* Release is deferred by OpenCL until queued commands using it finish. */
    if (dev->scratch) clReleaseMemObject(dev->scratch);
    dev->scratch = NULL;
    dev->scratch_bytes = 0;
}

size_t clt_device_scratch_size(const clt_device *dev) { return dev->scratch_bytes; }

clt_status clt_device_scratch(clt_device *dev, size_t bytes, cl_mem *out)
{
    if (bytes == 0) bytes = 4;
    if (dev->scratch && dev->scratch_bytes >= bytes) {
        *out = dev->scratch;
        return CLT_OK;
    }
    if (dev->info.max_alloc_bytes > 0 && bytes > (size_t)dev->info.max_alloc_bytes)
        return clt_fail(CLT_ERR_DEVICE_MEMORY,
                        "device %d (%s): a %zu-byte work buffer exceeds its largest allocation (%lld bytes)",
                        dev->info.index, dev->info.name, bytes, (long long)dev->info.max_alloc_bytes);
    clt_device_scratch_release(dev);
    cl_int err;
    cl_mem m = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!m) return clt_cl_fail(err, "clCreateBuffer (scratch)");
    dev->scratch = m;
    dev->scratch_bytes = bytes;
    *out = m;
    return CLT_OK;
}
