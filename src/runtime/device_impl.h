/* The inside of a device handle: runtime/'s alone. Other rooms reach the
 * device through the calls of runtime/device.h, queue.h, launch.h,
 * gemm.h, svm.h and tune_cache.h (tests/unit/test_structure.py fails on
 * an include of this header outside runtime/; white-box tests may). */
#ifndef CLT_RUNTIME_DEVICE_IMPL_H
#define CLT_RUNTIME_DEVICE_IMPL_H

#include "runtime/device.h"

/* A built program: an embedded source with build-time defines (a kernel
 * parameterised per shape or device builds once per distinct set). */
typedef struct clt_program_variant {
    int source;         /* index into clt_kernel_sources */
    char defines[CLT_PROGRAM_DEFINES_MAX];
    cl_program program;
} clt_program_variant;

/* A program whose binary waits for clt_program_keep (built while
 * cache_hold was set). */
typedef struct clt_held_program {
    cl_program program;
    char *key;          /* its cache key */
    char label[64];
} clt_held_program;

typedef struct clt_kernel_slot {
    int variant;        /* index into clt_device.variants */
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
    clt_program_variant *variants; /* built programs, looked up by source and defines */
    int n_variants, cap_variants;
    clt_kernel_slot *kernels; /* created kernels, looked up by name */
    int n_kernels, cap_kernels;
    int cache_enabled;
    char cache_dir[1024];
    /* > 0: programs built now keep their binary out of the on-disk cache
     * until clt_program_keep (the tuner's candidates: fetching a binary
     * makes PoCL compile every kernel of the program once more) */
    int cache_hold;
    clt_held_program *held;
    int n_held, cap_held;
    int gemm_ready;           /* CLBlast warmed up on this device */
    pthread_mutex_t *gemm_lock; /* held while CLBlast compiles for it: one lock shared by the
                                 * devices of a trainer, whose workers may warm CLBlast up late
                                 * (clt_gemm_warmup); NULL: one thread at a time by contract */
    int native_float_width;   /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, read at open (0: not reported) */
    size_t base_align;        /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes, read at open (0: not reported) */
    cl_mem scratch;           /* see clt_device_scratch (launch.h) */
    size_t scratch_bytes;
    clt_device_settings settings;
    unsigned settings_version; /* counts clt_device_set_settings calls (plans check it) */
    struct clt_tune_entry *tune; /* the tuner's choices (runtime/tune_cache.c) */
    int n_tune, cap_tune, tune_loaded;
    int tune_announced;        /* the "tuning" line was logged */
    int cache_warned;          /* a store into the cache failed and was reported (clt_cache_store_failed) */
    int tune_unkept;           /* tuned choices the cache could not keep (clt_tune_store) */
    int tune_cut;              /* an interrupt left shapes unmeasured (clt_device_interrupted) */
    char unkept_why[256];      /* why the first of them was not kept */
    const atomic_int *interrupt; /* set by the owner to end work early (clt_device_interrupted); may be NULL */
    int tf32;                  /* the TF32 probe passed at open (runtime/tf32_probe.c) */
    int cc_major, cc_minor;    /* NVIDIA's compute capability (0: not NVIDIA's, or not reported) */
    char tf32_why[512];        /* why the probe said no, logged once by clt_device_set_log */
    int tf32_logged;
};

#endif
