/* What a net knows of its data (normalisation, class names) and the keys
 * that carry it, with the spec and input shape, in the net's files. */
#include "nn/net_info.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "data/dataset.h"
#include "io/npz.h"
#include "nn/net_impl.h"

static void free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

void clt_net_info_free(clt_net *net)
{
    free(net->norm);
    net->norm = NULL;
    free_names(net->class_names, net->model.classes);
    net->class_names = NULL;
}

clt_status clt_net_set_normalization(clt_net *net, const float *mean, const float *std)
{
    if (!net) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_set_normalization: net is NULL");
    float *norm;
    CLT_TRY(clt_norm_make(net->model.in.d[0], mean, std, "clt_net_set_normalization", &norm));
    free(net->norm);
    net->norm = norm;
    return CLT_OK;
}

int clt_net_normalization(const clt_net *net, float *mean, float *std)
{
    if (!net || !net->norm) return 0;
    int c = net->model.in.d[0];
    if (mean) memcpy(mean, net->norm, (size_t)c * sizeof *mean);
    if (std) memcpy(std, net->norm + c, (size_t)c * sizeof *std);
    return 1;
}

/* One name: 1 .. CLT_CLASS_NAME_MAX bytes, no newline (the file's
 * separator) and no other control character. */
static clt_status check_name(const char *name, size_t len, int k, const char *op)
{
    if (len == 0 || len > CLT_CLASS_NAME_MAX)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: class %d's name has %zu bytes (1 to %d)", op, k, len,
                        CLT_CLASS_NAME_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return clt_fail(CLT_ERR_INVALID_ARG, "%s: class %d's name \"%.*s\" holds a control character (byte %zu)",
                            op, k, (int)len, name, i);
    return CLT_OK;
}

/* n names of the given lengths, checked, copied into *out. */
static clt_status make_names(int n, const char *const *names, const size_t *lens, const char *op, char ***out)
{
    *out = NULL;
    for (int k = 0; k < n; k++) CLT_TRY(check_name(names[k], lens[k], k, op));
    char **copy;
    CLT_TRY(clt_calloc((void **)&copy, (size_t)n, sizeof *copy, "class names"));
    for (int k = 0; k < n; k++) {
        copy[k] = strndup(names[k], lens[k]);
        if (!copy[k]) {
            free_names(copy, n);
            return clt_fail(CLT_ERR_NO_MEMORY, "class names");
        }
    }
    *out = copy;
    return CLT_OK;
}

clt_status clt_net_set_class_names(clt_net *net, const char *const *names)
{
    if (!net) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_set_class_names: net is NULL");
    int n = net->model.classes;
    char **copy = NULL;
    if (names) {
        size_t *lens;
        CLT_TRY(clt_calloc((void **)&lens, (size_t)n, sizeof *lens, "class names"));
        clt_status s = CLT_OK;
        for (int k = 0; k < n && s == CLT_OK; k++)
            if (!names[k]) s = clt_fail(CLT_ERR_INVALID_ARG, "clt_net_set_class_names: name %d of %d is NULL", k, n);
            else lens[k] = strlen(names[k]);
        if (s == CLT_OK) s = make_names(n, names, lens, "clt_net_set_class_names", &copy);
        free(lens);
        CLT_TRY(s);
    }
    free_names(net->class_names, n);
    net->class_names = copy;
    return CLT_OK;
}

const char *clt_net_class_name(const clt_net *net, int k)
{
    return net && net->class_names && k >= 0 && k < net->model.classes ? net->class_names[k] : NULL;
}

void clt_net_input_shape(const clt_net *net, int *channels, int *height, int *width)
{
    if (channels) *channels = net ? net->model.in.d[0] : 0;
    if (height) *height = net ? net->model.in.d[1] : 0;
    if (width) *width = net ? net->model.in.d[2] : 0;
}

clt_status clt_net_info_copy(clt_net *to, const clt_net *from)
{
    float *n = from->norm;
    CLT_TRY(clt_net_set_normalization(to, n, n ? n + from->model.in.d[0] : NULL));
    return clt_net_set_class_names(to, (const char *const *)from->class_names);
}

clt_status clt_net_info_filter(void *ctx, const char *path, const clt_npz_entry *e, int *skip)
{
    (void)ctx;
    *skip = !clt_net_info_key(e->name);
    if (*skip || e->nbytes <= CLT_NET_INFO_MAX) return CLT_OK;
    return clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" holds %zu bytes, more than a net's file gives it (%d)", path,
                    e->name, e->nbytes, CLT_NET_INFO_MAX);
}

