/*
 * cltrain: data-parallel training of convolutional networks on every OpenCL
 * device of a machine, any vendor, mixed in one run.
 *
 * Conventions of this header
 * - Every fallible call returns clt_status: CLT_OK (0) or a negative code.
 *   clt_status_str() names a code; clt_last_error() gives the detail of the
 *   last failure on the calling thread (OpenCL error name, build log, file and
 *   offset of bad input).
 * - Handles are opaque. Every *_create / *_open has a *_destroy that accepts
 *   NULL. Objects returned through an out-pointer belong to the caller.
 * - The library never prints, never exits; it logs only through a log hook
 *   the caller sets on a handle.
 * - Thread safety: calls on distinct handles may run concurrently on distinct
 *   threads. One handle must not be used by two threads at once unless its
 *   section says otherwise. Discovery calls (clt_device_count and friends)
 *   are thread-safe.
 */
#ifndef CLTRAIN_H
#define CLTRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CLTRAIN_BUILDING) && defined(__GNUC__)
#define CLT_API __attribute__((visibility("default")))
#else
#define CLT_API
#endif

/* ------------------------------------------------------------------ */
/* Status codes                                                        */
/* ------------------------------------------------------------------ */

/* X(name, value, message) */
#define CLT_STATUS_MAP(X)                                                      \
    X(OK, 0, "success")                                                        \
    X(ERR_INVALID_ARG, -1, "invalid argument")                                 \
    X(ERR_NO_MEMORY, -2, "out of host memory")                                 \
    X(ERR_OPENCL, -3, "OpenCL call failed")                                    \
    X(ERR_NO_DEVICE, -4, "no OpenCL device found")                             \
    X(ERR_DEVICE_INDEX, -5, "device index out of range")                       \
    X(ERR_BUILD, -6, "OpenCL program build failed")                            \
    X(ERR_IO, -7, "file input/output failed")                                  \
    X(ERR_FORMAT, -8, "malformed input file")                                  \
    X(ERR_SHAPE, -9, "tensor shape mismatch")                                  \
    X(ERR_SPEC, -10, "invalid model spec")                                     \
    X(ERR_NOT_FOUND, -11, "not found")                                         \
    X(ERR_DEVICE_MEMORY, -12, "out of device memory")                          \
    X(ERR_NUMERIC, -13, "non-finite value")                                    \
    X(ERR_UNSUPPORTED, -14, "not supported")                                   \
    X(ERR_CANCELLED, -15, "cancelled")                                         \
    X(ERR_DEVICE_LOST, -16, "device lost")                                     \
    X(ERR_INTERNAL, -17, "internal error")

typedef enum clt_status {
#define CLT_X_ENUM(name, value, msg) CLT_##name = value,
    CLT_STATUS_MAP(CLT_X_ENUM)
#undef CLT_X_ENUM
} clt_status;

/* Short English message for a status code ("unknown status" for others). */
CLT_API const char *clt_status_str(clt_status s);
/* Symbolic name of a status code ("CLT_ERR_IO"), "CLT_UNKNOWN" for others. */
CLT_API const char *clt_status_name(clt_status s);
/* Detail of the last failure on this thread ("" if none). Valid until the
 * next failing cltrain call on the same thread. */
CLT_API const char *clt_last_error(void);

/* Library version, e.g. "0.1.0"; the numbers through the out-pointers
 * (any may be NULL). */
CLT_API const char *clt_version(int *major, int *minor, int *patch);

/* Log hook: level 0 = debug, 1 = info, 2 = warning. The library calls it from
 * any of its threads; the hook must be thread-safe. */
typedef void (*clt_log_fn)(void *user, int level, const char *message);

/* Frees memory the library allocated and handed to the caller. */
CLT_API void clt_free(void *p);

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

typedef enum clt_device_type {
    CLT_DEVICE_CPU = 1,
    CLT_DEVICE_GPU = 2,
    CLT_DEVICE_ACCELERATOR = 4,
    CLT_DEVICE_OTHER = 8
} clt_device_type;

/* What discovery knows of one device. Strings are NUL-terminated; a value
 * the device does not report is "" (strings) or -1 (numbers). */
typedef struct clt_device_info {
    int index;                /* cltrain's global index (after CLTRAIN_DEVICES) */
    int platform_index;       /* OpenCL platform order */
    int device_in_platform;   /* device order within the platform */
    clt_device_type type;
    char name[256];
    char vendor[256];
    char platform[256];         /* platform name */
    char platform_version[256]; /* e.g. "OpenCL 3.0 PoCL 3.1 ..." */
    char driver_version[128];
    char opencl_version[128];   /* CL_DEVICE_VERSION */
    char opencl_c_version[128];
    char pci_bus_id[32];        /* "0000:65:00.0" */
    char uuid[40];              /* 8-4-4-4-12 hex */
    int compute_units;
    int max_clock_mhz;
    int64_t global_mem_bytes;
    int64_t free_mem_bytes;     /* -1 unless the vendor reports it */
    int64_t local_mem_bytes;
    int64_t max_alloc_bytes;
    int64_t max_work_group_size;
} clt_device_info;

