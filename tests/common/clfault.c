/* A device fault for tests, preloaded into a process (LD_PRELOAD): from
 * the N-th kernel launch on (CLFAULT_LAUNCH=N), clEnqueueNDRangeKernel
 * fails with CL_OUT_OF_RESOURCES, as a lost device's driver answers, and
 * keeps failing; every other call goes to the real OpenCL library. With
 * CLFAULT_AFTER=PATH launches count only once that file exists (a
 * checkpoint, say), whatever a device's kernels per step. So a test proves
 * that a device error mid-run ends the run cleanly without a test hook in
 * the product. CLFAULT_LOG=1 prints each counted launch's number. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CL/cl.h>

typedef cl_int (*enqueue_fn)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *,
                             cl_uint, const cl_event *, cl_event *);

/* Process-wide by nature: a preloaded library has no other place for its count. */
static atomic_long launches;

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims,
                                                       const size_t *offset, const size_t *global,
                                                       const size_t *local, cl_uint n_wait, const cl_event *wait,
                                                       cl_event *event)
{
    const char *at = getenv("CLFAULT_LAUNCH"), *log = getenv("CLFAULT_LOG"), *after = getenv("CLFAULT_AFTER");
    if (!after || access(after, F_OK) == 0) {
        long n = atomic_fetch_add(&launches, 1) + 1;
        if (log && log[0] == '1') fprintf(stderr, "clfault: launch %ld\n", n);
        if (at && atol(at) > 0 && n >= atol(at)) return CL_OUT_OF_RESOURCES;
    }
    enqueue_fn real = NULL;
    void *sym = dlsym(RTLD_NEXT, "clEnqueueNDRangeKernel");
    if (!sym) return CL_INVALID_OPERATION;
    memcpy(&real, &sym, sizeof real); /* POSIX's way from an object pointer to a function's */
    return real(q, k, dims, offset, global, local, n_wait, wait, event);
}
