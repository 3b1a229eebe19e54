/*
 * cltrain diagnostics: calls for tools, tests and kernel development, kept
 * out of cltrain.h so the everyday API stays small. Same conventions as
 * cltrain.h (status codes, clt_last_error, NULL-safe destroys). These calls
 * may change between minor versions more freely than cltrain.h's.
 */
#ifndef CLTRAIN_DIAG_H
#define CLTRAIN_DIAG_H

#include "cltrain.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Releases what CLBlast caches for every device of the process (its
 * programs), while the OpenCL runtime is still whole: call it once no
 * device is in use, before exit. CLBlast's own cache destructor runs late
 * in exit, after some runtimes have freed their state (Oclgrind's
 * thread-local call stack: a use after free there). Not thread-safe
 * against GEMMs on any device. */
CLT_API void clt_release_shared_caches(void);

/* Name of the ICD loader and its version ("" when it does not say). */
CLT_API clt_status clt_icd_loader_info(char *name, size_t name_cap, char *version,
                                       size_t version_cap);

/* Why no device is visible, for tools to print when clt_device_count gives
 * 0: one line per OpenCL platform that lists no device (its name and
 * OpenCL's answer, and for PoCL a kernel cache directory it cannot create,
 * with the variable that moves it), "no OpenCL platform" and how to
 * install a driver when the ICD loader found none, or CLTRAIN_DEVICES
 * hiding the devices there are.
 * Truncated to cap; "" when nothing is known. */
CLT_API clt_status clt_no_device_reason(char *why, size_t cap);

/* 1 where the device may run TF32 tensor-core convolutions: its probe at
 * open passed (NVIDIA's OpenCL, compute capability 8.0 or more, the PTX
 * program built, and its product matched the host's TF32 product); 0
 * otherwise, and for NULL. The reason for a 0 goes to the log hook once,
 * at debug level, when clt_device_set_log installs one. */
CLT_API int clt_device_tf32(const clt_device *dev);
/* NVIDIA's compute capability as major * 10 + minor (90 for an H100); 0
 * where the device does not report one (other vendors), and for NULL. */
CLT_API int clt_device_compute_capability(const clt_device *dev);

/* Program cache counters of a device handle. */
typedef struct clt_program_stats {
    int built;        /* compiled from source */
    int cache_hits;   /* loaded from the on-disk cache */
    int cache_stores; /* written to the on-disk cache */
    int cache_rejects;/* cache entries found corrupt or stale and rebuilt */
    uint64_t reserved[8]; /* zero: room for later fields (see the top of cltrain.h) */
} clt_program_stats;
CLT_API void clt_device_program_stats(const clt_device *dev, clt_program_stats *st);

/* Builds the embedded kernel program `name` (a kernels/NAME.cl file) on the
 * device, through the cache. */
CLT_API clt_status clt_device_build_program(clt_device *dev, const char *name);
/* Builds arbitrary OpenCL C source through the same path (cache included);
 * a failure gives CLT_ERR_BUILD with the build log in clt_last_error(). */
CLT_API clt_status clt_device_build_source(clt_device *dev, const char *source,
                                           const char *options);

/* Combines one slice of a gradient bucket from k devices:
 * out[i] = scale * (in[0][i] + ... + in[k-1][i]) for i < count, summing in
 * device order. Called concurrently, from the trainer's worker threads, for
 * disjoint slices. */
typedef clt_status (*clt_reduce_fn)(void *user, const float *const *in, int k, float *out,
                                    size_t count, float scale);
/* Starts (on != 0) or stops recording a trace of the trainer's steps: per
 * device its compute queue (layers by pass, optimizer), its transfer queue
 * (bucket reads and write-backs) and its host thread (bucket sums and
 * write-backs), device times on the host clock. Between steps only. */
CLT_API clt_status clt_trainer_trace(clt_trainer *t, int on);
/* Writes the trace recorded so far as Chrome trace-event JSON (Perfetto,
 * chrome://tracing open it), atomically. */
CLT_API clt_status clt_trainer_write_trace(const clt_trainer *t, const char *path);

/* Replaces the trainer's local host sum (fn NULL: back to it), e.g. to add a
 * cross-machine stage. Call between steps. */
CLT_API clt_status clt_trainer_set_reduce(clt_trainer *t, clt_reduce_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* CLTRAIN_DIAG_H */