/* Number of visible devices: every device of every platform, in platform
 * order then device order, restricted and renumbered by CLTRAIN_DEVICES
 * ("0,2") when set. 0 with CLT_OK when no platform or device exists. A
 * malformed CLTRAIN_DEVICES is an error (CLT_ERR_INVALID_ARG). */
CLT_API clt_status clt_device_count(int *count);
/* Information on visible device `index`. */
CLT_API clt_status clt_device_query(int index, clt_device_info *info);
/* The default selection: all GPUs and accelerators, or all CPU devices when
 * there is none. Writes up to `cap` indices, sets *n to the number chosen. */
CLT_API clt_status clt_device_default(int *indices, int cap, int *n);
/* Name of the ICD loader and its version ("" when it does not say). */
CLT_API clt_status clt_icd_loader_info(char *name, size_t name_cap, char *version,
                                       size_t version_cap);

typedef struct clt_device clt_device;

/* Opens visible device `index`: one context and one in-order command queue
 * owned by the handle. Devices of different platforms mix freely. */
CLT_API clt_status clt_device_open(int index, clt_device **out);
CLT_API void clt_device_destroy(clt_device *dev);
CLT_API const clt_device_info *clt_device_get_info(const clt_device *dev);
CLT_API void clt_device_set_log(clt_device *dev, clt_log_fn fn, void *user);
/* Builds (or loads from the on-disk cache) every kernel program and warms
 * up CLBlast on this device. Optional: programs are otherwise built on first
 * use. Call from one thread per device before worker threads start. */
CLT_API clt_status clt_device_warmup(clt_device *dev);
/* Waits until all work queued on the device has finished. */
CLT_API clt_status clt_device_finish(clt_device *dev);

/* Program cache counters of a device handle, for diagnostics and tests. */
typedef struct clt_program_stats {
    int built;        /* compiled from source */
    int cache_hits;   /* loaded from the on-disk cache */
    int cache_stores; /* written to the on-disk cache */
    int cache_rejects;/* cache entries found corrupt or stale and rebuilt */
} clt_program_stats;
CLT_API void clt_device_program_stats(const clt_device *dev, clt_program_stats *st);

/* Builds the embedded kernel program `name` (a kernels/NAME.cl file) on the
 * device, through the cache; mostly for tests and kernel development. */
CLT_API clt_status clt_device_build_program(clt_device *dev, const char *name);
/* Builds arbitrary OpenCL C source through the same path (cache included);
 * a failure gives CLT_ERR_BUILD with the build log in clt_last_error(). */
CLT_API clt_status clt_device_build_source(clt_device *dev, const char *source,
                                           const char *options);

/* ------------------------------------------------------------------ */
/* Tensors                                                             */
/* ------------------------------------------------------------------ */

/* A dense row-major (NCHW) tensor in one device's memory. Every dimension is
 * at least 1: zero-size tensors are refused with CLT_ERR_SHAPE. Calls on
 * tensors of one device must come from one thread at a time (they share the
 * device's queue); calls return once the work is queued unless they move data
 * to the host. */
#define CLT_MAX_DIMS 6
typedef enum clt_dtype { CLT_FLOAT32 = 0, CLT_INT32 = 1 } clt_dtype;
typedef struct clt_tensor clt_tensor;

/* A tensor of `ndim` dimensions filled with zeros. */
CLT_API clt_status clt_tensor_create(clt_device *dev, clt_dtype dtype, int ndim,
                                     const int64_t *shape, clt_tensor **out);
CLT_API void clt_tensor_destroy(clt_tensor *t);
CLT_API clt_device *clt_tensor_device(const clt_tensor *t);
CLT_API clt_dtype clt_tensor_dtype(const clt_tensor *t);
CLT_API int clt_tensor_ndim(const clt_tensor *t);
/* Size of dimension i (negative i counts from the end); 0 if out of range. */
CLT_API int64_t clt_tensor_dim(const clt_tensor *t, int i);
CLT_API int64_t clt_tensor_numel(const clt_tensor *t);
/* Changes the shape keeping the element count (no data moves). */
CLT_API clt_status clt_tensor_reshape(clt_tensor *t, int ndim, const int64_t *shape);
/* Host to device and back; `count` must equal the element count and the
 * host data must be of the tensor's dtype (float or int32_t). Download waits. */
