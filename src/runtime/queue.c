/* Device memory, queues and events for the rooms above runtime/ (queue.h). */
#include "runtime/queue.h"
#include "runtime/device_impl.h"

#include "runtime/device.h"

clt_status clt_buffer_create(clt_device *dev, cl_mem_flags flags, size_t bytes, void *host, const char *what,
                             cl_mem *out)
{
    cl_int err = CL_SUCCESS;
    cl_mem_flags use = host && !(flags & CL_MEM_COPY_HOST_PTR) ? CL_MEM_USE_HOST_PTR : 0;
    *out = clCreateBuffer(dev->ctx, flags | use, bytes, host, &err);
    if (!*out) return clt_cl_fail(err == CL_SUCCESS ? CL_OUT_OF_RESOURCES : err, what);
    return CLT_OK;
}

clt_status clt_buffer_view(cl_mem parent, size_t offset, size_t bytes, const char *what, cl_mem *out)
{
    cl_buffer_region r = {offset, bytes};
    cl_int err = CL_SUCCESS;
    *out = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    if (!*out) return clt_cl_fail(err == CL_SUCCESS ? CL_INVALID_VALUE : err, what);
    return CLT_OK;
}

int clt_buffer_retain(cl_mem m) { return m && clRetainMemObject(m) == CL_SUCCESS; }

void clt_buffer_release(cl_mem m)
{
    if (m) clReleaseMemObject(m);
}

cl_command_queue clt_device_queue(const clt_device *dev) { return dev->queue; }

clt_status clt_queue_open(clt_device *dev, int separate, const char *what, cl_command_queue *out)
{
    if (!separate) {
        clRetainCommandQueue(dev->queue);
        *out = dev->queue;
        return CLT_OK;
    }
    cl_int err = CL_SUCCESS;
    *out = clCreateCommandQueue(dev->ctx, dev->id, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!*out) return clt_cl_fail(err, what);
    return CLT_OK;
}

void clt_queue_release(cl_command_queue q)
{
    if (q) clReleaseCommandQueue(q);
}

clt_status clt_queue_flush(cl_command_queue q, const char *what)
{
    CLT_CL(clFlush(q), what);
    return CLT_OK;
}

clt_status clt_queue_finish(cl_command_queue q, const char *what)
{
    CLT_CL(clFinish(q), what);
    return CLT_OK;
}

void clt_queue_drain(cl_command_queue q)
{
    if (q) clFinish(q);
}

clt_status clt_queue_marker(cl_command_queue q, cl_event *out, const char *what)
{
    CLT_CL(clEnqueueMarkerWithWaitList(q, 0, NULL, out), what);
    return CLT_OK;
}

clt_status clt_queue_barrier(cl_command_queue q, cl_uint n, const cl_event *wait, const char *what)
{
    CLT_CL(clEnqueueBarrierWithWaitList(q, n, wait, NULL), what);
    return CLT_OK;
}

clt_status clt_queue_copy(cl_command_queue q, cl_mem src, size_t src_offset, cl_mem dst, size_t dst_offset,
                          size_t bytes, const char *what)
{
    CLT_CL(clEnqueueCopyBuffer(q, src, dst, src_offset, dst_offset, bytes, 0, NULL, NULL), what);
    return CLT_OK;
}

clt_status clt_queue_fill(cl_command_queue q, cl_mem buf, const void *pattern, size_t pattern_bytes, size_t offset,
                          size_t bytes, const char *what)
{
    CLT_CL(clEnqueueFillBuffer(q, buf, pattern, pattern_bytes, offset, bytes, 0, NULL, NULL), what);
    return CLT_OK;
}

clt_status clt_queue_read(cl_command_queue q, cl_mem buf, int blocking, size_t offset, size_t bytes, void *host,
                          cl_uint n, const cl_event *wait, cl_event *out, const char *what)
{
    CLT_CL(clEnqueueReadBuffer(q, buf, blocking ? CL_TRUE : CL_FALSE, offset, bytes, host, n, wait, out), what);
    return CLT_OK;
}

clt_status clt_queue_write(cl_command_queue q, cl_mem buf, int blocking, size_t offset, size_t bytes,
                           const void *host, cl_uint n, const cl_event *wait, cl_event *out, const char *what)
{
    CLT_CL(clEnqueueWriteBuffer(q, buf, blocking ? CL_TRUE : CL_FALSE, offset, bytes, host, n, wait, out), what);
    return CLT_OK;
}

clt_status clt_queue_map(cl_command_queue q, cl_mem buf, size_t bytes, const char *what, void **out)
{
    cl_int err = CL_SUCCESS;
    *out = clEnqueueMapBuffer(q, buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
    if (!*out) return clt_cl_fail(err == CL_SUCCESS ? CL_MAP_FAILURE : err, what);
    return CLT_OK;
}

void clt_queue_unmap(cl_command_queue q, cl_mem buf, void *mapped)
{
    clEnqueueUnmapMemObject(q, buf, mapped, 0, NULL, NULL);
}

cl_int clt_event_wait(cl_event e)
{
    cl_int err = clWaitForEvents(1, &e);
    if (err != CL_SUCCESS) {
        cl_int st = err;
        if (clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) == CL_SUCCESS && st < 0)
            err = st;
    }
    return err;
}

int clt_event_ended(cl_event e)
{
    cl_int st = CL_QUEUED;
    return clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) != CL_SUCCESS ||
           st <= CL_COMPLETE;
}

cl_ulong clt_event_time(cl_event e, cl_profiling_info which)
{
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(e, which, sizeof t, &t, NULL) != CL_SUCCESS) return 0;
    return t;
}

void clt_event_release(cl_event e)
{
    if (e) clReleaseEvent(e);
}
