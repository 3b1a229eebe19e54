#include "tensor/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "runtime/queue.h"

const char *clt_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap)
{
    size_t at = 0;
    at += (size_t)snprintf(buf + at, cap - at, "(");
    for (int i = 0; i < ndim && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (at < cap) snprintf(buf + at, cap - at, ")");
    return buf;
}

static size_t dtype_size(clt_dtype d) { return d == CLT_DTYPE_INT32 ? sizeof(int32_t) : sizeof(float); }

size_t clt_tensor_bytes(const clt_tensor *t) { return (size_t)t->numel * dtype_size(t->dtype); }

static clt_status check_shape(const char *op, int ndim, const int64_t *shape, int64_t *numel)
{
    char buf[160];
    if (ndim < 1 || ndim > CLT_MAX_DIMS)
        return clt_fail(CLT_ERR_SHAPE, "%s: %d dimensions (1..%d allowed)", op, ndim, CLT_MAX_DIMS);
    if (!shape) return clt_fail(CLT_ERR_INVALID_ARG, "%s: shape is NULL", op);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1)
            return clt_fail(CLT_ERR_SHAPE, "%s: shape %s has a dimension < 1 (zero-size tensors are not allowed)",
                            op, clt_shape_str(ndim, shape, buf, sizeof buf));
        if (n > INT64_MAX / 4 / shape[i] || n * shape[i] > (int64_t)1 << 40)
            return clt_fail(CLT_ERR_SHAPE, "%s: shape %s is too large", op,
                            clt_shape_str(ndim, shape, buf, sizeof buf));
        n *= shape[i];
    }
    *numel = n;
    return CLT_OK;
}

clt_status clt_tensor_create(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                             clt_tensor **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_tensor_create: out is NULL");
    *out = NULL;
    if (!dev) return clt_fail(CLT_ERR_INVALID_ARG, "clt_tensor_create: device is NULL");
    if (dtype != CLT_DTYPE_FLOAT32 && dtype != CLT_DTYPE_INT32)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_tensor_create: unknown dtype %d", (int)dtype);
    int64_t numel;
    CLT_TRY(check_shape("clt_tensor_create", ndim, shape, &numel));
    size_t bytes = (size_t)numel * dtype_size(dtype);
    const clt_device_info *in = clt_device_get_info(dev);
    if (in->max_alloc_bytes > 0 && bytes > (size_t)in->max_alloc_bytes) {
        char buf[160];
        return clt_fail(CLT_ERR_DEVICE_MEMORY,
                        "tensor %s needs %zu bytes; device %d (%s) allows at most %lld in one buffer",
                        clt_shape_str(ndim, shape, buf, sizeof buf), bytes, in->index, in->name,
                        (long long)in->max_alloc_bytes);
    }
    clt_tensor *t = calloc(1, sizeof *t);
    if (!t) return clt_fail(CLT_ERR_NO_MEMORY, "tensor handle");
    t->dev = dev;
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->numel = numel;
    clt_status made = clt_buffer_create(dev, CL_MEM_READ_WRITE, bytes, NULL, "clCreateBuffer", &t->buf);
    if (made != CLT_OK) {
        free(t);
        return clt_fail_context(made == CLT_ERR_DEVICE_MEMORY ? made : CLT_ERR_OPENCL,
                                "tensor of %zu bytes on device %d", bytes, in->index);
    }
    clt_device_retain(dev); /* from here on clt_tensor_destroy releases it */
    clt_status s = clt_tensor_fill(t, 0.0f);
    if (s != CLT_OK) {
        clt_tensor_destroy(t);
        return s;
    }
    *out = t;
    return CLT_OK;
}

void clt_tensor_destroy(clt_tensor *t)
{
    if (!t) return;
    clt_buffer_release(t->buf);
    clt_device_release(t->dev);
    free(t);
}

clt_device *clt_tensor_device(const clt_tensor *t) { return t ? t->dev : NULL; }
clt_dtype clt_tensor_dtype(const clt_tensor *t) { return t ? t->dtype : CLT_DTYPE_FLOAT32; }
int clt_tensor_ndim(const clt_tensor *t) { return t ? t->ndim : 0; }
int64_t clt_tensor_numel(const clt_tensor *t) { return t ? t->numel : 0; }

int64_t clt_tensor_dim(const clt_tensor *t, int i)
{
    if (!t) return 0;
    if (i < 0) i += t->ndim;
    return i >= 0 && i < t->ndim ? t->shape[i] : 0;
}

clt_status clt_tensor_reshape(clt_tensor *t, int ndim, const int64_t *shape)
{
    CLT_TRY(clt_tensor_need(t, "clt_tensor_reshape", "tensor"));
    int64_t numel;
    CLT_TRY(check_shape("clt_tensor_reshape", ndim, shape, &numel));
    if (numel != t->numel) {
        char a[160], b[160];
        return clt_fail(CLT_ERR_SHAPE, "clt_tensor_reshape: %s has %lld elements, %s has %lld",
                        clt_shape_str(t->ndim, t->shape, a, sizeof a), (long long)t->numel,
                        clt_shape_str(ndim, shape, b, sizeof b), (long long)numel);
    }
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    return CLT_OK;
}

