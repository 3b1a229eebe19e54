/* A net's parameters to and from .npz, by state_dict name. Loading checks
 * every name and shape before the first byte goes to the device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/npz.h"
#include "nn/net_impl.h"
#include "nn/net_info.h"
#include "nn/net_npz.h"
#include "runtime/queue.h"

#define NAME_CAP 1100 /* prefix + parameter name */

static clt_status param_key(char *buf, const char *prefix, const clt_param *p)
{
    int w = snprintf(buf, NAME_CAP, "%s%s", prefix, p->name);
    if (w < 0 || w >= NAME_CAP) return clt_fail(CLT_ERR_INVALID_ARG, "key prefix \"%.64s...\" is too long", prefix);
    return CLT_OK;
}

/* Where parameter p lives: the state_dict (which = 0) takes parameters
 * and running statistics; an optimizer slot (which = 1 + slot) only
 * parameters. */
static cl_mem source_of(const clt_net *net, int which, const clt_param *p)
{
    if (which) return p->is_buffer ? NULL : clt_net_buffer_mem(net, CLT_NET_SLOT0 + which - 1);
    return clt_net_buffer_mem(net, p->is_buffer ? CLT_NET_STATE : CLT_NET_PARAMS);
}

static int included(int which, const clt_param *p) { return !(which && p->is_buffer); }

/* A slot to move must exist. */
static clt_status need_slot(const clt_net *net, int which, const char *op)
{
    if (which < 0 || which > CLT_OPTIM_SLOTS || (which && !clt_net_buffer_mem(net, CLT_NET_SLOT0 + which - 1)))
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: the net has no optimizer state slot %d", op, which - 1);
    return CLT_OK;
}

/* The first value of data that is not finite (-1: none), and its place:
 * "NaN at index (1, 2) (element 5 of 6)", the flat index as an index into
 * the shape, last dimension fastest. */
static int64_t first_non_finite(const float *data, int ndim, const int64_t *shape, int64_t numel, char *where,
                                size_t cap)
{
    for (int64_t i = 0; i < numel; i++) {
        float v = data[i];
        if (isfinite(v)) continue;
        char at[200];
        int64_t idx[CLT_MAX_DIMS], rest = i;
        for (int d = ndim - 1; d >= 0; d--) {
            idx[d] = shape[d] ? rest % shape[d] : 0;
            rest = shape[d] ? rest / shape[d] : 0;
        }
        clt_npz_shape_str(ndim, idx, at, sizeof at);
        snprintf(where, cap, "%s at index %s (element %lld of %lld)", isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf", at,
                 (long long)i, (long long)numel);
        return i;
    }
    return -1;
}

clt_status clt_net_npz_add(clt_npz_writer *w, const clt_net *net, int which, const char *prefix)
{
    if (!w || !net)
        return clt_npz_writer_fail(w, clt_fail(CLT_ERR_INVALID_ARG, "clt_net_npz_add: NULL argument"));
    clt_status slot_ok = need_slot(net, which, "clt_net_npz_add");
    if (slot_ok != CLT_OK) return clt_npz_writer_fail(w, slot_ok);
    if (!prefix) prefix = "";
    int n = clt_net_param_count(net);
    int64_t most = 1;
    for (int i = 0; i < n; i++)
        if (clt_net_param_at(net, i)->numel > most) most = clt_net_param_at(net, i)->numel;
    float *host = malloc((size_t)most * sizeof *host);
    if (!host)
        return clt_npz_writer_fail(w, clt_fail(CLT_ERR_NO_MEMORY, "cannot allocate %lld floats", (long long)most));
    clt_status s = CLT_OK;
    char key[NAME_CAP];
    for (int i = 0; i < n && s == CLT_OK; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        if (!included(which, p)) continue;
        s = param_key(key, prefix, p);
        if (s != CLT_OK) break;
        s = clt_device_read(net->dev, source_of(net, which, p), p->offset * sizeof(float),
                            (size_t)p->numel * sizeof(float), host, "reading a parameter buffer");
        if (s != CLT_OK) {
            s = clt_fail_context(s, "saving %s", key);
            break;
        }
        /* a file that no load would take (check_finite): a diverged run
         * must not replace its last good file */
        char where[300];
        if (first_non_finite(host, p->ndim, p->shape, p->numel, where, sizeof where) >= 0) {
            s = clt_fail(CLT_ERR_NUMERIC, "%s holds %s: training diverged; not written", key, where);
            break;
        }
        s = clt_npz_writer_add_f32(w, key, p->ndim, p->shape, host);
    }
    free(host);
    return s == CLT_OK ? s : clt_npz_writer_fail(w, s);
}