int clt_net_info_key(const char *name)
{
    static const char *const keys[] = {CLT_KEY_SPEC, CLT_KEY_INPUT, CLT_KEY_NORMALIZE, CLT_KEY_CLASSES,
                                       CLT_KEY_VERSION};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(name, keys[i])) return 1;
    return 0;
}

clt_status clt_net_info_add(clt_npz_writer *w, const clt_net *net)
{
    const clt_shape *in = &net->model.in;
    float input[3] = {(float)in->d[0], (float)in->d[1], (float)in->d[2]};
    const char *version = clt_version(NULL, NULL, NULL);
    clt_status s = clt_npz_writer_add_bytes(w, CLT_KEY_SPEC, net->model.spec, strlen(net->model.spec));
    if (s == CLT_OK) s = clt_npz_writer_add_f32(w, CLT_KEY_INPUT, 1, (int64_t[]){3}, input);
    if (s == CLT_OK) s = clt_npz_writer_add_bytes(w, CLT_KEY_VERSION, version, strlen(version));
    if (s == CLT_OK && net->norm)
        s = clt_npz_writer_add_f32(w, CLT_KEY_NORMALIZE, 2, (int64_t[]){2, in->d[0]}, net->norm);
    if (s != CLT_OK || !net->class_names) return s;
    size_t len = 0;
    for (int k = 0; k < net->model.classes; k++) len += strlen(net->class_names[k]) + 1;
    char *text = malloc(len);
    if (!text) return clt_npz_writer_fail(w, clt_fail(CLT_ERR_NO_MEMORY, "class names"));
    size_t at = 0;
    for (int k = 0; k < net->model.classes; k++) {
        size_t n = strlen(net->class_names[k]);
        memcpy(text + at, net->class_names[k], n);
        text[at + n] = '\n';
        at += n + 1;
    }
    s = clt_npz_writer_add_bytes(w, CLT_KEY_CLASSES, text, len);
    free(text);
    return s;
}

/* The file's names: `classes` lines, each ended by '\n'. */
static clt_status read_names(const clt_npz_entry *e, int classes, const char *path, char ***out)
{
    *out = NULL;
    if (!e->is_bytes || e->ndim != 1)
        return clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" is not a byte string", path, CLT_KEY_CLASSES);
    const char **names;
    size_t *lens;
    CLT_TRY(clt_calloc((void **)&names, (size_t)classes, sizeof *names, "class names"));
    clt_status s = clt_calloc((void **)&lens, (size_t)classes, sizeof *lens, "class names");
    int n = 0;
    const char *text = (const char *)e->bytes, *end = text + e->nbytes;
    while (s == CLT_OK && text < end) {
        const char *nl = memchr(text, '\n', (size_t)(end - text));
        if (!nl)
            s = clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" does not end with a newline", path, CLT_KEY_CLASSES);
        else if (n == classes)
            s = clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" names more classes than the net's %d", path,
                         CLT_KEY_CLASSES, classes);
        else {
            names[n] = text;
            lens[n++] = (size_t)(nl - text);
            text = nl + 1;
        }
    }
    if (s == CLT_OK && n != classes)
        s = clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" names %d classes, the net has %d", path, CLT_KEY_CLASSES, n,
                     classes);
    if (s == CLT_OK && make_names(n, names, lens, "class names", out) != CLT_OK)
        s = clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\": %s", path, CLT_KEY_CLASSES, clt_last_error());
    free(names);
    free(lens);
    return s;
}

clt_status clt_net_info_load(const clt_npz *z, clt_net *net, int apply)
{
    const char *path = clt_npz_path(z);
    const clt_npz_entry *e = clt_npz_get(z, CLT_KEY_NORMALIZE);
    float *norm = NULL;
    char **names = NULL;
    int c = net->model.in.d[0];
    if (e && (e->is_bytes || e->ndim != 2 || e->shape[0] != 2 || e->shape[1] != c))
        return clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" is not float32 of shape (2, %d): means and stds of the "
                        "net's %d input channels", path, CLT_KEY_NORMALIZE, c, c);
    if (e && clt_norm_make(c, e->data, e->data + c, "normalisation", &norm) != CLT_OK)
        return clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\": %s", path, CLT_KEY_NORMALIZE, clt_last_error());
    const clt_npz_entry *k = clt_npz_get(z, CLT_KEY_CLASSES);
    clt_status s = k ? read_names(k, net->model.classes, path, &names) : CLT_OK;
    if (s == CLT_OK && apply) {
        if (norm) {
            free(net->norm);
            net->norm = norm;
            norm = NULL;
        }
        if (names) {
            free_names(net->class_names, net->model.classes);
            net->class_names = names;
            names = NULL;
        }
    }
    free(norm);
    free_names(names, net->model.classes);
    return s;
}
