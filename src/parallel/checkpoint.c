/* Trainer checkpoints: one .npz that NumPy can read, holding replica 0's
 * state_dict (parameters and running statistics), its optimizer state (SGD
 * momentum under "momentum/<name>", Adam's "adam/m/<name>" and
 * "adam/v/<name>") and step count, the expanded model spec and input shape,
 * and the caller's own metadata (opaque bytes, e.g. JSON with epoch and
 * step). Checkpoints from before the step count load with 0 steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/npz.h"
#include "nn/net_info.h"
#include "nn/net_npz.h"
#include "parallel/trainer.h"

#define KEY_SPEC CLT_KEY_SPEC
#define KEY_INPUT CLT_KEY_INPUT
#define KEY_META CLT_KEY_PREFIX "meta"
#define KEY_STEP CLT_KEY_PREFIX "optimizer_steps" /* decimal text */

/* The optimizers whose state a checkpoint may hold (AdamW's is Adam's). */
static const clt_optimizer stored_kinds[] = {CLT_OPTIMIZER_SGD, CLT_OPTIMIZER_ADAM};
#define N_STORED (int)(sizeof stored_kinds / sizeof stored_kinds[0])

clt_status clt_trainer_save_checkpoint(clt_trainer *t, const char *path, const char *meta)
{
    if (!t || !path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_save_checkpoint: NULL argument");
    /* a step that failed half way may have updated part of a replica */
    if (t->failed)
        return clt_fail(t->fail_status, "clt_trainer_save_checkpoint: the trainer stopped after an earlier failure "
                        "(%s); its parameters may be part-way through a step", t->fail_msg);
    clt_net *net = clt_trainer_net(t, 0);
    clt_npz_writer *w;
    CLT_TRY(clt_npz_writer_create(path, 0, &w));
    clt_status s = clt_net_npz_add(w, net, 0, "");
    const clt_optim_ops *ops = clt_optim_find(t->optim.kind);
    for (int i = 0; s == CLT_OK && i < clt_net_slots(net); i++) s = clt_net_npz_add(w, net, 1 + i, ops->slot_prefix[i]);
    char steps[32];
    snprintf(steps, sizeof steps, "%lld", (long long)t->optim_steps);
    if (s == CLT_OK) s = clt_npz_writer_add_bytes(w, KEY_STEP, steps, strlen(steps));
    if (s == CLT_OK) s = clt_net_info_add(w, net);
    if (s == CLT_OK && meta) s = clt_npz_writer_add_bytes(w, KEY_META, meta, strlen(meta));
    if (s == CLT_OK) s = clt_npz_writer_commit(w);
    clt_npz_writer_destroy(w);
    return s;
}

/* Whether `name` is a parameter or state of the net (which 0, prefix "") or
 * a stored optimizer's state of one (which 1 + slot, the slot's prefix). */
static int state_entry(const clt_net *net, const char *name, int *which, const char **prefix)
{
    *which = 0;
    *prefix = "";
    if (clt_net_npz_is_param(net, 0, "", name)) return 1;
    for (int k = 0; k < N_STORED; k++)
        for (int j = 0; j < CLT_OPTIM_SLOTS; j++) {
            const char *pre = clt_optim_find(stored_kinds[k])->slot_prefix[j];
            if (pre && clt_net_npz_is_param(net, 1 + j, pre, name)) {
                *which = 1 + j;
                *prefix = pre;
                return 1;
            }
        }
    return 0;
}

static int text_entry(const char *name)
{
    return clt_net_info_key(name) || !strcmp(name, KEY_META) || !strcmp(name, KEY_STEP);
}

/* Names the checkpoint format knows. */
static int known_entry(const clt_net *net, const char *name)
{
    int which;
    const char *prefix;
    return text_entry(name) || state_entry(net, name, &which, &prefix);
}

static clt_status unknown_entry(const char *path, const char *name)
{
    return clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" is not part of a checkpoint of this model", path, name);
}

/* Every entry must be one the checkpoint format knows. */
static clt_status check_entries(const clt_npz *z, const clt_net *net, const char *path)
{
    for (int i = 0; i < clt_npz_count(z); i++) {
        clt_npz_entry e;
        CLT_TRY(clt_npz_entry_at(z, i, &e));
        if (!known_entry(net, e.name)) return unknown_entry(path, e.name);
    }
    return CLT_OK;
}

/* The spec and metadata are short text: a larger entry is no checkpoint. */
#define TEXT_MAX ((size_t)1 << 20)

/* From an entry's header alone, before its data is inflated: parameters
 * and optimizer state of the net's shapes, text of sane size; an unknown entry
 * stays compressed (check_entries refuses it). So a hostile file costs no
 * more memory than a valid checkpoint of the model. */
static clt_status load_filter(void *ctx, const char *path, const clt_npz_entry *e, int *skip)
{
    const clt_net *net = ctx;
    int which, found;
    const char *prefix;
    if (state_entry(net, e->name, &which, &prefix)) return clt_net_npz_check_entry(net, which, prefix, path, e, &found);
    *skip = !text_entry(e->name);
    if (*skip) return CLT_OK;
    if (e->nbytes > TEXT_MAX)
        return clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" holds %zu bytes, more than a checkpoint's %zu", path, e->name,
                        e->nbytes, TEXT_MAX);
    return CLT_OK;
}