static clt_status check_count(const clt_tensor *t, const char *op, const void *host, int64_t count)
{
    CLT_TRY(clt_tensor_need(t, op, "tensor"));
    if (!host) return clt_fail(CLT_ERR_INVALID_ARG, "%s: host pointer is NULL", op);
    if (count != t->numel) {
        char a[160];
        return clt_fail(CLT_ERR_SHAPE, "%s: %lld host elements for a tensor %s of %lld", op,
                        (long long)count, clt_shape_str(t->ndim, t->shape, a, sizeof a),
                        (long long)t->numel);
    }
    return CLT_OK;
}

clt_status clt_tensor_upload(clt_tensor *t, const void *host, int64_t count)
{
    CLT_TRY(check_count(t, "clt_tensor_upload", host, count));
    return clt_device_write(t->dev, t->buf, 0, clt_tensor_bytes(t), host, "clt_tensor_upload: clEnqueueWriteBuffer");
}

clt_status clt_tensor_download(const clt_tensor *t, void *host, int64_t count)
{
    CLT_TRY(check_count(t, "clt_tensor_download", host, count));
    return clt_device_read(t->dev, t->buf, 0, clt_tensor_bytes(t), host, "clt_tensor_download: clEnqueueReadBuffer");
}

clt_status clt_tensor_fill(clt_tensor *t, float value)
{
    CLT_TRY(clt_tensor_need(t, "clt_tensor_fill", "tensor"));
    int32_t v = (int32_t)value;
    int ints = t->dtype == CLT_DTYPE_INT32;
    return clt_queue_fill(clt_device_queue(t->dev), t->buf, ints ? (const void *)&v : (const void *)&value,
                          ints ? sizeof v : sizeof value, 0, clt_tensor_bytes(t), "clt_tensor_fill: clEnqueueFillBuffer");
}

clt_status clt_tensor_copy(clt_tensor *dst, const clt_tensor *src)
{
    const char *op = "clt_tensor_copy";
    CLT_TRY(clt_tensor_need(dst, op, "dst"));
    CLT_TRY(clt_tensor_need(src, op, "src"));
    CLT_TRY(clt_tensor_expect(dst, op, "dst", src->dtype, src->ndim, src->shape));
    if (dst == src) return CLT_OK;
    size_t bytes = clt_tensor_bytes(src);
    if (dst->dev == src->dev)
        return clt_queue_copy(clt_device_queue(src->dev), src->buf, 0, dst->buf, 0, bytes,
                              "clt_tensor_copy: clEnqueueCopyBuffer");
    /* Different contexts (maybe vendors): through host memory. */
    void *host;
    CLT_TRY(clt_aligned_alloc(&host, bytes, 1, "clt_tensor_copy staging"));
    clt_status s = clt_device_read(src->dev, src->buf, 0, bytes, host, "clt_tensor_copy between devices: read");
    if (s == CLT_OK) s = clt_device_write(dst->dev, dst->buf, 0, bytes, host, "clt_tensor_copy between devices: write");
    clt_aligned_free(host);
    return s;
}

clt_status clt_tensor_need(const clt_tensor *t, const char *op, const char *what)
{
    if (!t) return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s is NULL", op, what);
    return CLT_OK;
}

clt_status clt_tensor_expect(const clt_tensor *t, const char *op, const char *what, clt_dtype dtype,
                             int ndim, const int64_t *want)
{
    CLT_TRY(clt_tensor_need(t, op, what));
    int ok = t->dtype == dtype && t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = want[i] < 0 || want[i] == t->shape[i];
    if (ok) return CLT_OK;
    char a[160], b[160];
    int64_t shown[CLT_MAX_DIMS];
    for (int i = 0; i < ndim && i < CLT_MAX_DIMS; i++) shown[i] = want[i];
    clt_shape_str(ndim, shown, b, sizeof b);
    for (char *p = b; (p = strstr(p, "-1")); p++) p[0] = '*', p[1] = ' '; /* -1 means any */
    return clt_fail(CLT_ERR_SHAPE, "%s: %s has shape %s%s, expected %s%s", op, what,
                    clt_shape_str(t->ndim, t->shape, a, sizeof a), t->dtype == CLT_DTYPE_INT32 ? " int32" : "",
                    b, dtype == CLT_DTYPE_INT32 ? " int32" : "");
}

clt_status clt_tensor_same_device(const char *op, const clt_tensor *ref, int n,
                                  const clt_tensor *const *others)
{
    for (int i = 0; i < n; i++) {
        if (others[i] && others[i]->dev != ref->dev)
            return clt_fail(CLT_ERR_INVALID_ARG,
                            "%s: tensors on different devices (%d and %d); copy them first", op,
                            clt_device_get_info(ref->dev)->index, clt_device_get_info(others[i]->dev)->index);
    }
    return CLT_OK;
}
