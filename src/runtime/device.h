/* The device handle: one context, one in-order queue, its built programs. */
#ifndef CLT_RUNTIME_DEVICE_H
#define CLT_RUNTIME_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>

#include "cltrain_diag.h"
#include "core/error.h"
#include "runtime/cl.h"

/* Kernel tuning (CLTRAIN_TUNE): AUTO measures where the on-disk cache can
 * keep the result (CLTRAIN_TUNE unset); OFF (0) takes the rule-based
 * choice; ON (1) measures even without a cache (every run); AGAIN
 * ("again") as ON, and measures again what the cache keeps (once per
 * device object), replacing it: a choice measured while other load slowed
 * the machine can run its pass slower than the best (bench/README.md). */
enum { CLT_TUNE_AUTO, CLT_TUNE_OFF, CLT_TUNE_ON, CLT_TUNE_AGAIN };

/* A device's tuning settings, in plain values. runtime/ reads, checks and
 * interprets its own; the convolution's (conv_*) it only keeps: their
 * variables, values and checks are the ops' (clt_op_settings_from_env).
 * Zero is the default everywhere. */
#define CLT_PROGRAM_DEFINES_MAX 256

typedef struct clt_device_settings {
    int conv_algo;                /* the convolution's algorithm (ops/conv.h); 0: per device */
    size_t conv_budget;           /* bytes a convolution's work buffer may take (a diagnostic
                                   * that reaches the chunked and fallback paths); 0: the
                                   * device's limits */
    int conv_bwdw_a, conv_bwdw_b; /* a forced backward-weights block A x B (ops/conv_lanes.h);
                                   * 0: per shape */
    int tune;                     /* CLT_TUNE_*: kernel configurations measured at first use */
    int no_fuse;                  /* 1 (CLTRAIN_FUSE=0): nets made on the device keep every
                                   * activation, pooling and residual add a pass of its own
                                   * (src/nn/fuse.c) */
    int no_shared_grads;          /* 1 (CLTRAIN_SHARED_GRADS=0): a trainer copies gradients to
                                   * and from host staging even where the device could share
                                   * them (runtime/svm.h) */
    int tf32;                     /* CLT_TF32_* (CLTRAIN_TF32): TF32 convolutions allowed, off, emulated */
    int conv_winograd;            /* CLT_WINOGRAD_* (CLTRAIN_CONV_WINOGRAD): the tiles winograd's
                                   * tuner may time against the tuned choice (ops/conv_algo.h) */
} clt_device_settings;

/* Winograd's tuner offers F(2x2,3x3), and F(4x4,3x3) for the backward
 * passes (the default, "2"), nothing ("0"), or F(2x2) and F(4x4) for
 * every pass ("4": F(4x4)'s rounding in the forward can flip a ReLU's
 * gate, and took ResNet-18 past test_pytorch.py's bar, so only when
 * asked). */
enum { CLT_WINOGRAD_F2, CLT_WINOGRAD_NONE, CLT_WINOGRAD_F4 };

/* TF32 tensor cores (runtime/tf32_probe.c; kernels/prelude.h, -DTC):
 * CLTRAIN_TF32 (settings.tf32) lets a convolution use them where the
 * device's probe passed (AUTO, the default, as PyTorch's
 * cudnn.allow_tf32), forbids them (OFF, "0": full fp32, as --precision
 * fp32), or runs their OpenCL C twin on any device (EMULATE, "emulate":
 * the tests' path on CPUs, TF32 rounding without tensor cores). */
enum { CLT_TF32_AUTO, CLT_TF32_OFF, CLT_TF32_EMULATE };
/* (clt_device_tf32 and clt_device_compute_capability: cltrain_diag.h) */
/* The -DTC a convolution's TF32 tiles build with under the device's
 * settings: 1 (PTX mma), 2 (emulated), 0 (none: fp32 only). */
int clt_device_tf32_kernels(const clt_device *dev);

/* The flag an owner (a trainer) sets to have the device's work end soon:
 * the kernel tuners stop measuring and keep the rule's choices, unstored.
 * NULL: none. Set before the device is used from other threads. */
void clt_device_set_interrupt(clt_device *dev, const atomic_int *flag);
int clt_device_interrupted(const clt_device *dev);

/* A net or tensor keeps its device alive: retain when it takes the device,
 * release when it is destroyed. The last release (clt_device_destroy
 * included) finishes the queue and frees the device. Thread-safe. */
void clt_device_retain(clt_device *dev);
void clt_device_release(clt_device *dev);

/* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes, read at open (0: not reported). */
size_t clt_device_base_align(const clt_device *dev);
/* Whether the device computes with denormal floats (the host does). */
int clt_device_keeps_denormals(const clt_device *dev);

/* The device's native float vector width as the CPU kernels' vectors
 * take it: 4, 8 or 16 (AVX-512 16, AVX2 8, SSE 4; 8 when the device does
 * not say). */
