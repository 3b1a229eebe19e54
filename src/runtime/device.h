/* The device handle: one context, one in-order queue, its built programs. */
#ifndef CLT_RUNTIME_DEVICE_H
#define CLT_RUNTIME_DEVICE_H

#include <stdatomic.h>

#include "cltrain_diag.h"
#include "core/error.h"
#include "runtime/cl.h"

/* Convolution algorithm choice (CLTRAIN_CONV_ALGO). */
enum { CLT_CONV_ALGO_AUTO, CLT_CONV_ALGO_LANES, CLT_CONV_ALGO_GEMM };
/* The register blocks A x B of the lanes backward-weights kernels
 * (conv_lanes_bwd_weights_<A>_<B> in kernels/conv_lanes.cl): the ones
 * settings may force, and the ones ops/conv_lanes.c chooses among. */
#define CLT_CONV_BWDW_BLOCKS {{5, 5}, {4, 6}, {6, 4}, {5, 4}, {4, 5}, {4, 4}}

/* A device's tuning settings, in plain values: runtime/ reads and checks
 * them, each op interprets its own. Zero is the default everywhere. */
typedef struct clt_device_settings {
    int conv_algo;                /* CLT_CONV_ALGO_*; AUTO: lanes on CPU devices, gemm elsewhere */
    size_t conv_budget;           /* bytes a convolution's work buffer may take (a diagnostic
                                   * that reaches the chunked and fallback paths); 0: the
                                   * device's limits */
    int conv_bwdw_a, conv_bwdw_b; /* forced lanes backward-weights block A x B; 0: per shape */
} clt_device_settings;

typedef struct clt_kernel_slot {
    int program;        /* index into clt_kernel_sources */
    char name[64];
    cl_kernel kernel;
} clt_kernel_slot;

struct clt_device {
    atomic_int refs;          /* the caller's handle + one per net and tensor on it */
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
    clt_device_settings settings;
    unsigned settings_version; /* counts clt_device_set_settings calls (plans check it) */
};

/* A net or tensor keeps its device alive: retain when it takes the device,
 * release when it is destroyed. The last release (clt_device_destroy
 * included) finishes the queue and frees the device. Thread-safe. */
void clt_device_retain(clt_device *dev);
void clt_device_release(clt_device *dev);

/* printf-style log through the device's hook (no-op without one). */
void clt_device_log(const clt_device *dev, int level, const char *fmt, ...) CLT_PRINTF(3, 4);

/* The kernel `kernel` of embedded program `program`, built on first use. The
 * kernel object stays owned by the device. */
clt_status clt_device_kernel(clt_device *dev, const char *program, const char *kernel,
                             cl_kernel *out);

/* Builds `source` for the device through the on-disk cache (program.c). */
clt_status clt_program_build(clt_device *dev, const char *label, const char *source,
                             size_t length, const char *options, cl_program *out);
/* Resolves the cache directory from the environment (program.c). */
clt_status clt_cache_configure(clt_device *dev);

/* The settings CLTRAIN_CONV_ALGO (lanes|gemm), CLTRAIN_CONV_BUDGET (bytes)
 * and CLTRAIN_CONV_BWDW (AxB) give (unset or empty: the default); a bad
 * value is an error naming the variable and the value. clt_device_open
 * calls it, so the environment is read once per device (settings.c). */
clt_status clt_device_settings_from_env(clt_device_settings *s);
/* Checks and installs settings on an open device, for tests and tools in
 * place of the environment. Plans made before it are made again on their
 * next use. Not thread-safe against work on the same device. */
clt_status clt_device_set_settings(clt_device *dev, const clt_device_settings *s);
/* The device's current settings (NULL for a NULL device). */
const clt_device_settings *clt_device_get_settings(const clt_device *dev);

#endif
