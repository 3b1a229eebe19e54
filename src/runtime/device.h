/* The device handle: one context, one in-order queue, its built programs. */
#ifndef CLT_RUNTIME_DEVICE_H
#define CLT_RUNTIME_DEVICE_H

#include "cltrain_diag.h"
#include "core/error.h"
#include "runtime/cl.h"

typedef struct clt_kernel_slot {
    int program;        /* index into clt_kernel_sources */
    char name[64];
    cl_kernel kernel;
} clt_kernel_slot;

struct clt_device {
    clt_device_info info;
    cl_platform_id platform;
    cl_device_id id;
    cl_context ctx;
    cl_command_queue queue;
    clt_log_fn log;
    void *log_user;
    clt_program_stats stats;
    cl_program *programs;     /* one per embedded source, built lazily */
    clt_kernel_slot *kernels; /* created kernels, looked up by name */
    int n_kernels, cap_kernels;
    int cache_enabled;
    char cache_dir[1024];
    int gemm_ready;           /* CLBlast warmed up on this device */
    cl_mem scratch;           /* see clt_device_scratch (launch.h) */
    size_t scratch_bytes;
};

/* printf-style log through the device's hook (no-op without one). */
void clt_device_log(const clt_device *dev, int level, const char *fmt, ...) CLT_PRINTF(3, 4);

/* The kernel `kernel` of embedded program `program`, built on first use. The
 * kernel object stays owned by the device. */
clt_status clt_device_kernel(clt_device *dev, const char *program, const char *kernel,
                             cl_kernel *out);

/* Builds `source` for the device through the on-disk cache (program.c). */
clt_status clt_program_build(clt_device *dev, const char *label, const char *source,
                             size_t length, const char *options, cl_program *out);
/* Resolves the cache directory from the environment (program_cache.c). */
clt_status clt_cache_configure(clt_device *dev);

#endif