int clt_device_vector_width(const clt_device *dev);

/* Blocking copies between device buffer buf (bytes from offset) and host
 * memory on the device's queue, which wait for it with clFinish (after
 * the queue's earlier work, as a blocking read or write does). Intel's
 * CPU runtime runs a queue's kernels on the thread waiting in clFinish
 * beside its workers, but not on one blocked in a read or in
 * clWaitForEvents: a thread that waits any other way leaves it one core
 * short (with its default workers on 2 cores, a LeNet training step
 * measured far slower). `what` names the copy in errors. */
clt_status clt_device_read(clt_device *dev, cl_mem buf, size_t offset, size_t bytes, void *host, const char *what);
clt_status clt_device_write(clt_device *dev, cl_mem buf, size_t offset, size_t bytes, const void *host,
                            const char *what);

/* printf-style log through the device's hook (no-op without one). */
void clt_device_log(const clt_device *dev, int level, const char *fmt, ...) CLT_PRINTF(3, 4);

/* The kernel `kernel` of embedded program `program`, built on first use. The
 * kernel object stays owned by the device. `program` is a source's name,
 * optionally followed by a space and build defines ("conv_lanes -DVW=8
 * -DRM=6"): each distinct string is its own program, built (through the
 * cache) once. */
clt_status clt_device_kernel(clt_device *dev, const char *program, const char *kernel,
                             cl_kernel *out);

/* Builds `source` for the device through the on-disk cache (program.c). */
clt_status clt_program_build(clt_device *dev, const char *label, const char *source,
                             size_t length, const char *options, cl_program *out);
/* The program of spec (as clt_device_kernel names it), built if it is
 * not, with its binary stored if it was held. */
clt_status clt_device_keep_program(clt_device *dev, const char *spec);
/* Stores the binary of prog if it was built while cache_hold was set; the
 * other held programs stay held until clt_program_drop_held (at device
 * release). */
void clt_program_keep(clt_device *dev, cl_program prog);
void clt_program_drop_held(clt_device *dev);
/* Resolves the cache directory from the environment (program.c). */
clt_status clt_cache_configure(clt_device *dev);
/* CLT_OK when the cache is on and its directory exists (created if need
 * be) and can be written; else a failure naming the directory and why. */
clt_status clt_cache_check(const clt_device *dev);
/* Reports that storing `what` into the cache failed (the reason in
 * clt_last_error, which it clears): the device's first failure as a
 * warning that says what it costs and how to mend it, later ones at debug
 * level (a cold ResNet-18 run stores dozens of entries). */
void clt_cache_store_failed(clt_device *dev, const char *what);

/* The settings the environment gives: the ops' variables
 * (clt_op_settings_from_env), then CLTRAIN_TUNE (0|1|again), CLTRAIN_FUSE
 * (0|1), CLTRAIN_SHARED_GRADS (0|1) and CLTRAIN_TF32 (0|1|emulate); unset or empty: the default. A bad
 * value is an error naming the variable and the value. clt_device_open
 * calls it, so the environment is read once per device (settings.c). */
clt_status clt_device_settings_from_env(clt_device_settings *s);
/* One environment variable and the parser of its value (called for a set,
 * non-empty value; an error names the variable and the value). */
typedef struct clt_setting_var {
    const char *name;
    clt_status (*parse)(const char *value, clt_device_settings *s);
} clt_setting_var;
/* Parses the variables of vars that are set, in order; the first error
 * ends it. */
clt_status clt_settings_parse_env(const clt_setting_var *vars, size_t n, clt_device_settings *s);
/* The ops' side of the settings, defined in ops/ (ops/conv_algos.c) and
 * called by runtime/ where it reads and replaces a device's settings, so
 * that a bad value is refused when the device opens and by
 * clt_device_set_settings (op: its name, for the message): the fields the
 * ops interpret, from their variables, and their check. */
clt_status clt_op_settings_from_env(clt_device_settings *s);
clt_status clt_op_settings_check(const clt_device_settings *s, const char *op);
/* Checks and installs settings on an open device, for tests and tools in
 * place of the environment. Plans made before it are made again on their
 * next use (a max pooling layer finds its argmax again when they changed
 * since its forward), but a net that fused a pooling into a convolution
 * (src/nn/fuse.c, decided at creation) refuses its passes once the
 * device no longer runs the lanes algorithm, or (after its first layer)
 * once a work-buffer budget is set. Not thread-safe against work on the
 * same device. */
clt_status clt_device_set_settings(clt_device *dev, const clt_device_settings *s);
/* The device's current settings (NULL for a NULL device). */
const clt_device_settings *clt_device_get_settings(const clt_device *dev);
/* Counts clt_device_set_settings calls: a plan made under other settings
 * is made again. */
unsigned clt_device_settings_version(const clt_device *dev);

#endif
