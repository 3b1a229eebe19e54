/* Device memory, queues and events for the rooms above runtime/: the only
 * way they reach OpenCL (tests/unit/check_wall.py fails on a clEnqueue* or
 * clCreate* call outside runtime/). Each call that can fail returns a
 * status whose detail reads "<what>: CL_XXX (-n)"; the handles are
 * OpenCL's own, released with the calls here. */
#ifndef CLT_RUNTIME_QUEUE_H
#define CLT_RUNTIME_QUEUE_H

#include "runtime/cl.h"

/* Buffers in the device's context. `host`: CL_MEM_USE_HOST_PTR memory,
 * or with CL_MEM_COPY_HOST_PTR in flags the bytes copied in (NULL
 * otherwise). */
clt_status clt_buffer_create(clt_device *dev, cl_mem_flags flags, size_t bytes, void *host, const char *what,
                             cl_mem *out);
/* A read-write view of bytes [offset, offset + bytes) of parent. */
clt_status clt_buffer_view(cl_mem parent, size_t offset, size_t bytes, const char *what, cl_mem *out);
/* 1 when retained (m != NULL). */
int clt_buffer_retain(cl_mem m);
void clt_buffer_release(cl_mem m); /* NULL: nothing */

/* The device's in-order compute queue, owned by the device. */
cl_command_queue clt_device_queue(const clt_device *dev);
/* A queue of its own beside the compute queue, with profiling; or with
 * separate == 0 the compute queue itself, retained. Release either with
 * clt_queue_release. */
clt_status clt_queue_open(clt_device *dev, int separate, const char *what, cl_command_queue *out);
void clt_queue_release(cl_command_queue q); /* NULL: nothing */
clt_status clt_queue_flush(cl_command_queue q, const char *what);
clt_status clt_queue_finish(cl_command_queue q, const char *what);
/* Waits for q where a failure has nowhere to go (teardown, settling after
 * a failure): the thread's error detail stays as it was. */
void clt_queue_drain(cl_command_queue q);

/* Commands (n events in wait: what they wait for; out: NULL or an event
 * the caller releases). */
clt_status clt_queue_marker(cl_command_queue q, cl_event *out, const char *what);
clt_status clt_queue_barrier(cl_command_queue q, cl_uint n, const cl_event *wait, const char *what);
clt_status clt_queue_copy(cl_command_queue q, cl_mem src, size_t src_offset, cl_mem dst, size_t dst_offset,
                          size_t bytes, const char *what);
clt_status clt_queue_fill(cl_command_queue q, cl_mem buf, const void *pattern, size_t pattern_bytes, size_t offset,
                          size_t bytes, const char *what);
clt_status clt_queue_read(cl_command_queue q, cl_mem buf, int blocking, size_t offset, size_t bytes, void *host,
                          cl_uint n, const cl_event *wait, cl_event *out, const char *what);
clt_status clt_queue_write(cl_command_queue q, cl_mem buf, int blocking, size_t offset, size_t bytes,
                           const void *host, cl_uint n, const cl_event *wait, cl_event *out, const char *what);
/* The whole of buf mapped for reading and writing (blocking); unmapped
 * by clt_queue_unmap. */
clt_status clt_queue_map(cl_command_queue q, cl_mem buf, size_t bytes, const char *what, void **out);
void clt_queue_unmap(cl_command_queue q, cl_mem buf, void *mapped);

/* Waits for e; CL_SUCCESS, or the command's own failure status where it
 * has one (more telling than the wait's). */
cl_int clt_event_wait(cl_event e);
/* 1 when e's command ended (completed, or failed: clt_event_wait says
 * which, as does an event whose status cannot be read). */
int clt_event_ended(cl_event e);
/* The profiling time `which` (CL_PROFILING_COMMAND_QUEUED, _START, _END)
 * of e in device nanoseconds; 0 when the device does not tell. */
cl_ulong clt_event_time(cl_event e, cl_profiling_info which);
void clt_event_release(cl_event e); /* NULL: nothing */

#endif
