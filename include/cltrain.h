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
 * - Room to grow: every struct the library fills (results such as
 *   clt_device_info, and the configs a *_default() call sets) ends in a
 *   member `reserved` (64 bytes or more when the struct was made) that the
 *   library sets to zero. A later version adds fields inside it, as an
 *   anonymous union of `reserved` and a struct of the new fields, whose 0
 *   means what their absence meant. So within one soname a struct keeps its
 *   size, alignment and field offsets, and arrays of it their stride
 *   (tools/abi-check holds the library to it). Callers never write
 *   `reserved`: clt_*_create refuses a config whose reserved bytes (past
 *   any fields laid over them) are not zero. Results reserve uint64_t
 *   words, which keep them 8-byte aligned for any field type.
 * - Versions: cltrain_version.h (included below) gives the version this
 *   header belongs to; clt_version() the version of the library loaded.
 *   The ABI and the soname rule are in README.md ("The library's ABI").
 */
#ifndef CLTRAIN_H
#define CLTRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain_version.h"

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

/* Version of the library loaded at run time, e.g. "0.8.0"; the numbers
 * through the out-pointers (any may be NULL). CLTRAIN_VERSION_STRING and
 * CLTRAIN_VERSION_MAJOR/MINOR/PATCH (cltrain_version.h) are those of the
 * header compiled against: they may be older than clt_version()'s within
 * one soname. CLTRAIN_VERSION_AT_LEAST(0, 9, 0) tests the header's at
 * compile time. */
CLT_API const char *clt_version(int *major, int *minor, int *patch);

/* Log hook: level 0 = debug, 1 = info, 2 = warning. The library calls it from
 * any of its threads; the hook must be thread-safe. */
typedef void (*clt_log_fn)(void *user, int level, const char *message);

/* Frees memory the library allocated and handed to the caller. */
CLT_API void clt_free(void *p);

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

/* The most devices one trainer, collective or CLTRAIN_DEVICES list takes. */
#define CLT_MAX_DEVICES 64

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
    uint64_t reserved[32];      /* zero: room for later fields (see the top of cltrain.h) */
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

typedef struct clt_device clt_device;

/* Opens visible device `index`: one context and one in-order command queue
 * owned by the handle. Devices of different platforms mix freely. The
 * CLTRAIN_CONV_* variables are read here, once; a bad value refuses the
 * device (CLT_ERR_INVALID_ARG naming the variable). */
CLT_API clt_status clt_device_open(int index, clt_device **out);
/* Gives up the handle clt_device_open returned. Nets and tensors hold a
 * reference to their device (counted atomically, so any thread may destroy
 * them): the device stays alive, and they stay usable, until the last of
 * them is destroyed; then its queue is finished and everything freed. Use
 * no call on the handle itself after this. NULL-safe. */
CLT_API void clt_device_destroy(clt_device *dev);
CLT_API const clt_device_info *clt_device_get_info(const clt_device *dev);
CLT_API void clt_device_set_log(clt_device *dev, clt_log_fn fn, void *user);
/* Builds (or loads from the on-disk cache) the kernel programs most nets
 * use (convolution sums, losses) and, on devices other than CPUs, warms
 * up CLBlast. Optional: the other programs (those of layers only some nets
 * have, and those built per kernel configuration) are built at first use,
 * as are these without it. Not thread-safe across devices: CLBlast 1.5's
 * compile cache breaks when two threads compile at once, so warm devices
 * up one at a time (and do not create trainers from two threads at
 * once). A CPU device, whose layers call CLBlast only where a
 * convolution's work buffer does not fit, compiles it at its first GEMM;
 * a trainer serialises that between its devices. */
CLT_API clt_status clt_device_warmup(clt_device *dev);
/* Waits until all work queued on the device has finished. */
CLT_API clt_status clt_device_finish(clt_device *dev);

/* ------------------------------------------------------------------ */
/* Tensors                                                             */
/* ------------------------------------------------------------------ */

/* A dense row-major (NCHW) tensor in one device's memory. Every dimension is
 * at least 1: zero-size tensors are refused with CLT_ERR_SHAPE. Calls on
 * tensors of one device must come from one thread at a time (they share the
 * device's queue); calls return once the work is queued unless they move data
 * to the host. */
#define CLT_MAX_DIMS 6
typedef enum clt_dtype { CLT_DTYPE_FLOAT32 = 0, CLT_DTYPE_INT32 = 1 } clt_dtype;
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
 * `argmax` (CLT_DTYPE_INT32, shape of y) receives the winning input index and is
 * needed by the backward; it is ignored (may be NULL) for average. */
CLT_API clt_status clt_pool2d_forward(clt_pool_kind kind, const clt_tensor *x, int k, int stride,
                                      clt_tensor *y, clt_tensor *argmax);
CLT_API clt_status clt_pool2d_backward(clt_pool_kind kind, const clt_tensor *dy,
                                       const clt_tensor *argmax, int k, int stride, clt_tensor *dx);
/* Global average pooling: (n,c,h,w) -> (n,c). */
CLT_API clt_status clt_gap_forward(const clt_tensor *x, clt_tensor *y);
CLT_API clt_status clt_gap_backward(const clt_tensor *dy, clt_tensor *dx);

typedef enum clt_activation { CLT_ACT_RELU = 0, CLT_ACT_SIGMOID = 1, CLT_ACT_TANH = 2 } clt_activation;
/* y = f(x) elementwise (y may be x); backward uses the forward output y. */
CLT_API clt_status clt_activation_forward(clt_activation f, const clt_tensor *x, clt_tensor *y);
CLT_API clt_status clt_activation_backward(clt_activation f, const clt_tensor *y,
                                           const clt_tensor *dy, clt_tensor *dx);

/* Dense: x (n, in), w (out, in), b (out) or NULL: y = x w^T + b. */
CLT_API clt_status clt_dense_forward(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                                     clt_tensor *y);
CLT_API clt_status clt_dense_backward(const clt_tensor *x, const clt_tensor *w, const clt_tensor *dy,
                                      clt_tensor *dx, clt_tensor *dw, clt_tensor *db);

/* Softmax cross-entropy over logits (n, classes) and CLT_DTYPE_INT32 labels (n):
 * the summed loss over the batch and the number of correct predictions (a
 * label outside [0, classes) is an error). Either output may be NULL. */
CLT_API clt_status clt_softmax_xent_forward(const clt_tensor *logits, const clt_tensor *labels,
                                            double *loss_sum, int64_t *correct);
/* dlogits = scale * (softmax(logits) - onehot(labels)). */
CLT_API clt_status clt_softmax_xent_backward(const clt_tensor *logits, const clt_tensor *labels,
                                             float scale, clt_tensor *dlogits);

/* SGD as PyTorch: g' = g + wd*w; v = m*v + g' (v = g' when m = 0, and
 * `velocity` may then be NULL); w -= lr * v. lr >= 0, 0 <= m < 1 and
 * wd >= 0, as the trainer requires (CLT_ERR_INVALID_ARG otherwise). */
