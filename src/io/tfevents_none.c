/* io/tfevents.h in a build without protobuf-c: opening says so; the rest
 * is never reached, as no writer exists. */
#include "io/tfevents.h"

#include "core/error.h"

clt_status clt_tfevents_open(const char *dir, int64_t keep_steps, clt_tfevents **out)
{
    (void)dir;
    (void)keep_steps;
    *out = NULL;
    return clt_fail(CLT_ERR_UNSUPPORTED, "this cltrain was built without protobuf-c, which TensorBoard's event files "
                    "need: install libprotobuf-c-dev and protobuf-c-compiler (tools/setup does) and build again");
}

const char *clt_tfevents_path(const clt_tfevents *w)
{
    (void)w;
    return "";
}

void clt_tfevents_cut(const clt_tfevents *w, int64_t *events, int64_t *torn_bytes)
{
    (void)w;
    *events = *torn_bytes = 0;
}

clt_status clt_tfevents_add(clt_tfevents *w, int64_t step, int n, const char *const *tags, const float *values)
{
    (void)w, (void)step, (void)n, (void)tags, (void)values;
    return clt_fail(CLT_ERR_UNSUPPORTED, "no event writer in this build");
}

clt_status clt_tfevents_sync(clt_tfevents *w)
{
    (void)w;
    return CLT_ERR_UNSUPPORTED;
}

void clt_tfevents_close(clt_tfevents *w) { (void)w; }