static clt_status check_model(const clt_npz *z, const clt_trainer *t, const clt_net *net, const char *path)
{
    const clt_npz_entry *spec = clt_npz_get(z, KEY_SPEC), *input = clt_npz_get(z, KEY_INPUT);
    if (!spec || !spec->is_bytes || !input || input->is_bytes || input->numel != 3)
        return clt_fail(CLT_ERR_FORMAT, "%s: not a cltrain checkpoint (no %s and %s entries)", path, KEY_SPEC, KEY_INPUT);
    const char *want = clt_net_spec(net);
    if (spec->nbytes != strlen(want) || memcmp(spec->bytes, want, spec->nbytes) != 0)
        return clt_fail(CLT_ERR_FORMAT, "%s: checkpoint of model \"%.*s\", but this run's model is \"%s\"", path,
                        (int)(spec->nbytes < 2000 ? spec->nbytes : 2000), (const char *)spec->bytes, want);
    if (input->data[0] != (float)t->cfg.channels || input->data[1] != (float)t->cfg.height ||
        input->data[2] != (float)t->cfg.width)
        return clt_fail(CLT_ERR_FORMAT, "%s: checkpoint for inputs (%g, %g, %g), this run's are (%d, %d, %d)", path,
                        input->data[0], input->data[1], input->data[2], t->cfg.channels, t->cfg.height, t->cfg.width);
    return CLT_OK;
}

/* Slots of optimizer state the file holds for this run's optimizer (each
 * checked against the net), and its step count. State of another optimizer
 * is refused. */
static clt_status check_optimizer(const clt_npz *z, const clt_trainer *t, const clt_net *net, const char *path,
                                  int *slots, int64_t *steps)
{
    const clt_optim_ops *mine = clt_optim_find(t->optim.kind);
    *slots = 0;
    for (int k = 0; k < N_STORED; k++) {
        const clt_optim_ops *ops = clt_optim_find(stored_kinds[k]);
        int held = 0;
        for (int i = 0; i < clt_npz_count(z) && !held; i++) {
            clt_npz_entry e;
            CLT_TRY(clt_npz_entry_at(z, i, &e));
            held = !strncmp(e.name, ops->slot_prefix[0], strlen(ops->slot_prefix[0]));
        }
        if (!held) continue;
        if (strcmp(ops->slot_prefix[0], mine->slot_prefix[0]) != 0)
            return clt_fail(CLT_ERR_FORMAT, "%s: the checkpoint holds %s state (\"%s...\"), this run's optimizer is %s",
                            path, ops->name, ops->slot_prefix[0], mine->name);
        while (*slots < CLT_OPTIM_SLOTS && ops->slot_prefix[*slots]) {
            CLT_TRY(clt_net_npz_check(z, net, 1 + *slots, ops->slot_prefix[*slots]));
            (*slots)++;
        }
    }
    *steps = 0;
    const clt_npz_entry *e = clt_npz_get(z, KEY_STEP);
    if (e) {
        char text[32] = "";
        char *end = NULL;
        if (e->is_bytes && e->nbytes > 0 && e->nbytes < sizeof text) memcpy(text, e->bytes, e->nbytes);
        long long v = strtoll(text, &end, 10);
        if (!e->is_bytes || !text[0] || *end || v < 0)
            return clt_fail(CLT_ERR_FORMAT, "%s: entry %s is not a step count", path, KEY_STEP);
        *steps = v;
    } else if (*slots && t->optim.kind != CLT_OPTIMIZER_SGD) {
        return clt_fail(CLT_ERR_FORMAT, "%s: Adam state without %s (the step count)", path, KEY_STEP);
    }
    /* Adam starting from no state (an SGD run's checkpoint without
     * momentum) starts its bias correction afresh, as a new optimizer. */
    if (!*slots && t->optim.kind != CLT_OPTIMIZER_SGD) *steps = 0;
    return CLT_OK;
}

clt_status clt_trainer_load_checkpoint(clt_trainer *t, const char *path, char **meta)
{
    if (!t || !path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_load_checkpoint: NULL argument");
    if (meta) *meta = NULL;
    clt_net *net = clt_trainer_net(t, 0);
    clt_npz *z;
    CLT_TRY(clt_npz_read_filtered(path, load_filter, net, &z));
    clt_status s = check_model(z, t, net, path);
    if (s == CLT_OK) s = check_entries(z, net, path);
    if (s == CLT_OK) s = clt_net_npz_check(z, net, 0, "");
    int slots = 0;
    int64_t steps = 0;
    if (s == CLT_OK) s = check_optimizer(z, t, net, path, &slots, &steps);
    if (s == CLT_OK) s = clt_net_info_load(z, net, 0);
    /* Everything is checked: now change the replicas. */
    const clt_optim_ops *ops = clt_optim_find(t->optim.kind);
    if (s == CLT_OK) s = clt_net_npz_upload(z, net, 0, "");
    if (s == CLT_OK) s = clt_net_reset_slots(net); /* a slot the file lacks starts from zero */
    if (s == CLT_OK) s = clt_net_ensure_slots(net, slots);
    for (int i = 0; s == CLT_OK && i < slots; i++) s = clt_net_npz_upload(z, net, 1 + i, ops->slot_prefix[i]);
    if (s == CLT_OK) s = clt_trainer_broadcast_params(t);
    if (s == CLT_OK) s = clt_net_info_load(z, net, 1); /* checked above */
    if (s == CLT_OK) t->optim_steps = steps;
    const clt_npz_entry *m = clt_npz_get(z, KEY_META);
    if (s == CLT_OK && meta && m && m->is_bytes) {
        *meta = malloc(m->nbytes + 1);
        if (!*meta) {
            s = clt_fail(CLT_ERR_NO_MEMORY, "checkpoint metadata");
        } else {
            memcpy(*meta, m->bytes, m->nbytes);
            (*meta)[m->nbytes] = 0;
        }
    }
    clt_npz_destroy(z);
    if (s != CLT_OK && s != CLT_ERR_FORMAT && s != CLT_ERR_IO && s != CLT_ERR_NOT_FOUND)
        return clt_fail_context(s, "loading checkpoint %s", path);
    return s;
}