CLT_API clt_status clt_sgd_step(clt_tensor *param, const clt_tensor *grad, clt_tensor *velocity,
                                float lr, float momentum, float weight_decay);

/* Batch norm over the channels of x (n,c,h,w) or the features of x (n,c),
 * as PyTorch's BatchNorm2d / BatchNorm1d (eps 1e-5, momentum 0.1).
 * y = gamma * (x - mean) / sqrt(var + eps) + beta; gamma, beta (c) may be
 * NULL (1 and 0). training: mean and biased variance of the batch over
 * n*h*w values per channel (fewer than 2 is CLT_ERR_INVALID_ARG), and
 * running_mean/running_var (c) become 0.9 * running + 0.1 * (mean, unbiased
 * variance) (both NULL: not tracked). Otherwise the running statistics are
 * used (required). save (2*c: mean, then 1/sqrt(var + eps)) keeps the
 * statistics used for the backward; it may be NULL when no backward follows.
 * y may be x (in place; the backward then lacks its x). Deterministic. */
CLT_API clt_status clt_batchnorm_forward(const clt_tensor *x, const clt_tensor *gamma,
                                         const clt_tensor *beta, clt_tensor *running_mean,
                                         clt_tensor *running_var, int training, clt_tensor *save,
                                         clt_tensor *y);
/* Backward with the forward's x and save; training as in the forward:
 * training includes the statistics' dependence on x, otherwise they are
 * constants (dx = gamma * dy / sqrt(running_var + eps)). dgamma = sum dy *
 * xhat, dbeta = sum dy over the batch. dx may be dy. */
CLT_API clt_status clt_batchnorm_backward(const clt_tensor *x, const clt_tensor *dy,
                                          const clt_tensor *gamma, const clt_tensor *save,
                                          int training, clt_tensor *dx, clt_tensor *dgamma,
                                          clt_tensor *dbeta);
/* Residual add: y = a + b, all of one shape (y may be a or b). Its backward
 * is the identity: da = db = dy. */
CLT_API clt_status clt_add(const clt_tensor *a, const clt_tensor *b, clt_tensor *y);

/* ------------------------------------------------------------------ */
/* Nets on one device                                                  */
/* ------------------------------------------------------------------ */

/* A net is a model spec instantiated on one device. Spec grammar: a builtin
 * name ("lenet", "lenet-max", "resnet18") or comma-separated layers
 * [NAME=]kind[:arg[:arg]]:
 *   conv:C:K[:S[:P]]  maxpool:K[:S]  avgpool:K[:S]  relu  sigmoid  tanh
 *   flatten  dense:N  gap  bn  res:C[:S]
 * (bn: batch norm over channels, or features after flatten; res: a ResNet
 * basic block, two 3x3 convolutions with batch norm, identity or 1x1
 * projection shortcut.) The last layer's outputs are the class scores fed to
 * softmax cross-entropy. Parameters are named as PyTorch's nn.Sequential
 * state_dict: "<layer index>.weight", "<layer index>.bias", batch norm adds
 * "running_mean" and "running_var" (state without gradient); NAME= replaces
 * the index; a res block's parts are NAME.conv1, .bn1, .conv2, .bn2,
 * .shortcut. One net must be used by one thread at a time. */
typedef struct clt_net clt_net;

typedef enum clt_init {
    CLT_INIT_NORMAL = 0, /* weights N(0, 0.01^2), biases 0 (the tutorials' default) */
    CLT_INIT_XAVIER = 1  /* weights Xavier uniform, biases 0 */
} clt_init;

/* Parses and shape-checks the spec for inputs (channels, height, width)
 * before any device work: a bad spec gives CLT_ERR_SPEC naming the layer
 * index, its token and the shapes. Parameters start at zero: call
 * clt_net_init or load them. */
CLT_API clt_status clt_net_create(clt_device *dev, const char *spec, int channels, int height,
                                  int width, clt_net **out);
CLT_API void clt_net_destroy(clt_net *net);
/* Checks a spec without a device; `summary` (may be NULL) receives one line
 * per layer with its output shape and parameter count. */
CLT_API clt_status clt_spec_check(const char *spec, int channels, int height, int width,
                                  char *summary, size_t summary_cap);
CLT_API clt_device *clt_net_device(const clt_net *net);
CLT_API int clt_net_classes(const clt_net *net);
/* The expanded spec (builtin names replaced by their layers). */
CLT_API const char *clt_net_spec(const clt_net *net);
CLT_API clt_status clt_net_init(clt_net *net, uint64_t seed, clt_init scheme);

/* Forward pass on n host images (n x C x H x W floats); the class scores
 * stay on the device (clt_net_output reads them). training = 1 uses batch
 * statistics in batch norm and updates its running statistics; 0 is
 * inference (evaluation). */
CLT_API clt_status clt_net_forward(clt_net *net, const float *images, int n, int training);
CLT_API clt_status clt_net_output(const clt_net *net, float *scores, int64_t count);
/* Loss of the last forward against n int32 labels, then backward: every
 * parameter gradient becomes scale x (sum over the batch); scale = 1/n
 * gives the mean gradient of the mean loss. loss_sum (summed over samples)
 * and correct may be NULL. */
CLT_API clt_status clt_net_backward(clt_net *net, const int32_t *labels, float scale,
                                    double *loss_sum, int64_t *correct);
/* Loss and correct count of the last forward, without backward. */
CLT_API clt_status clt_net_loss(clt_net *net, const int32_t *labels, double *loss_sum,
                                int64_t *correct);
/* SGD step with the current gradients (PyTorch semantics, see clt_sgd_step). */
CLT_API clt_status clt_net_sgd_step(clt_net *net, float lr, float momentum, float weight_decay);

/* Parameters by index (0 .. count-1, in spec order) or by name. */
CLT_API int clt_net_param_count(const clt_net *net);
/* name points into the net; shape gets ndim sizes (a parameter has at
 * most 4 dimensions; room for CLT_MAX_DIMS keeps callers future-proof). */
CLT_API clt_status clt_net_param_info(const clt_net *net, int i, const char **name, int *ndim,
                                      int64_t shape[CLT_MAX_DIMS]);
CLT_API clt_status clt_net_param_get(const clt_net *net, const char *name, float *host,
                                     int64_t count);
CLT_API clt_status clt_net_param_set(clt_net *net, const char *name, const float *host,
                                     int64_t count);
CLT_API clt_status clt_net_grad_get(const clt_net *net, const char *name, float *host,
                                    int64_t count);

typedef struct clt_dataset clt_dataset; /* see Datasets below */
/* Mean loss and accuracy over the whole dataset (file order, batches of
 * batch_size). */
CLT_API clt_status clt_net_evaluate(clt_net *net, const clt_dataset *ds, int batch_size,
                                    double *mean_loss, double *accuracy);

/* ------------------------------------------------------------------ */
/* NumPy .npz archives and a net's parameters                          */
/* ------------------------------------------------------------------ */