CLT_API clt_status clt_tensor_upload(clt_tensor *t, const void *host, int64_t count);
CLT_API clt_status clt_tensor_download(const clt_tensor *t, void *host, int64_t count);
CLT_API clt_status clt_tensor_fill(clt_tensor *t, float value);
/* Copies between any two tensors of equal shape and dtype, on the same or
 * different devices, platforms and vendors (through the host if needed). */
CLT_API clt_status clt_tensor_copy(clt_tensor *dst, const clt_tensor *src);

/* Parameter initialisation on the host from a counter-based generator, so
 * every device and vendor gets bit-identical values for a seed. */
CLT_API clt_status clt_tensor_init_normal(clt_tensor *t, uint64_t seed, float mean, float std);
/* Xavier (Glorot) uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)). */
CLT_API clt_status clt_tensor_init_xavier(clt_tensor *t, uint64_t seed, int64_t fan_in,
                                          int64_t fan_out, float gain);

/* ------------------------------------------------------------------ */
/* Operations on tensors (the from-scratch path of the tutorials)      */
/* ------------------------------------------------------------------ */

/* All tensors of one call live on one device. Gradients are SUMS over the
 * batch (callers scale), and gradient outputs are overwritten, not
 * accumulated. NULL gradient outputs are skipped. */

/* y[n,co,oh,ow] = b[co] + sum x[n,ci,oh*s-p+i,ow*s-p+j] w[co,ci,i,j]
 * (cross-correlation, zero padding); oh = (h + 2p - k) / s + 1. b may be NULL. */
CLT_API clt_status clt_conv2d_forward(const clt_tensor *x, const clt_tensor *w,
                                      const clt_tensor *b, int stride, int pad, clt_tensor *y);
CLT_API clt_status clt_conv2d_backward(const clt_tensor *x, const clt_tensor *w,
                                       const clt_tensor *dy, int stride, int pad,
                                       clt_tensor *dx, clt_tensor *dw, clt_tensor *db);

typedef enum clt_pool_kind { CLT_POOL_MAX = 0, CLT_POOL_AVG = 1 } clt_pool_kind;
/* Floor-mode pooling, no padding; average divides by k*k. For max pooling
 * `argmax` (CLT_INT32, shape of y) receives the winning input index and is
 * needed by the backward; it is ignored (may be NULL) for average. */
CLT_API clt_status clt_pool2d_forward(clt_pool_kind kind, const clt_tensor *x, int k, int stride,
                                      clt_tensor *y, clt_tensor *argmax);
CLT_API clt_status clt_pool2d_backward(clt_pool_kind kind, const clt_tensor *dy,
                                       const clt_tensor *argmax, int k, int stride, clt_tensor *dx);
/* Global average pooling: (n,c,h,w) -> (n,c). */
CLT_API clt_status clt_gap_forward(const clt_tensor *x, clt_tensor *y);
CLT_API clt_status clt_gap_backward(const clt_tensor *dy, clt_tensor *dx);

typedef enum clt_activation { CLT_RELU = 0, CLT_SIGMOID = 1, CLT_TANH = 2 } clt_activation;
/* y = f(x) elementwise (y may be x); backward uses the forward output y. */
CLT_API clt_status clt_activation_forward(clt_activation f, const clt_tensor *x, clt_tensor *y);
CLT_API clt_status clt_activation_backward(clt_activation f, const clt_tensor *y,
                                           const clt_tensor *dy, clt_tensor *dx);

/* Dense: x (n, in), w (out, in), b (out) or NULL: y = x w^T + b. */
CLT_API clt_status clt_dense_forward(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                                     clt_tensor *y);
CLT_API clt_status clt_dense_backward(const clt_tensor *x, const clt_tensor *w, const clt_tensor *dy,
                                      clt_tensor *dx, clt_tensor *dw, clt_tensor *db);

/* Softmax cross-entropy over logits (n, classes) and CLT_INT32 labels (n):
 * the summed loss over the batch and the number of correct predictions (a
 * label outside [0, classes) is an error). Either output may be NULL. */
CLT_API clt_status clt_softmax_xent_forward(const clt_tensor *logits, const clt_tensor *labels,
                                            double *loss_sum, int64_t *correct);
/* dlogits = scale * (softmax(logits) - onehot(labels)). */
CLT_API clt_status clt_softmax_xent_backward(const clt_tensor *logits, const clt_tensor *labels,
                                             float scale, clt_tensor *dlogits);

/* SGD as PyTorch: g' = g + wd*w; v = m*v + g' (v = g' when m = 0, and
 * `velocity` may then be NULL); w -= lr * v. */
CLT_API clt_status clt_sgd_step(clt_tensor *param, const clt_tensor *grad, clt_tensor *velocity,
                                float lr, float momentum, float weight_decay);

#ifdef __cplusplus
}
#endif
#endif /* CLTRAIN_H */