static int same_shape(const clt_npz_entry *e, const clt_param *p)
{
    if (e->ndim != p->ndim) return 0;
    for (int i = 0; i < p->ndim; i++)
        if (e->shape[i] != p->shape[i]) return 0;
    return 1;
}

/* "a (2, 3), b (4,), ..." of at most `cap` bytes. */
static void list_entries(const clt_npz *npz, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < clt_npz_count(npz); i++) {
        clt_npz_entry e;
        if (clt_npz_entry_at(npz, i, &e) != CLT_OK) break;
        char shape[200];
        int w = snprintf(buf + at, cap - at, "%s%s %s", i ? ", " : "", e.name,
                         clt_npz_shape_str(e.ndim, e.shape, shape, sizeof shape));
        if (w < 0 || (size_t)w >= cap - at) {
            snprintf(buf + (at < cap - 6 ? at : cap - 6), 6, ", ...");
            return;
        }
        at += (size_t)w;
    }
}

static void list_params(const clt_net *net, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < clt_net_param_count(net); i++) {
        const clt_param *p = clt_net_param_at(net, i);
        char shape[200];
        int w = snprintf(buf + at, cap - at, "%s%s %s", i ? ", " : "", p->name,
                         clt_npz_shape_str(p->ndim, p->shape, shape, sizeof shape));
        if (w < 0 || (size_t)w >= cap - at) {
            snprintf(buf + (at < cap - 6 ? at : cap - 6), 6, ", ...");
            return;
        }
        at += (size_t)w;
    }
}

/* An entry found for parameter p: float32 of p's shape. */
static clt_status check_found(const char *path, const char *key, const clt_param *p, const clt_npz_entry *e)
{
    char want[200], have[200];
    clt_npz_shape_str(p->ndim, p->shape, want, sizeof want);
    if (e->is_bytes)
        return clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" is a byte array ('%s'), the parameter is float32 of shape %s",
                        path, key, e->dtype, want);
    if (!same_shape(e, p))
        return clt_fail(CLT_ERR_FORMAT, "%s: parameter \"%s\" has shape %s in the net but %s in the file", path, key,
                        want, clt_npz_shape_str(e->ndim, e->shape, have, sizeof have));
    return CLT_OK;
}

/* NaN or an infinity in loaded values would train (or evaluate) to a
 * diverged loss far from its cause: refused here, naming the first. */
static clt_status check_finite(const char *path, const char *key, const clt_npz_entry *e)
{
    char where[300];
    if (first_non_finite(e->data, e->ndim, e->shape, e->numel, where, sizeof where) < 0) return CLT_OK;
    return clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" holds %s: parameters must be finite", path, key, where);
}

clt_status clt_net_npz_check(const clt_npz *npz, const clt_net *net, int which, const char *prefix)
{
    if (!npz || !net) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_npz_check: NULL argument");
    if (!prefix) prefix = "";
    const char *path = clt_npz_path(npz);
    char key[NAME_CAP], want[200];
    for (int i = 0; i < clt_net_param_count(net); i++) {
        const clt_param *p = clt_net_param_at(net, i);
        if (!included(which, p)) continue;
        CLT_TRY(param_key(key, prefix, p));
        const clt_npz_entry *e = clt_npz_get(npz, key);
        if (!e) {
            char list[1024];
            list_entries(npz, list, sizeof list);
            return clt_fail(CLT_ERR_FORMAT, "%s: parameter \"%s\" %s is missing from the file (it holds: %s)", path,
                            key, clt_npz_shape_str(p->ndim, p->shape, want, sizeof want),
                            clt_npz_count(npz) ? list : "nothing");
        }
        CLT_TRY(check_found(path, key, p, e));
        if (e->data) CLT_TRY(check_finite(path, key, e));
    }
    return CLT_OK;
}

static const clt_param *param_named(const clt_net *net, int which, const char *prefix, const char *name)
{
    size_t pl = strlen(prefix);
    const clt_param *p = strncmp(name, prefix, pl) == 0 ? clt_net_find_param(net, name + pl) : NULL;
    return p && included(which, p) ? p : NULL;
}

clt_status clt_net_npz_check_entry(const clt_net *net, int which, const char *prefix, const char *path,
                                   const clt_npz_entry *e, int *found)
{
    *found = 0;
    if (!prefix) prefix = "";
    const clt_param *p = param_named(net, which, prefix, e->name);
    if (!p) return CLT_OK;
    *found = 1;
    return check_found(path, e->name, p, e);
}