/* An .npz is NumPy's format for several arrays (numpy.savez,
 * numpy.savez_compressed, numpy.load): a zip archive of .npy files, one per
 * array, named "<key>.npy". cltrain reads and writes float32 arrays
 * (little-endian '<f4', C order) and byte arrays ('|u1'; '|S<n>' and
 * little-endian integers such as labels, '|i1', '<i2' .. '<u8', are read
 * too) for metadata. Keys may contain '/' ("momentum/0.weight"). */
typedef struct clt_npz clt_npz;

/* One array of an archive. Every pointer points into the archive and stays
 * valid until clt_npz_destroy. */
typedef struct clt_npz_entry {
    const char *name;      /* key without ".npy" */
    const char *dtype;     /* as in the file: "<f4", "|u1", "|S12" */
    int is_bytes;          /* 0: float32 array (data); 1: bytes or integers (bytes only; dtype says) */
    int ndim;              /* 0 (a scalar, shape ()) .. CLT_MAX_DIMS */
    int64_t shape[CLT_MAX_DIMS];
    int64_t numel;         /* product of the shape; 1 for a scalar */
    const float *data;     /* numel floats in host byte order; NULL for bytes */
    const uint8_t *bytes;  /* the raw array data, nbytes long (also for floats) */
    size_t nbytes;         /* numel x item size */
    uint64_t reserved[8];  /* zero: room for later fields (see the top of cltrain.h) */
} clt_npz_entry;

/* Reads a whole .npz into memory and checks everything before it returns:
 * the zip structure against the real file size (zip64 and data descriptors
 * are understood; encryption, multi-disk archives and compression methods
 * other than stored and deflate are refused), each entry's exact inflated
 * size and CRC-32, unique names ending in ".npy", and each .npy header
 * (version 1.0, 2.0 or 3.0; descr '<f4', '|S<n>' or a little-endian
 * integer: '|u1', '|i1', '<i2' .. '<u8'; fortran_order
 * False; shape of at most CLT_MAX_DIMS dimensions whose size is exactly the
 * data's). Errors: CLT_ERR_NOT_FOUND for a missing file, CLT_ERR_IO when it
 * cannot be read, CLT_ERR_FORMAT for bad content, CLT_ERR_NO_MEMORY; the
 * detail names the file, the entry and the problem. *out belongs to the
 * caller (NULL on failure). Thread-safe. A read archive is immutable: its
 * accessors may be called from any number of threads at once. */
CLT_API clt_status clt_npz_read(const char *path, clt_npz **out);
CLT_API void clt_npz_destroy(clt_npz *npz); /* NULL-safe */
/* Number of entries (0 for NULL). */
CLT_API int clt_npz_count(const clt_npz *npz);
/* Entry i (0 .. count-1, in the archive's order). CLT_ERR_INVALID_ARG when
 * i is out of range. */
CLT_API clt_status clt_npz_entry_at(const clt_npz *npz, int i, clt_npz_entry *entry);
/* The entry with key `name` (without ".npy"); CLT_ERR_NOT_FOUND naming the
 * file and the key when there is none. */
CLT_API clt_status clt_npz_find(const clt_npz *npz, const char *name, clt_npz_entry *entry);

/* Writes an .npz atomically: entries go to a temporary file beside `path`
 * as they are added; clt_npz_writer_commit flushes, fsyncs and renames it
 * over `path`. Until then, and whenever anything fails, a file already at
 * `path` stays untouched (also when the process is killed). After any failed
 * call the writer only refuses further work: destroy it. The output is
 * deterministic (fixed timestamps) and plain zip (an archive of 4 GiB or
 * more, or of more than 65534 entries, is refused with CLT_ERR_UNSUPPORTED).
 * One writer must not be used by two threads at once. */
typedef struct clt_npz_writer clt_npz_writer;
/* compress: 0 stores entries as numpy.savez does; 1 deflates them as
 * numpy.savez_compressed does (an entry deflate cannot shrink is stored).
 * *out belongs to the caller. */
CLT_API clt_status clt_npz_writer_create(const char *path, int compress, clt_npz_writer **out);
/* Adds a float32 array of ndim (0 .. CLT_MAX_DIMS) dimensions, each >= 0,
 * from numel floats in host order (the data is written before the call
 * returns). A key must be non-empty, without control characters, at most
 * 1024 bytes and not already in the archive (CLT_ERR_INVALID_ARG). */
CLT_API clt_status clt_npz_writer_add_f32(clt_npz_writer *w, const char *name, int ndim,
                                          const int64_t *shape, const float *data);
/* Adds n bytes as a 1-D '|u1' array (numpy: bytes(z[name]) gives them back). */
CLT_API clt_status clt_npz_writer_add_bytes(clt_npz_writer *w, const char *name,
                                            const void *data, size_t n);
/* Finishes the archive and moves it into place. Called once. */
CLT_API clt_status clt_npz_writer_commit(clt_npz_writer *w);
/* Frees the writer; without a successful commit the temporary file is
 * removed and `path` is left as it was. NULL-safe. */
CLT_API void clt_npz_writer_destroy(clt_npz_writer *w);

/* Writes every parameter of the net under its state_dict name ("0.weight"),
 * float32 in C order, stored, and the net's own keys ("__cltrain__/spec",
 * ...: see clt_net_open) so that the file opens as a net: numpy.load reads
 * it, and PyTorch takes {k: torch.from_numpy(v) for k, v in
 * numpy.load(path).items() if not k.startswith('__cltrain__/')} in
 * load_state_dict of the matching nn.Sequential. Atomic as the writer. */
CLT_API clt_status clt_net_save_npz(const clt_net *net, const char *path);
/* Loads every parameter by name from an .npz (as written above or by
 * numpy.savez / numpy.savez_compressed from a state_dict). Every parameter
 * must be present as float32 of its exact shape, and nothing else may be
 * there: a missing key, an extra key or a shape mismatch is CLT_ERR_FORMAT
 * naming the parameter and both shapes; NaN or an infinity is CLT_ERR_FORMAT
 * naming the parameter and the first bad index. Each entry's header is
 * checked before its data is inflated, so a hostile file costs no more
 * memory than the net's parameters. Everything is checked before any
 * parameter is written, so on error the net is unchanged. Read errors as in
 * clt_npz_read. Momentum buffers are not touched. The file's own keys
 * (clt_net_open) are allowed; its normalisation and class names, where it
 * has them, replace the net's. A checkpoint is refused (clt_net_open reads
 * one). */
CLT_API clt_status clt_net_load_npz(clt_net *net, const char *path);

/* ------------------------------------------------------------------ */
/* Datasets                                                            */
/* ------------------------------------------------------------------ */

/* One IDX file (the MNIST format). Only data type 0x08 (unsigned byte) is
 * read; `size` is the product of the dimensions in bytes. */
#define CLT_IDX_MAX_DIMS 8
typedef struct clt_idx {
    int ndim;
    int64_t dims[CLT_IDX_MAX_DIMS];
    uint8_t *data; /* owned; freed by clt_idx_destroy */
    size_t size;
    uint64_t reserved[8]; /* zero: room for later fields (see the top of cltrain.h) */
} clt_idx;

