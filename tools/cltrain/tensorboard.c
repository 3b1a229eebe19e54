#include "tensorboard.h"

#include <stdio.h>

static int failed(const char *dir)
{
    fprintf(stderr, "cltrain: --tensorboard %s: %s\n", dir, clt_last_error());
    return 1;
}

int tboard_open(const cli_options *o, int64_t steps, clt_tfevents **w)
{
    *w = NULL;
    if (!o->tensorboard) return 0;
    clt_status s = clt_tfevents_open(o->tensorboard, steps, w);
    if (s != CLT_OK) return s == CLT_ERR_UNSUPPORTED ? failed(o->tensorboard) + 1 : failed(o->tensorboard);
    int64_t events, torn;
    clt_tfevents_cut(*w, &events, &torn);
    /* not silent: events vanish from a file the user may be watching */
    if (events)
        fprintf(stderr, "cltrain: --tensorboard %s: %lld event%s after the checkpoint's step %lld cut from %s (this run "
                "makes those steps again)\n", o->tensorboard, (long long)events, events == 1 ? "" : "s",
                (long long)steps, clt_tfevents_path(*w));
    if (torn)
        fprintf(stderr, "cltrain: --tensorboard %s: a torn or corrupt record (the last %lld bytes) cut from %s\n",
                o->tensorboard, (long long)torn, clt_tfevents_path(*w));
    return 0;
}

int tboard_step(clt_tfevents *w, const char *dir, int64_t step, double loss)
{
    const char *tag = "loss/train_step";
    float v = (float)loss;
    return clt_tfevents_add(w, step, 1, &tag, &v) != CLT_OK ? failed(dir) : 0;
}

int tboard_epoch(clt_tfevents *w, const char *dir, const epoch_report *r)
{
    const char *tags[] = {"loss/train", "accuracy/train", "lr", "samples_per_s", "epoch", "loss/test",
                          "accuracy/test"};
    float v[] = {(float)r->loss, (float)r->train_acc, (float)r->lr, (float)r->samples_per_s, (float)r->epoch,
                 (float)r->test_loss, (float)r->test_acc};
    int n = r->evaluated ? 7 : 5; /* the test set's last */
    if (clt_tfevents_add(w, r->steps, n, tags, v) != CLT_OK || clt_tfevents_sync(w) != CLT_OK) return failed(dir);
    return 0;
}