int clt_net_npz_is_param(const clt_net *net, int which, const char *prefix, const char *name)
{
    if (!net || !name) return 0;
    return param_named(net, which, prefix ? prefix : "", name) != NULL;
}

clt_status clt_net_npz_upload(const clt_npz *npz, clt_net *net, int which, const char *prefix)
{
    if (!npz || !net) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_npz_upload: NULL argument");
    CLT_TRY(need_slot(net, which, "clt_net_npz_upload"));
    if (!prefix) prefix = "";
    char key[NAME_CAP];
    int n = clt_net_param_count(net);
    for (int i = 0; i < n; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        if (!included(which, p)) continue;
        CLT_TRY(param_key(key, prefix, p));
        const clt_npz_entry *e = clt_npz_get(npz, key);
        if (!e || e->is_bytes || e->numel != p->numel)
            return clt_fail(CLT_ERR_INTERNAL, "%s: entry \"%s\" was not checked against the net", clt_npz_path(npz), key);
    }
    /* The host data lives in the archive until the queue is drained. */
    cl_command_queue q = clt_device_queue(net->dev);
    clt_status s = CLT_OK;
    for (int i = 0; i < n && s == CLT_OK; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        if (!included(which, p)) continue;
        if (param_key(key, prefix, p) != CLT_OK) break;
        const clt_npz_entry *e = clt_npz_get(npz, key);
        s = clt_queue_write(q, source_of(net, which, p), 0, p->offset * sizeof(float), (size_t)p->numel * sizeof(float),
                            e->data, 0, NULL, NULL, "writing parameters");
    }
    clt_status fin = clt_queue_finish(q, "writing parameters");
    if (s == CLT_OK) s = fin;
    if (s != CLT_OK) return clt_fail_context(s, "%s", clt_npz_path(npz));
    return CLT_OK;
}

clt_status clt_net_save_npz(const clt_net *net, const char *path)
{
    if (!net || !path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_save_npz: NULL argument");
    clt_npz_writer *w;
    CLT_TRY(clt_npz_writer_create(path, 0, &w));
    clt_status s = clt_net_npz_add(w, net, 0, "");
    if (s == CLT_OK) s = clt_net_info_add(w, net);
    if (s == CLT_OK) s = clt_npz_writer_commit(w);
    clt_npz_writer_destroy(w);
    return s;
}

clt_status clt_net_npz_filter(void *ctx, const char *path, const clt_npz_entry *e, int *skip)
{
    int found;
    CLT_TRY(clt_net_npz_check_entry(ctx, 0, "", path, e, &found));
    if (!found) return clt_net_info_filter(NULL, path, e, skip);
    *skip = 0;
    return CLT_OK;
}

clt_status clt_net_load_npz(clt_net *net, const char *path)
{
    if (!net || !path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_load_npz: NULL argument");
    clt_npz *npz;
    CLT_TRY(clt_npz_read_filtered(path, clt_net_npz_filter, net, &npz));
    clt_status s = clt_net_npz_check(npz, net, 0, "");
    if (s == CLT_OK && clt_npz_get(npz, CLT_KEY_PREFIX "optimizer_steps"))
        s = clt_fail(CLT_ERR_FORMAT, "%s is a training checkpoint (it holds \"" CLT_KEY_PREFIX "optimizer_steps\"), not "
                     "a net's file: open it with clt_net_open, or a trainer loads it (clt_trainer_load_checkpoint; "
                     "cltrain train --resume)", path);
    if (s == CLT_OK) s = clt_net_info_load(npz, net, 0);
    for (int i = 0; s == CLT_OK && i < clt_npz_count(npz); i++) {
        clt_npz_entry e;
        s = clt_npz_entry_at(npz, i, &e);
        if (s == CLT_OK && !clt_net_npz_is_param(net, 0, "", e.name) && !clt_net_info_key(e.name)) {
            char shape[200], list[1024];
            list_params(net, list, sizeof list);
            s = clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" %s is not a parameter of the net (its parameters: %s)", path,
                         e.name, clt_npz_shape_str(e.ndim, e.shape, shape, sizeof shape), list);
        }
    }
    if (s == CLT_OK) s = clt_net_npz_upload(npz, net, 0, "");
    if (s == CLT_OK) s = clt_net_info_load(npz, net, 1); /* checked above: cannot fail now but for memory */
    clt_npz_destroy(npz);
    return s;
}