/* Reads an IDX file, plain or gzip-compressed (told apart by the gzip magic
 * bytes 1f 8b, not by the file name). Every header field is checked against
 * the real size of the data before it is trusted; payloads above 4 GiB are
 * refused. Bad input gives CLT_ERR_FORMAT (a missing file CLT_ERR_NOT_FOUND,
 * other read failures CLT_ERR_IO) with clt_last_error() naming the file and
 * the problem; *out is then NULL. *out belongs to the caller
 * (clt_idx_destroy). Thread-safe. */
CLT_API clt_status clt_idx_read(const char *path, clt_idx **out);
/* Frees the data and the struct. NULL-safe. */
CLT_API void clt_idx_destroy(clt_idx *idx);

/* A labelled image dataset in host memory, read-only once created: its
 * accessors may be called from any number of threads at once. */
typedef struct clt_dataset clt_dataset;

/* Which of a dataset's two files: the training set or the test set. */
typedef enum clt_subset { CLT_SUBSET_TRAIN = 0, CLT_SUBSET_TEST = 1 } clt_subset;

/* Loads one split of a dataset. name_or_dir is
 * - "fashion-mnist": looks in $CLTRAIN_DATA/fashion-mnist, then
 *   $CLTRAIN_DATA (when CLTRAIN_DATA is set and names a directory), then
 *   /usr/share/datasets/fashion-mnist (the Debian package
 *   dataset-fashion-mnist);
 * - "mnist": the same with mnist and /usr/share/datasets/mnist;
 * - any other string: a directory holding the four standard files
 *   train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
 *   t10k-labels-idx1-ubyte, each plain or with a .gz suffix (the plain one is
 *   taken when both exist), or CIFAR-10's or CIFAR-100's binary files
 *   (clt_dataset_from_cifar, fine labels). Write "./mnist" for a directory
 *   named like a dataset;
 * - NULL: the directory $CLTRAIN_DATA when set, else "fashion-mnist".
 * The first place holding both files of the split is used. limit > 0 keeps
 * only the first `limit` samples, 0 keeps all; negative is
 * CLT_ERR_INVALID_ARG. Labels must be below 10. A missing dataset is
 * CLT_ERR_NOT_FOUND with a detail that lists every place looked at and how
 * to install the data. *out belongs to the caller. Thread-safe. */
CLT_API clt_status clt_dataset_load(const char *name_or_dir, clt_subset subset, int64_t limit,
                                    clt_dataset **out);
/* Builds a dataset from an idx3 image file (N x rows x cols; or idx4,
 * N x rows x cols x channels, each pixel's channels together) and an idx1
 * label file (N), plain or gzip. Every label must be below `classes` (> 0).
 * limit as in clt_dataset_load. *out belongs to the caller. Thread-safe. */
CLT_API clt_status clt_dataset_from_idx(const char *images_path, const char *labels_path,
                                        int classes, int64_t limit, clt_dataset **out);
/* NULL-safe. No batcher of the dataset may outlive it. */
CLT_API void clt_dataset_destroy(clt_dataset *ds);
/* Number of samples (after the limit); 0 for NULL. */
CLT_API int64_t clt_dataset_size(const clt_dataset *ds);
/* Shape of one sample: 1, rows, cols for idx3 images. Any pointer may be
 * NULL. */
CLT_API void clt_dataset_shape(const clt_dataset *ds, int *channels, int *height, int *width);
/* Number of classes (10 for MNIST and Fashion-MNIST). */
CLT_API int clt_dataset_classes(const clt_dataset *ds);
/* Samples first .. first+n-1 as float32 NCHW (n x C x H x W floats): x/255
 * for 8-bit sources (IDX, CIFAR, 8-bit arrays), the values themselves for
 * float sources; their labels into `labels` (n int32). Either output may be
 * NULL, not both. The dataset keeps its samples as the source has them
 * (bytes stay bytes), so this converts; an image folder decoded lazily
 * decodes the files here (CLT_ERR_FORMAT or _IO naming a file that went
 * bad since the load). Thread-safe. */
CLT_API clt_status clt_dataset_read(const clt_dataset *ds, int64_t first, int64_t n, float *images,
                                    int32_t *labels);
/* The name of class `label` where the source names its classes (an image
 * folder's class folders), else NULL. */
CLT_API const char *clt_dataset_class_name(const clt_dataset *ds, int label);
/* Files an image folder held that are not .png, .jpg or .jpeg. */
CLT_API int64_t clt_dataset_skipped_files(const clt_dataset *ds);
/* 1 where the dataset decodes its image files as samples are read (an image
 * folder too large for memory, or CLTRAIN_DATA_DECODE=lazy), else 0. */
CLT_API int clt_dataset_decodes_files(const clt_dataset *ds);
/* All labels, N int32 class indices. Owned by the dataset. */
CLT_API const int32_t *clt_dataset_labels(const clt_dataset *ds);

/* Samples already in memory: n images of channels x height x width, as
 * 8-bit values (read as x/255, like IDX files) or float32 (used as they
 * are, each finite), laid out NCHW (each sample's channels one after the
 * other) or NHWC (each pixel's channels together, as NumPy arrays of
 * images usually are), with one int32 label per sample in 0 .. classes-1.
 * The reserved bytes must be zero (clt_dataset_desc_default). CLT_LAYOUT_AUTO
 * is for NumPy files, whose shape tells (clt_dataset_from_npz). */
typedef enum clt_pixel_type { CLT_PIXELS_U8 = 0, CLT_PIXELS_F32 = 1 } clt_pixel_type;
typedef enum clt_layout { CLT_LAYOUT_AUTO = 0, CLT_LAYOUT_NCHW = 1, CLT_LAYOUT_NHWC = 2 } clt_layout;
typedef struct clt_dataset_desc {
    int64_t n;
    int channels, height, width;
    clt_pixel_type type;
    clt_layout layout;
    const void *images;     /* n x channels x height x width values of `type` */
    const int32_t *labels;  /* n labels */
    int classes;            /* > 0 */
    unsigned char reserved[64];
} clt_dataset_desc;
/* Zeroes *desc, then NCHW and 8-bit. */
CLT_API void clt_dataset_desc_default(clt_dataset_desc *desc);
/* Builds a dataset from the arrays of *desc. The library COPIES them (into
 * NCHW, the 8-bit values staying bytes) and checks every label and every
 * float before it returns: the caller may free or reuse its arrays at once.
 * Errors: CLT_ERR_INVALID_ARG naming the field or the first bad sample.
 * *out belongs to the caller. Thread-safe. */
CLT_API clt_status clt_dataset_from_memory(const clt_dataset_desc *desc, clt_dataset **out);

/* clt_dataset_load with more choices: where NumPy images keep their
 * channels, CIFAR-100's labels, and what a source of one split gives when
 * its test split is asked for. Start from clt_load_options_default; the
 * reserved bytes must be zero. */
