#include "runtime/device.h"
#include "runtime/device_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/atomic_file.h"
#include "runtime/discovery.h"
#include "runtime/gemm.h"
#include "runtime/kernel_sources.h"
#include "runtime/tf32_probe.h"
#include "runtime/tune_cache.h"

void clt_device_log(const clt_device *dev, int level, const char *fmt, ...)
{
    if (!dev || !dev->log) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dev->log(dev->log_user, level, msg);
}

clt_status clt_device_open(int index, clt_device **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_open: out is NULL");
    *out = NULL;
    clt_found_device f;
    CLT_TRY(clt_discover_one(index, &f));

    clt_device *dev = calloc(1, sizeof *dev);
    if (!dev) return clt_fail(CLT_ERR_NO_MEMORY, "opening device %d", index);
    atomic_init(&dev->refs, 1);
    dev->info.index = index;
    dev->platform = f.platform;
    dev->id = f.device;
    clt_status s = clt_device_info_fill(&f, &dev->info);
    if (s == CLT_OK) s = clt_cache_configure(dev);
    if (s == CLT_OK) s = clt_device_settings_from_env(&dev->settings);
    cl_uint width = 0;
    if (s == CLT_OK && clGetDeviceInfo(dev->id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof width, &width, NULL) ==
                           CL_SUCCESS)
        dev->native_float_width = (int)width;
    cl_uint align_bits = 0;
    if (s == CLT_OK && clGetDeviceInfo(dev->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL) ==
                           CL_SUCCESS)
        dev->base_align = align_bits / 8;
    if (s != CLT_OK) {
        clt_device_destroy(dev);
        return s;
    }
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)f.platform, 0};
    dev->ctx = clCreateContext(props, 1, &f.device, NULL, NULL, &err);
    if (!dev->ctx) {
        clt_cl_fail(err, "clCreateContext");
        clt_status e = clt_fail_context(CLT_ERR_OPENCL, "device %d (%s)", index, dev->info.name);
        clt_device_destroy(dev); /* frees dev: the message is made first */
        return e;
    }
    dev->queue = clCreateCommandQueue(dev->ctx, f.device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!dev->queue) {
        clt_status e = clt_fail_context(clt_cl_fail(err, "clCreateCommandQueue"), "device %d (%s)", index,
                                        dev->info.name);
        clt_device_destroy(dev);
        return e;
    }
    clt_tf32_probe(dev);
    *out = dev;
    return CLT_OK;
}

void clt_device_destroy(clt_device *dev) { clt_device_release(dev); }

void clt_device_set_interrupt(clt_device *dev, const atomic_int *flag) { dev->interrupt = flag; }

int clt_device_interrupted(const clt_device *dev) { return dev->interrupt && atomic_load(dev->interrupt); }

void clt_device_retain(clt_device *dev)
{
    if (dev) atomic_fetch_add_explicit(&dev->refs, 1, memory_order_relaxed);
}

void clt_device_release(clt_device *dev)
{
    /* acq_rel: every holder's last use happens before the free. */
    if (!dev || atomic_fetch_sub_explicit(&dev->refs, 1, memory_order_acq_rel) != 1) return;
    if (dev->queue) clFinish(dev->queue);
    if (dev->scratch) clReleaseMemObject(dev->scratch);
    for (int i = 0; i < dev->n_kernels; i++) clReleaseKernel(dev->kernels[i].kernel);
    free(dev->kernels);
    clt_program_drop_held(dev);
    for (int i = 0; i < dev->n_variants; i++) clReleaseProgram(dev->variants[i].program);
    clt_tune_free(dev);
    free(dev->variants);
    if (dev->queue) clReleaseCommandQueue(dev->queue);
    if (dev->ctx) clReleaseContext(dev->ctx);
    free(dev);
}

const clt_device_info *clt_device_get_info(const clt_device *dev) { return dev ? &dev->info : NULL; }

void clt_device_set_log(clt_device *dev, clt_log_fn fn, void *user)
{
    if (!dev) return;
    dev->log = fn;
    dev->log_user = user;
    if (fn && !dev->tf32 && !dev->tf32_logged) { /* the probe ran before there was a hook */
        dev->tf32_logged = 1;
        clt_device_log(dev, 0, "device %d: no TF32: %s", dev->info.index, dev->tf32_why);
    }
}

void clt_device_program_stats(const clt_device *dev, clt_program_stats *st)
{
    if (!st) return;
    memset(st, 0, sizeof *st);
    if (dev) *st = dev->stats;
}

size_t clt_device_base_align(const clt_device *dev) { return dev->base_align; }

