/* A net from its own file: an exported .npz or a checkpoint, which carry
 * the spec and input shape (nn/net_info.h) beside the parameters. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/npz.h"
#include "nn/net_impl.h"
#include "nn/net_info.h"
#include "nn/net_npz.h"

/* The spec and input shape the file names. */
static clt_status read_model(const char *path, char **spec, int shape[3])
{
    clt_npz *z;
    /* the file's own keys alone: the net they describe is made before its
     * parameters are read and checked against it */
    CLT_TRY(clt_npz_read_filtered(path, clt_net_info_filter, NULL, &z));
    const clt_npz_entry *s = clt_npz_get(z, CLT_KEY_SPEC), *in = clt_npz_get(z, CLT_KEY_INPUT);
    clt_status st = CLT_OK;
    if (!s || !in)
        st = clt_fail(CLT_ERR_FORMAT, "%s holds no \"%s\" (%s): a net's parameters alone; make the net with its spec "
                      "(clt_net_create, cltrain --model) and load them into it (clt_net_load_npz, --init-from)", path,
                      s ? CLT_KEY_INPUT : CLT_KEY_SPEC, s ? "the input shape" : "the model spec");
    else if (!s->is_bytes || s->ndim != 1 || s->nbytes == 0 || memchr(s->bytes, 0, s->nbytes))
        st = clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" is not a spec's text", path, CLT_KEY_SPEC);
    else if (in->is_bytes || in->ndim != 1 || in->numel != 3)
        st = clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" is not float32 of shape (3,)", path, CLT_KEY_INPUT);
    for (int i = 0; st == CLT_OK && i < 3; i++) {
        float v = in->data[i];
        if (!(v >= 1 && v <= 65536) || v != floorf(v))
            st = clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" gives input size %g (whole numbers 1 to 65536)", path,
                          CLT_KEY_INPUT, (double)v);
        else shape[i] = (int)v;
    }
    if (st == CLT_OK && !(*spec = strndup((const char *)s->bytes, s->nbytes)))
        st = clt_fail(CLT_ERR_NO_MEMORY, "spec of %s", path);
    clt_npz_destroy(z);
    return st;
}

clt_status clt_net_open(const char *path, clt_device *dev, clt_net **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_open: out is NULL");
    *out = NULL;
    if (!path || !dev) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_open: NULL argument");
    char *spec = NULL;
    int shape[3];
    CLT_TRY(read_model(path, &spec, shape));
    clt_net *net = NULL;
    clt_status s = clt_net_create(dev, spec, shape[0], shape[1], shape[2], &net);
    if (s != CLT_OK) s = clt_fail_context(s, "%s: its model", path);
    free(spec);
    clt_npz *z = NULL;
    if (s == CLT_OK) s = clt_npz_read_filtered(path, clt_net_npz_filter, net, &z);
    if (s == CLT_OK) s = clt_net_npz_check(z, net, 0, "");
    if (s == CLT_OK) s = clt_net_info_load(z, net, 1);
    if (s == CLT_OK) s = clt_net_npz_upload(z, net, 0, "");
    clt_npz_destroy(z);
    if (s != CLT_OK) {
        clt_net_destroy(net);
        return s;
    }
    *out = net;
    return CLT_OK;
}