typedef struct clt_load_options {
    int64_t limit;       /* as in clt_dataset_load; 0: all */
    clt_layout layout;   /* NumPy images (clt_dataset_from_npz); default CLT_LAYOUT_AUTO */
    int coarse;          /* CIFAR-100: 1 for its 20 coarse classes, 0 for the 100 fine ones */
    int any_split;       /* 1: a source of one split gives it for either subset (a test set given on
                          * its own); 0: CLT_SUBSET_TEST of such a source gives *out NULL */
    int channels;        /* image folders: 1 or 3; 0: the most any image has */
    int image_size;      /* image folders: > 0 resizes each image's shorter side to this (bilinear) and
                          * keeps the centre image_size x image_size; 0: all must be the same size */
    unsigned char reserved[64];
} clt_load_options;
CLT_API void clt_load_options_default(clt_load_options *opt);
/* As clt_dataset_load, and also: an .npz file (clt_dataset_from_npz); a
 * directory holding train.npz and test.npz, or train_images.npy,
 * train_labels.npy, test_images.npy and test_labels.npy; a folder of
 * images as torchvision's ImageFolder takes it, ROOT/<class>/ with .png,
 * .jpg and .jpeg files at any depth (links followed), or ROOT/train with
 * ROOT/test (or ROOT/val) holding such class folders. Class index = the
 * place of the class folder's name in byte order; files of other types are
 * skipped (clt_dataset_skipped_files counts them). Images are decoded as
 * the dataset is made, each file read once; where the decoded images would
 * take more than half of the memory available (MemAvailable), only the
 * file list and each header are read, and the samples are decoded when
 * read (batches, evaluation, statistics: bit for bit the same);
 * CLTRAIN_DATA_DECODE=eager|lazy|auto forces either (a bad value is
 * refused). Rules: grey and palette PNGs, RGB, alpha (dropped) and
 * 16-bit samples (their high byte); grey becomes RGB by copying, RGB grey
 * by Pillow's luma, (299 R + 587 G + 114 B) / 1000; a corrupt or truncated
 * file is refused naming it; images of different sizes are refused naming
 * two unless image_size is set. A source with no
 * test split (an .npz of one pair of arrays, a directory without the test
 * files) gives CLT_OK and *out NULL for CLT_SUBSET_TEST unless
 * opt->any_split. opt NULL: the defaults. */
CLT_API clt_status clt_dataset_load_with(const char *name_or_dir, clt_subset subset, const clt_load_options *opt,
                                         clt_dataset **out);

/* NumPy arrays: images uint8 ('|u1', read as x/255) or float32 ('<f4'),
 * shaped (N, H, W) (one channel), (N, H, W, C) or (N, C, H, W); labels
 * of any little-endian integer type, shaped (N,), each in 0..65535; the class
 * count is the largest label + 1. `layout` says where a 4-D array's
 * channels are: CLT_LAYOUT_AUTO takes a last axis of 1, 3 or 4 as
 * channels-last (NHWC) and anything else as NCHW. From an .npz:
 * x_train/y_train or x_test/y_test (as Keras' archives hold them) for
 * `subset`; else images/labels or x/y, or the only two arrays (the 1-D
 * integer one is the labels), for either subset. limit as in
 * clt_dataset_load. CLT_ERR_FORMAT names the file, the array and the
 * problem. *out belongs to the caller. Thread-safe. */
CLT_API clt_status clt_dataset_from_npz(const char *path, clt_subset subset, clt_layout layout, int64_t limit,
                                        clt_dataset **out);
/* The same from an images .npy and a labels .npy. */
CLT_API clt_status clt_dataset_from_npy(const char *images_path, const char *labels_path, clt_layout layout,
                                        int64_t limit, clt_dataset **out);

/* Per-channel normalisation of every sample the dataset gives (batches,
 * evaluation, clt_dataset_read): (x - mean[c]) / std[c] in float32, after
 * x/255 for 8-bit data and after a batcher's augmentation. `channels`
 * values each, finite, std > 0; both NULL: none. Set it before batchers
 * or other threads use the dataset. */
CLT_API clt_status clt_dataset_set_normalization(clt_dataset *ds, const float *mean, const float *std);
/* Each channel's mean and (population) standard deviation over every
 * sample and pixel, as read before normalisation (x/255 for 8-bit data),
 * summed in double: what normalisation "auto" takes from a training set. */
CLT_API clt_status clt_dataset_channel_stats(const clt_dataset *ds, double *mean, double *std);
/* A validation set held out of a training set: round(fraction x count)
 * samples of every class, drawn with the library's own PRNG from `seed`
 * (the same on every machine), into *held_out; the rest into *kept; both
 * in the source's order, without its normalisation. fraction in (0, 1);
 * a split that leaves either side empty is refused. */
CLT_API clt_status clt_dataset_holdout(const clt_dataset *ds, double fraction, uint64_t seed, clt_dataset **kept,
                                       clt_dataset **held_out);

/* CIFAR-10 or CIFAR-100 in its binary version, from the directory the
 * archive unpacks to: CIFAR-10's data_batch_1.bin .. data_batch_5.bin
 * (training) and test_batch.bin, records of a label byte then 3072 pixel
 * bytes (1024 red, 1024 green, 1024 blue, rows of 32); CIFAR-100's
 * train.bin and test.bin, records of a coarse and a fine label byte then
 * the same pixels. fine: CIFAR-100's 100 fine classes (1) or its 20 coarse
 * ones (0); CIFAR-10 ignores it. limit as in clt_dataset_load. A file
 * whose size is not a whole number of records, or a label out of range, is
 * CLT_ERR_FORMAT naming the file and the record; a missing one
 * CLT_ERR_NOT_FOUND. clt_dataset_load recognises these directories too
 * (CIFAR-100 with its fine labels). *out belongs to the caller.
 * Thread-safe. */
CLT_API clt_status clt_dataset_from_cifar(const char *dir, clt_subset subset, int fine, int64_t limit,
                                          clt_dataset **out);
/* The dataset's normalisation (clt_dataset_set_normalization): 1 with its
 * values in mean and std (channels each; either may be NULL), 0 when it
 * has none. */
CLT_API int clt_dataset_normalization(const clt_dataset *ds, float *mean, float *std);

/* ------------------------------------------------------------------ */
/* A net's data, its files, and predictions                            */
/* ------------------------------------------------------------------ */

/* What a net knows of its data, kept in every file it is saved to
 * (clt_net_save_npz, clt_trainer_save_checkpoint with replica 0's), read
 * back by clt_net_load_npz, clt_net_open and clt_trainer_load_checkpoint,
 * and applied by clt_net_predict: the per-channel normalisation its inputs
 * had in training, and its classes' names. A new net has neither.
 * mean and std: the input's channel count of values each, finite, std > 0;
 * both NULL: none. */
CLT_API clt_status clt_net_set_normalization(clt_net *net, const float *mean, const float *std);
/* 1 with the values in mean and std (either may be NULL), 0 for none. */
CLT_API int clt_net_normalization(const clt_net *net, float *mean, float *std);
/* clt_net_classes(net) names, copied, each 1 to 255 bytes without control
 * characters (UTF-8 is kept as it is); NULL: none. */