int clt_device_keeps_denormals(const clt_device *dev)
{
    cl_device_fp_config fp = 0;
    return clGetDeviceInfo(dev->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS &&
           (fp & CL_FP_DENORM);
}

clt_status clt_device_finish(clt_device *dev)
{
    if (!dev) return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_finish: device is NULL");
    cl_int err = clFinish(dev->queue);
    if (err != CL_SUCCESS) {
        clt_cl_fail(err, "clFinish");
        return clt_fail_context(err == CL_OUT_OF_RESOURCES ? CLT_ERR_DEVICE_LOST : CLT_ERR_OPENCL,
                                "device %d (%s)", dev->info.index, dev->info.name);
    }
    return CLT_OK;
}

/* A copy enqueued without blocking (a read into to, or a write from
 * from), then clFinish (clt_device_read says why); the copy's own status
 * names a failure better than the wait's. */
static clt_status copy_and_finish(clt_device *dev, cl_mem buf, size_t offset, size_t bytes, int read, void *to,
                                  const void *from, const char *what)
{
    if (!dev || !buf || !(read ? to : from)) return clt_fail(CLT_ERR_INVALID_ARG, "%s: NULL argument", what);
    cl_event ev = NULL;
    cl_int err = read ? clEnqueueReadBuffer(dev->queue, buf, CL_FALSE, offset, bytes, to, 0, NULL, &ev)
                      : clEnqueueWriteBuffer(dev->queue, buf, CL_FALSE, offset, bytes, from, 0, NULL, &ev);
    if (err != CL_SUCCESS) return clt_cl_fail(err, what);
    err = clFinish(dev->queue);
    if (err != CL_SUCCESS) clWaitForEvents(1, &ev); /* the host memory is the caller's again only then */
    cl_int st = CL_COMPLETE;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) == CL_SUCCESS && st < 0)
        err = st;
    clReleaseEvent(ev);
    return err == CL_SUCCESS ? CLT_OK : clt_cl_fail(err, what);
}

clt_status clt_device_read(clt_device *dev, cl_mem buf, size_t offset, size_t bytes, void *host, const char *what)
{
    return copy_and_finish(dev, buf, offset, bytes, 1, host, NULL, what);
}

clt_status clt_device_write(clt_device *dev, cl_mem buf, size_t offset, size_t bytes, const void *host,
                            const char *what)
{
    return copy_and_finish(dev, buf, offset, bytes, 0, NULL, host, what);
}

static int program_index(const char *name, size_t len)
{
    for (int i = 0; i < clt_kernel_source_count; i++)
        if (strlen(clt_kernel_sources[i].name) == len && strncmp(clt_kernel_sources[i].name, name, len) == 0)
            return i;
    return -1;
}

/* Division and sqrt correctly rounded where the device can (OpenCL lets
 * them be 2.5 and 3 ulp off otherwise, and NVIDIA's are): PyTorch's are
 * IEEE, and the optimizers' tests compare bit for bit with a C reference. */