CLT_API clt_status clt_net_set_class_names(clt_net *net, const char *const *names);
/* Class k's name, or NULL where the net has no names. */
CLT_API const char *clt_net_class_name(const clt_net *net, int k);
/* The shape of one input sample. Any pointer may be NULL. */
CLT_API void clt_net_input_shape(const clt_net *net, int *channels, int *height, int *width);

/* A net from a file that carries its model: one written by
 * clt_net_save_npz (cltrain --export-npz) or a checkpoint
 * (clt_trainer_save_checkpoint, cltrain --save; its optimizer state is not
 * read). Such files hold, beside the state_dict, these keys:
 *   "__cltrain__/spec"       bytes: the expanded model spec
 *   "__cltrain__/input"      float32 (3,): channels, height, width
 *   "__cltrain__/normalize"  float32 (2, channels): means, then stds
 *                            (only where the net has a normalisation)
 *   "__cltrain__/classes"    bytes: the class names, each ended by '\n'
 *                            (only where the net has names)
 *   "__cltrain__/version"    bytes: the cltrain version that wrote it
 * A file without spec and input (a state_dict written by NumPy from
 * PyTorch, say) is CLT_ERR_FORMAT saying so: make the net with
 * clt_net_create and load it with clt_net_load_npz. Every entry is
 * checked as clt_net_load_npz does. *out belongs to the caller. */
CLT_API clt_status clt_net_open(const char *path, clt_device *dev, clt_net **out);

/* Class scores of n samples of the net's input shape, given as 8-bit
 * values (read as x/255, as datasets read them) or float32 (used as they
 * are, each finite), NCHW or NHWC (CLT_LAYOUT_AUTO is NCHW): the net's
 * normalisation applied as in training, then an inference pass (batch
 * norm's running statistics, no dropout), in batches of at most 256
 * samples. out receives n x clt_net_classes(net) floats: the last layer's
 * outputs (probabilities 0) or their softmax (1). A sample whose values
 * are not finite is CLT_ERR_INVALID_ARG naming it. One net must be used by
 * one thread at a time; nets on different devices predict in parallel. */
CLT_API clt_status clt_net_predict(clt_net *net, const void *inputs, clt_pixel_type type, clt_layout layout,
                                   int64_t n, int probabilities, float *out);
/* The k best of `classes` scores, best first (of equal scores the lower
 * index first), into top (k ints); 1 <= k <= classes. */
CLT_API clt_status clt_top_k(const float *scores, int classes, int k, int *top);

/* Writes the net's inference graph as an ONNX model (ONNX Runtime,
 * TensorRT, OpenVINO read it): opset 17, IR version 8, one float32 input
 * "input" of shape (N, C, H, W) with a symbolic batch dimension "N" (the
 * pixels as clt_net_predict takes float32: x/255 for 8-bit images), one
 * output "logits" (N, classes), the class scores before softmax. Where the net
 * carries an input normalisation it comes first, as Sub and Div nodes with
 * per-channel constants of shape (1, C, 1, 1) ("input_mean",
 * "input_std"), not folded into the first layer, so the graph computes
 * what cltrain computes. The layers follow the spec, whatever fusion runs
 * on the device: Conv, BatchNormalization (running statistics), Relu,
 * Sigmoid, Tanh, MaxPool, AveragePool (floor mode, no padding),
 * GlobalAveragePool and Flatten (gap), Flatten, Gemm (transB = 1), Add
 * (residual blocks), dropout as Identity. Parameters are initializers
 * under their state_dict names, read from the device. Metadata
 * (metadata_props): "cltrain_version", "cltrain_spec" (the expanded spec)
 * and, where the net has class names, "class_names" (a JSON list);
 * producer_name "cltrain". Written atomically as clt_net_save_npz.
 * Refused before any work: a net beyond ONNX's 2 GiB, an output path that
 * is not a regular file or lacks its directory, and, in a build without
 * protobuf-c, any net (CLT_ERR_UNSUPPORTED, "built without protobuf-c").
 * Uses the net's device as clt_net_param_get does (one thread per net). */
CLT_API clt_status clt_net_export_onnx(const clt_net *net, const char *path);

/* ------------------------------------------------------------------ */
/* Batch iterator                                                      */
/* ------------------------------------------------------------------ */

/* Iterates minibatches over a dataset, epoch after epoch. The permutation
 * of epoch e depends only on (seed, e), through the library's own PRNG, so
 * it is the same on every machine and any batch can be reached directly
 * (clt_batcher_seek). With prefetch, a background thread copies the next
 * batch while the caller uses the current one. One batcher must not be used
 * by two threads at once; several batchers may share one dataset. */
typedef struct clt_batcher clt_batcher;

typedef struct clt_batcher_config {
    int batch_size; /* > 0 */
    int shuffle;    /* 1: a fresh permutation each epoch from (seed, epoch); 0: file order */
    int drop_last;  /* 1: drop the last partial batch */
    uint64_t seed;
    int prefetch;   /* 1: prepare the next batch on a background thread; 0: on the caller's */
    /* Optional allocator for the batch buffers (images and labels), e.g.
     * pinned or mapped OpenCL host memory; alloc and release are both set or
     * both NULL (NULL: 64-byte aligned host memory). Both are called on the
     * thread of clt_batcher_create / clt_batcher_destroy. alloc returns NULL
     * on failure. */
    void *(*alloc)(void *user, size_t bytes);
    void (*release)(void *user, void *ptr);
    void *alloc_user;
    /* Training-time augmentation, the CIFAR recipe: a random crop of the
     * sample's size out of the sample padded with augment_pad zeros on each
     * side (0: none; 0..1024), then, with augment_flip, a horizontal flip
     * with probability 1/2; before the dataset's normalisation. Each
     * sample's draw depends on (seed, epoch, its index in the dataset)
     * alone: the same for any batch size, device count or resumed run. */
    int augment_pad;
    int augment_flip;
    /* Zero (clt_batcher_config_default sets it). Later versions add fields
     * here, with 0 as their default, so the struct keeps its size. */
    unsigned char reserved[56];
} clt_batcher_config;

/* batch_size 256, shuffle 1, drop_last 0, seed 0, prefetch 1, no allocator.
 * Always start from it: clt_batcher_create refuses a config whose reserved
 * bytes are not zero. */
CLT_API void clt_batcher_config_default(clt_batcher_config *cfg);
/* Creates a batcher positioned at batch 0 of epoch 0. ds must outlive the
 * batcher; the configuration is copied (NULL: the defaults). *out belongs
 * to the caller. */
CLT_API clt_status clt_batcher_create(const clt_dataset *ds, const clt_batcher_config *cfg,
                                      clt_batcher **out);
/* Stops and joins the prefetch thread, releases the buffers. NULL-safe. */
CLT_API void clt_batcher_destroy(clt_batcher *b);
/* ceil(N / batch_size), or floor with drop_last. */
CLT_API int64_t clt_batcher_batches_per_epoch(const clt_batcher *b);

typedef struct clt_batch {
    const float *images;   /* count x C x H x W, owned by the batcher */
    const int32_t *labels; /* count labels, owned by the batcher */
    int count;             /* samples in this batch; 0 marks the end of an epoch */
    int64_t epoch;
    int64_t index;         /* batch index within the epoch */
    uint64_t reserved[8];  /* zero: room for later fields (see the top of cltrain.h) */
} clt_batch;

/* Positions the iterator at batch `index` (0 <= index <= batches per epoch)
 * of epoch `epoch` (>= 0), for resuming: the next clt_batcher_next returns
 * exactly that batch (index == batches per epoch: the end-of-epoch mark). */
CLT_API clt_status clt_batcher_seek(clt_batcher *b, int64_t epoch, int64_t index);
/* Fills *batch with the next batch of the current epoch. After the last
 * batch of an epoch it returns CLT_OK once with batch->count == 0 (images and
 * labels NULL, index == batches per epoch); the following call starts the
 * next epoch (epoch + 1, index 0). The buffers stay valid until the next
 * call of clt_batcher_next, clt_batcher_seek or clt_batcher_destroy. For
 * an image folder decoded batch by batch (clt_dataset_load_with) a file
 * that went missing or corrupt since the load fails the batch (the detail
 * names the file); the batch counts as taken, and a seek back retries it. */
CLT_API clt_status clt_batcher_next(clt_batcher *b, clt_batch *batch);

/* ------------------------------------------------------------------ */
/* Data-parallel training across devices                               */
/* ------------------------------------------------------------------ */

/* A trainer holds one replica of a net per device (any mix of platforms
 * and vendors), initialised once and broadcast. Each step splits the batch
 * into shards, every device computes the gradient sum of its shard, the
 * host sums the devices' gradients bucket by bucket in a fixed device order,
 * divides by the batch size and writes the result back to every device,
 * and every device applies the same optimizer step: the step equals one
 * step of a single device on the whole batch, up to float rounding. Where
 * every device is a CPU sharing the host's memory, each device instead
 * sums the gradients over its share of the parameters and updates every
 * replica there (the same bits); a replica's gradient buffer then keeps
 * its own shard's sum. One thread per device drives its queue. A trainer
 * must be used by one thread at a time. */
typedef struct clt_trainer clt_trainer;

typedef enum clt_split_policy {
    CLT_SPLIT_EQUAL = 0,   /* equal shards */
    CLT_SPLIT_WEIGHTS = 1, /* shards proportional to config.weights */
    CLT_SPLIT_AUTO = 2     /* proportional to measured samples/s, re-measured as it runs; in whole
                            * units of 32 samples (the rest to the fastest device) once every
                            * shard gets 4 units, as the CPU kernels pad a shard to 32 lanes */
} clt_split_policy;

/* The optimizer a trainer applies (PyTorch's semantics and defaults). */
typedef enum clt_optimizer {
    CLT_OPTIMIZER_SGD = 0,  /* torch.optim.SGD: momentum, weight_decay, nesterov */
    CLT_OPTIMIZER_ADAM = 1, /* torch.optim.Adam: betas, eps, weight_decay added to the gradient (L2) */
    CLT_OPTIMIZER_ADAMW = 2 /* torch.optim.AdamW: betas, eps, decoupled decay w -= lr * weight_decay * w */
} clt_optimizer;

/* The arithmetic a trainer's convolutions may use, as PyTorch's
 * torch.backends.cudnn.allow_tf32. */
typedef enum clt_precision {
    CLT_PRECISION_DEFAULT = 0, /* TF32 tensor cores where the device passed its probe at open (NVIDIA,
                                * compute capability 8.0 and later; clt_device_tf32 in cltrain_diag.h):
                                * operands rounded to 10 mantissa bits, sums in fp32; else fp32.
                                * CLTRAIN_TF32=0 in the environment makes it fp32 */
    CLT_PRECISION_FP32 = 1     /* full fp32 everywhere (--precision fp32) */
} clt_precision;

typedef struct clt_trainer_config {
    const char *spec;          /* model spec or builtin name */
    int channels, height, width;
    const int *devices;        /* device indices; NULL: the default selection */
    int n_devices;
    clt_split_policy split;
    const float *weights;      /* n_devices relative weights for CLT_SPLIT_WEIGHTS */
    float lr, momentum, weight_decay;
    uint64_t seed;
    clt_init init;
    size_t bucket_bytes;       /* gradient bucket size (default 25 MB) */
    int check_every;           /* > 0: compare parameter checksums of all replicas every N steps */
    int sync_bn;               /* 1: batch norm uses the statistics of the whole batch over all
                                * devices (as one device would); 0: each device its own shard's,
                                * running statistics averaged over devices after each step */
    clt_log_fn log;            /* optional log hook for every device */
    void *log_user;
    clt_optimizer optimizer;   /* default SGD (lr, momentum, weight_decay as above) */
    int nesterov;              /* SGD: 1 for Nesterov momentum (needs momentum > 0) */
    float beta1, beta2, eps;   /* Adam, AdamW (defaults 0.9, 0.999, 1e-8); the library's default
                                * weight_decay is 0 for AdamW too (PyTorch's is 0.01) */
    float clip_grad_norm;      /* > 0: scale the reduced gradient to at most this global L2 norm */
    float label_smoothing;     /* softmax cross-entropy with label smoothing E in [0, 1) */
    /* NULL: this process alone. Else a pointer to an MPI_Comm (kept opaque
     * so this header needs no mpi.h) whose every process creates a trainer
     * with the same settings, MPI initialised with MPI_THREAD_SERIALIZED
     * or more. The processes' devices form one list in rank order; every
     * step gets the same whole batch on every process, each device runs
     * its shard of it, and one allreduce per gradient bucket joins the
     * processes' sums: N processes train as one with all their devices.
     * Then create, step, evaluate, broadcast_params, load_checkpoint and
     * check_replicas are collective: every process calls them, in the
     * same order. A process that fails must end the job (MPI_Abort): the
     * others would wait for it. */
    void *mpi_comm;
    /* Fields added after the struct was made lie over its reserved bytes,
     * 0 their default, so the struct keeps its size. */
    union {
        /* Zero past the fields (clt_trainer_config_default sets it). */
        unsigned char reserved[64 - sizeof(void *)];
        struct {
            clt_precision precision; /* convolutions' arithmetic; dense layers stay fp32 */
        };
    };
} clt_trainer_config;

/* Defaults: lenet on 1x28x28, default devices, equal split, SGD with lr
 * 0.2, no momentum or weight decay (Adam's betas 0.9, 0.999, eps 1e-8), no
 * clipping or label smoothing, seed 0, normal init, 25 MB buckets,
 * CLT_PRECISION_DEFAULT. Always
 * start from it: clt_trainer_create refuses a config whose reserved bytes
 * are not zero. */
CLT_API void clt_trainer_config_default(clt_trainer_config *cfg);
/* Opens the devices, builds the programs (from the cache when it can),
 * creates and initialises the replicas, starts one worker thread each. */