static const char *program_options(const clt_device *dev)
{
    cl_device_fp_config fp = 0;
    if (clGetDeviceInfo(dev->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS &&
        (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT))
        return "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt";
    return "-cl-std=CL1.2";
}

/* Builds source p with `defines` appended to the options. Kernel
 * development: CLTRAIN_KERNEL_DIR/NAME.cl replaces the embedded source (the
 * cache key follows the source, so edits rebuild). */
static clt_status build_variant(clt_device *dev, int p, const char *defines, cl_program *out)
{
    const clt_kernel_source *k = &clt_kernel_sources[p];
    char options[256];
    if (snprintf(options, sizeof options, "%s%s%s", program_options(dev), defines[0] ? " " : "", defines) >=
        (int)sizeof options)
        return clt_fail(CLT_ERR_INTERNAL, "program %s: build defines too long", k->name);
    const char *dir = getenv("CLTRAIN_KERNEL_DIR");
    if (!dir || !dir[0]) return clt_program_build(dev, k->name, k->source, k->length, options, out);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s.cl", dir, k->name) >= (int)sizeof path)
        return clt_fail(CLT_ERR_INVALID_ARG, "CLTRAIN_KERNEL_DIR=\"%s\": path too long", dir);
    unsigned char *src;
    size_t n;
    clt_status s = clt_read_file(path, 0, &src, &n);
    if (s != CLT_OK) return clt_fail_context(s, "CLTRAIN_KERNEL_DIR");
    char *whole = malloc(clt_kernel_prelude_length + n + 1); /* as embedded: the prelude first */
    if (!whole) {
        free(src);
        return clt_fail(CLT_ERR_NO_MEMORY, "CLTRAIN_KERNEL_DIR: %s (%zu bytes)", path, n);
    }
    memcpy(whole, clt_kernel_prelude, clt_kernel_prelude_length);
    memcpy(whole + clt_kernel_prelude_length, src, n);
    whole[clt_kernel_prelude_length + n] = 0;
    free(src);
    s = clt_program_build(dev, path, whole, clt_kernel_prelude_length + n, options, out);
    free(whole);
    return s;
}

/* The variant index of program spec "name[ defines]", built on first use. */
static clt_status ensure_variant(clt_device *dev, const char *spec, int *index)
{
    const char *sp = strchr(spec, ' ');
    size_t name_len = sp ? (size_t)(sp - spec) : strlen(spec);
    const char *defines = sp ? sp + 1 : "";
    int p = program_index(spec, name_len);
    if (p < 0) return clt_fail(CLT_ERR_NOT_FOUND, "no embedded kernel program named \"%.*s\"", (int)name_len, spec);
    for (int i = 0; i < dev->n_variants; i++) {
        if (dev->variants[i].source == p && strcmp(dev->variants[i].defines, defines) == 0) {
            *index = i;
            return CLT_OK;
        }
    }
    if (strlen(defines) >= CLT_PROGRAM_DEFINES_MAX)
        return clt_fail(CLT_ERR_INTERNAL, "program %s: build defines \"%s\" too long", spec, defines);
    CLT_TRY(clt_grow((void **)&dev->variants, dev->n_variants, &dev->cap_variants, sizeof *dev->variants, 32,
                     "program table"));
    clt_program_variant *v = &dev->variants[dev->n_variants];
    CLT_TRY(build_variant(dev, p, defines, &v->program));
    v->source = p;
    snprintf(v->defines, sizeof v->defines, "%s", defines);
    *index = dev->n_variants++;
    return CLT_OK;
}

clt_status clt_device_build_program(clt_device *dev, const char *name)
{
    if (!dev || !name) return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_build_program: NULL argument");
    int v;
    return ensure_variant(dev, name, &v);
}

clt_status clt_device_keep_program(clt_device *dev, const char *spec)
{
    int v;
    CLT_TRY(ensure_variant(dev, spec, &v));
    clt_program_keep(dev, dev->variants[v].program);
    return CLT_OK;
}

clt_status clt_device_build_source(clt_device *dev, const char *source, const char *options)
{
    if (!dev || !source) return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_build_source: NULL argument");
    cl_program prog;
    CLT_TRY(clt_program_build(dev, "user source", source, strlen(source),
                              options ? options : "", &prog));
    clReleaseProgram(prog);
    return CLT_OK;
}

static int variant_is(const clt_device *dev, int v, const char *spec)
{
    const clt_program_variant *pv = &dev->variants[v];
    const char *name = clt_kernel_sources[pv->source].name;
    size_t n = strlen(name);
    if (strncmp(spec, name, n) != 0) return 0;
    if (spec[n] == 0) return pv->defines[0] == 0;
    return spec[n] == ' ' && strcmp(spec + n + 1, pv->defines) == 0;
}

clt_status clt_device_kernel(clt_device *dev, const char *program, const char *kernel, cl_kernel *out)
{
    for (int i = 0; i < dev->n_kernels; i++) {
        if (strcmp(dev->kernels[i].name, kernel) == 0 && variant_is(dev, dev->kernels[i].variant, program)) {
            *out = dev->kernels[i].kernel;
            return CLT_OK;
        }
    }
    if (strlen(kernel) >= sizeof dev->kernels[0].name)
        return clt_fail(CLT_ERR_INTERNAL, "kernel name \"%s\" too long", kernel);
    int v;
    CLT_TRY(ensure_variant(dev, program, &v));
    CLT_TRY(clt_grow((void **)&dev->kernels, dev->n_kernels, &dev->cap_kernels, sizeof *dev->kernels, 32,
                     "kernel table"));
    cl_int err;
    cl_kernel k = clCreateKernel(dev->variants[v].program, kernel, &err);
    if (!k) {
        clt_cl_fail(err, "clCreateKernel");
        return clt_fail_context(CLT_ERR_INTERNAL, "kernel %s in program %s on device %d", kernel,
                                program, dev->info.index);
    }
    clt_kernel_slot *slot = &dev->kernels[dev->n_kernels++];
    slot->variant = v;
    snprintf(slot->name, sizeof slot->name, "%s", kernel);
    slot->kernel = k;
    *out = k;
    return CLT_OK;
}

clt_status clt_device_warmup(clt_device *dev)
{
    if (!dev) return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_warmup: device is NULL");
    clt_status s = CLT_OK;
    int v;
    for (int p = 0; p < clt_kernel_source_count && s == CLT_OK; p++)
        if (!clt_kernel_sources[p].on_demand) s = ensure_variant(dev, clt_kernel_sources[p].name, &v);
    /* CLBlast on CPU devices serves only a convolution whose lanes work
     * buffer does not fit (or a forced algorithm); compiling it for them
     * was a large part of a cold start on PoCL. They compile it at their
     * first GEMM (runtime/gemm.h). */
    if (s == CLT_OK && dev->info.type != CLT_DEVICE_CPU) s = clt_gemm_warmup(dev);
    if (s != CLT_OK) return clt_fail_context(s, "device %d (%s)", dev->info.index, dev->info.name);
    return CLT_OK;
}

int clt_device_vector_width(const clt_device *dev)
{
    int w = dev->native_float_width ? dev->native_float_width : 8;
    return w >= 16 ? 16 : w >= 8 ? 8 : 4;
}