CLT_API clt_status clt_trainer_create(const clt_trainer_config *cfg, clt_trainer **out);
CLT_API void clt_trainer_destroy(clt_trainer *t);
CLT_API int clt_trainer_device_count(const clt_trainer *t);
/* Replica i (0 .. count-1), e.g. to read or set parameters. Setting
 * parameters on one replica only breaks the replicas' agreement: use
 * clt_trainer_broadcast_params afterwards. */
CLT_API clt_net *clt_trainer_net(clt_trainer *t, int i);
/* Copies replica 0's parameters, optimizer state and running statistics to every
 * other replica. */
CLT_API clt_status clt_trainer_broadcast_params(clt_trainer *t);
/* Writes a checkpoint: an .npz (NumPy reads it) with the state_dict, the
 * optimizer's state (SGD momentum as "momentum/<name>", Adam's as
 * "adam/m/<name>" and "adam/v/<name>") and its step count, the model spec
 * and input shape, and
 * `meta` (caller's text, e.g. JSON with epoch and step; may be NULL).
 * Atomic: a crash or kill during the save leaves the previous file intact. */
CLT_API clt_status clt_trainer_save_checkpoint(clt_trainer *t, const char *path, const char *meta);
/* Loads a checkpoint into every replica. A checkpoint of another model or
 * input shape, a corrupt file, unknown entries or non-finite values give
 * CLT_ERR_FORMAT and change nothing (checked as clt_net_load_npz does). *meta (may be NULL) receives the saved text or NULL; free
 * it with clt_free. */
CLT_API clt_status clt_trainer_load_checkpoint(clt_trainer *t, const char *path, char **meta);
/* One optimizer step on n samples (host memory, NCHW floats and int32
 * labels). loss_sum and correct (may be NULL) are over the whole batch. A
 * failure on any device stops the step on all of them and names the device;
 * the trainer then refuses further steps. */
CLT_API clt_status clt_trainer_step(clt_trainer *t, const float *images, const int32_t *labels,
                                    int n, double *loss_sum, int64_t *correct);
/* Mean loss and accuracy over a dataset, split across the devices. */
CLT_API clt_status clt_trainer_evaluate(clt_trainer *t, const clt_dataset *ds, int batch_size,
                                        double *mean_loss, double *accuracy);
/* The same, and each sample's predicted class (the first of its highest
 * scores, as accuracy counts it) into predicted[i] (clt_dataset_size(ds)
 * int32; NULL: as clt_trainer_evaluate). In one process only: under MPI
 * the other processes' samples are not gathered (CLT_ERR_UNSUPPORTED). */
CLT_API clt_status clt_trainer_evaluate_predicted(clt_trainer *t, const clt_dataset *ds, int batch_size,
                                                  double *mean_loss, double *accuracy, int32_t *predicted);
/* Compares a checksum of every replica's parameters; CLT_ERR_INTERNAL naming
 * the first replica that differs from replica 0. */
CLT_API clt_status clt_trainer_check_replicas(clt_trainer *t);

/* Asks the trainer to finish what it does soon, for a program about to
 * stop: kernel tuning under way (a first step on a device, a new shape)
 * stops measuring and runs the shapes left with the untuned rule's
 * choices, keeping none of them, so the step or evaluation in progress
 * ends normally and its results stay valid. It holds for the trainer's
 * life. Safe from any thread and from a signal handler: it only sets an
 * atomic flag. NULL-safe. */
CLT_API void clt_trainer_interrupt(clt_trainer *t);

/* Whether steps of batch_size samples, and evaluations in batches of
 * batch_size on each device, fit in memory: an estimate of what
 * the replicas will allocate for their shards (parameters, gradients,
 * optimizer state, activations, work buffers) against each device's
 * global memory and, for CPU devices, what the process's limits
 * (RLIMIT_AS, RLIMIT_DATA) leave. CLT_ERR_DEVICE_MEMORY names the device,
 * the estimate, the limit and the samples that fit. clt_trainer_step and
 * clt_trainer_evaluate check it before they allocate for a larger batch
 * than before; call it to refuse a run before its first step. */
CLT_API clt_status clt_trainer_check_memory(clt_trainer *t, int batch_size);

/* Sets the learning rate of the following steps (a schedule calls it
 * before each step); the other settings stay. CLT_ERR_INVALID_ARG for a
 * negative or non-finite lr. */
CLT_API clt_status clt_trainer_set_lr(clt_trainer *t, float lr);
/* Optimizer steps made so far, counting those of a loaded checkpoint (Adam's
 * bias correction uses it). */
CLT_API int64_t clt_trainer_optimizer_steps(const clt_trainer *t);

/* Per-device figures of the last step (times in seconds). */
typedef struct clt_trainer_device_stats {
    int device;          /* cltrain device index */
    int shard;           /* samples in the last step */
    float weight;        /* current split weight (fraction of the batch) */
    double compute_s;    /* upload, forward and backward until the device finished its backward */
    double transfer_s;   /* device-to-host and host-to-device time of the gradients */
    double reduce_s;     /* host summation done by this device's thread */
    double idle_s;       /* waiting for the other devices */
    double step_s;       /* the whole step as this device saw it */
    double samples_per_s;/* smoothed throughput measured for the split */
    double hidden_s;     /* the part of transfer_s + reduce_s done while the device still ran backward */
    double exposed_s;    /* step_s - compute_s: transfers, sums, write-back, optimizer after backward */
    uint64_t reserved[8];/* zero: room for later fields (see the top of cltrain.h) */
} clt_trainer_device_stats;
/* Writes min(cap, device count) entries. */
CLT_API clt_status clt_trainer_stats(const clt_trainer *t, clt_trainer_device_stats *stats, int cap);

/* The tutorials' building blocks as plain calls. */
/* Shard sizes for a batch of n over k devices by weights (NULL: equal):
 * the sizes sum to n; largest remainders get the leftover samples. */
CLT_API clt_status clt_split_sizes(int n, int k, const float *weights, int *sizes);
/* Splits n samples (host floats, each of shape sample_shape) over k
 * devices as clt_split_sizes does: shards[i] becomes a new tensor of shape
 * (shard size, sample_shape...) on devices[i], or NULL when its shard is
 * empty. The caller destroys the shards. On failure no shard is left. */
CLT_API clt_status clt_split_batch(const float *host, int n, int sample_ndim, const int64_t *sample_shape,
                                   clt_device *const *devices, int k, const float *weights,
                                   clt_tensor **shards);
/* Sums k (at most CLT_MAX_DEVICES) tensors of equal shape on any devices and writes the
 * sum to all of them, through host memory, in fixed device order. */
CLT_API clt_status clt_allreduce_sum(clt_tensor *const *tensors, int k);
/* Copies src to every tensor of dst (any devices). */
CLT_API clt_status clt_broadcast(const clt_tensor *src, clt_tensor *const *dst, int k);

#ifdef __cplusplus
}
#endif
#endif /* CLTRAIN_H */
