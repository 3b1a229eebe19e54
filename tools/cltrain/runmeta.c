#include "runmeta.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json.h"
#include "cltrain.h"
#include "io/npz.h"
#include "optim/optim.h"
#include "optim/schedule.h"
#include "ranges.h"

/* A byte entry of the archive as a malloc'd string, NULL if absent. */
static char *entry_text(const clt_npz *z, const char *name)
{
    clt_npz_entry e;
    if (clt_npz_find(z, name, &e) != CLT_OK || !e.is_bytes || !e.bytes) return NULL;
    return strndup((const char *)e.bytes, e.nbytes);
}

/* Only the spec and the run record are read here (the trainer reads the
 * rest against the model): other entries, and text larger than any
 * checkpoint's (then not a checkpoint), stay compressed. */
static clt_status text_only(void *ctx, const char *path, const clt_npz_entry *e, int *skip)
{
    (void)ctx;
    (void)path;
    int text = !strcmp(e->name, "__cltrain__/spec") || !strcmp(e->name, "__cltrain__/meta");
    *skip = !text || e->nbytes > ((size_t)1 << 20);
    return CLT_OK;
}

/* The file's spec and run record (each NULL where absent); 1 after a
 * message when it cannot be read. */
static int read_texts(const char *path, const char *opt, char **model, char **meta)
{
    clt_npz *z = NULL;
    *model = *meta = NULL;
    if (clt_npz_read_filtered(path, text_only, NULL, &z) != CLT_OK) {
        fprintf(stderr, "cltrain: %s: %s\n", opt, clt_last_error());
        return 1;
    }
    *model = entry_text(z, "__cltrain__/spec");
    *meta = entry_text(z, "__cltrain__/meta");
    clt_npz_destroy(z);
    return 0;
}

int run_meta_file_spec(const char *path, const char *opt, char **model)
{
    char *meta;
    if (read_texts(path, opt, model, &meta)) return 1;
    free(meta);
    return 0;
}

int run_meta_read_checkpoint(const char *path, char **model, run_meta *m)
{
    char *meta;
    memset(m, 0, sizeof *m);
    if (read_texts(path, "--resume", model, &meta)) return 1;
    int rc = 1;
    if (*model && meta) rc = run_meta_parse(meta, path, m);
    else fprintf(stderr, "cltrain: --resume %s: not a checkpoint written by cltrain train --save\n", path);
    free(meta);
    if (rc) {
        free(*model);
        *model = NULL;
    }
    return rc;
}

void run_learning_default(run_learning *l)
{
    memset(l, 0, sizeof *l);
    l->optimizer = CLT_OPTIMIZER_SGD;
    l->beta1 = 0.9;
    l->beta2 = 0.999;
    l->eps = 1e-8;
    l->lr_gamma = 0.1;
    l->lr_schedule = CLT_SCHEDULE_CONSTANT;
}

static void format_learning(FILE *f, const run_learning *l)
{
    fprintf(f,
            "\"optimizer\": \"%s\", \"nesterov\": %d, \"beta1\": %.9g, \"beta2\": %.9g, \"eps\": %.9g, "
            "\"clip_grad_norm\": %.9g, \"label_smoothing\": %.9g, \"lr_schedule\": \"%s\", \"lr_step\": %lld, \"lr_gamma\": %.9g, "
            "\"lr_min\": %.9g, \"warmup_steps\": %lld, \"warmup_epochs\": %lld, \"scale_lr\": %d, "
            "\"lr_milestones\": \"",
            clt_optim_find((clt_optimizer)l->optimizer)->name, l->nesterov, l->beta1, l->beta2, l->eps,
            l->clip_grad_norm, l->label_smoothing, clt_schedule_name(l->lr_schedule), (long long)l->lr_step, l->lr_gamma, l->lr_min,
            (long long)l->warmup_steps, (long long)l->warmup_epochs, l->scale_lr);
    for (int i = 0; i < l->n_milestones; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)l->milestones[i]);
    fprintf(f, "\", ");
}

char *run_meta_format(const run_meta *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    fprintf(f,
            "{\"format\": \"cltrain-run\", \"version\": %d, \"epoch\": %lld, \"batch\": %lld, \"steps\": %lld, "
            "\"seed\": %lld, \"batch_size\": %lld, \"limit_train\": %lld, \"shuffle\": %d, \"drop_last\": %d, "
            "\"lr\": %.9g, \"momentum\": %.9g, \"weight_decay\": %.9g, \"target_epochs\": %lld, "
            "\"target_steps\": %lld, ",
            RUN_META_VERSION, (long long)m->epoch, (long long)m->batch, (long long)m->steps, (long long)m->seed,
            (long long)m->batch_size, (long long)m->limit_train, m->shuffle, m->drop_last, m->lr, m->momentum,
            m->weight_decay, (long long)m->target_epochs, (long long)m->target_steps);
    format_learning(f, &m->learn);
    fprintf(f, "\"layout\": %d, \"coarse\": %d, \"val_split\": %.17g, \"image_size\": %lld, \"channels\": %lld, "
            "\"normalize\": ", m->layout, m->coarse, m->val_split, (long long)m->image_size, (long long)m->channels);
    json_string(f, m->normalize ? m->normalize : "");
    fputs(", \"augment\": ", f);
    json_string(f, m->augment ? m->augment : "");
    fputs(", \"test_data\": ", f);
    json_string(f, m->test_data ? m->test_data : "");
    fputs(", \"data\": ", f);
    json_string(f, m->data ? m->data : "");
    fprintf(f, ", \"precision\": \"%s\"}", m->precision == CLT_PRECISION_FP32 ? "fp32" : "tf32");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* The text after "key": (the value), or NULL. */
static const char *value_of(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    return p;
}

static int bad(const char *path, const char *key)
{
    fprintf(stderr, "cltrain: %s: checkpoint metadata has no valid \"%s\"\n", path, key);
    return 1;
}

static int integer(const char *text, const char *path, const char *key, long long lo, long long hi, int64_t *out)
{
    const char *v = value_of(text, key);
    char *end;
    errno = 0;
    long long d = v ? strtoll(v, &end, 10) : 0;
    if (!v || end == v || errno || d < lo || d > hi || (*end != ',' && *end != '}')) return bad(path, key);
    *out = d;
    return 0;
}

static int number(const char *text, const char *path, const char *key, double lo, double hi, double *out)
{
    const char *v = value_of(text, key);
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : NAN;
    if (!v || end == v || errno || !isfinite(d) || d < lo || d > hi || (*end != ',' && *end != '}'))
        return bad(path, key);
    *out = d;
    return 0;
}

/* The option recorded under key: in the option's range (ranges.c), or 0
 * where the record writes 0 for an option not given. */
static const opt_range *row_for(const char *key)
{
    for (int i = 0; i < n_opt_ranges; i++)
        if (opt_ranges[i].key && !strcmp(opt_ranges[i].key, key)) return &opt_ranges[i];
    return NULL;
}

static int option_int(const char *text, const char *path, const char *key, int64_t *out)
{
    const opt_range *r = row_for(key);
    if (integer(text, path, key, r->zero_unset ? 0 : r->ilo, r->ihi, out)) return 1;
    return *out < r->ilo && *out != 0 ? bad(path, key) : 0;
}

static int option_number(const char *text, const char *path, const char *key, double *out)
{
    const opt_range *r = row_for(key);
    if (number(text, path, key, -HUGE_VAL, HUGE_VAL, out)) return 1;
    return opt_range_holds(r, *out) || (r->zero_unset && *out == 0) ? 0 : bad(path, key);
}

/* A JSON string as json_string writes it, decoded into a malloc'd copy. */
static char *string_of(const char *text, const char *key)
{
    const char *d = value_of(text, key);
    if (!d || *d != '"') return NULL;
    size_t cap = strlen(d), n = 0;
    char *out = malloc(cap + 1);
    if (!out) return NULL;
    for (d++; *d && *d != '"'; d++) {
        if (*d != '\\') {
            out[n++] = *d;
            continue;
        }
        d++;
        switch (*d) {
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned c;
            if (sscanf(d + 1, "%4x", &c) != 1 || c == 0 || c > 0x1f) {
                free(out);
                return NULL;
            }
            out[n++] = (char)c;
            d += 4;
            break;
        }
        case '"': case '\\': out[n++] = *d; break;
        default: free(out); return NULL;
        }
    }
    if (*d != '"') {
        free(out);
        return NULL;
    }
    out[n] = 0;
    return out;
}

/* The index a name-lookup gives the JSON string value of key; -1 if none. */
static int name_of(const char *text, const char *key, int (*named)(const char *))
{
    char *v = string_of(text, key);
    int found = named(v);
    free(v);
    return found;
}

static int parse_learning(const char *text, const char *path, run_learning *l)
{
    int64_t nesterov, scale;
    if ((l->optimizer = name_of(text, "optimizer", clt_optim_named)) < 0) return bad(path, "optimizer");
    if ((l->lr_schedule = name_of(text, "lr_schedule", clt_schedule_named)) < 0) return bad(path, "lr_schedule");
    if (integer(text, path, "nesterov", 0, 1, &nesterov) || integer(text, path, "scale_lr", 0, 1, &scale) ||
        option_number(text, path, "beta1", &l->beta1) || option_number(text, path, "beta2", &l->beta2) ||
        option_number(text, path, "eps", &l->eps) || option_number(text, path, "clip_grad_norm", &l->clip_grad_norm) ||
        option_number(text, path, "label_smoothing", &l->label_smoothing) ||
        option_int(text, path, "lr_step", &l->lr_step) || option_number(text, path, "lr_gamma", &l->lr_gamma) ||
        option_number(text, path, "lr_min", &l->lr_min) || option_int(text, path, "warmup_steps", &l->warmup_steps) ||
        option_int(text, path, "warmup_epochs", &l->warmup_epochs))
        return 1;
    l->nesterov = (int)nesterov, l->scale_lr = (int)scale;
    char *list = string_of(text, "lr_milestones");
    if (!list) return bad(path, "lr_milestones");
    int ok = 1;
    for (char *at = list; ok && *at;) {
        char *end;
        long long v = strtoll(at, &end, 10);
        ok = end != at && opt_range_holds(opt_range_of(O_MILESTONES), (double)v) &&
             l->n_milestones < CLT_SCHEDULE_MILESTONES && (!*end || *end == ',');
        if (ok) l->milestones[l->n_milestones++] = v;
        at = *end ? end + 1 : end;
    }
    free(list);
    return ok ? 0 : bad(path, "lr_milestones");
}

int run_meta_parse(const char *text, const char *path, run_meta *m)
{
    memset(m, 0, sizeof *m);
    run_learning_default(&m->learn);
    const char *fmt = value_of(text, "format");
    if (!fmt || strncmp(fmt, "\"cltrain-run\"", 13) != 0) {
        fprintf(stderr, "cltrain: %s: checkpoint metadata is not a cltrain run record\n", path);
        return 1;
    }
    int64_t version, shuffle, drop;
    if (integer(text, path, "version", 1, INT32_MAX, &version)) return 1;
    if (version > RUN_META_VERSION) {
        fprintf(stderr, "cltrain: %s: the checkpoint's run record is version %lld, newer than the version %d this "
                "cltrain reads: resume it with the cltrain that wrote it, or a newer one\n", path, (long long)version,
                RUN_META_VERSION);
        return 1;
    }
    if (integer(text, path, "epoch", 1, 1000000000, &m->epoch) || integer(text, path, "batch", 0, INT64_MAX, &m->batch) ||
        integer(text, path, "steps", 0, INT64_MAX, &m->steps) || option_int(text, path, "seed", &m->seed) ||
        option_int(text, path, "batch_size", &m->batch_size) || option_int(text, path, "limit_train", &m->limit_train) ||
        integer(text, path, "shuffle", 0, 1, &shuffle) || integer(text, path, "drop_last", 0, 1, &drop) ||
        option_number(text, path, "lr", &m->lr) || option_number(text, path, "momentum", &m->momentum) ||
        option_number(text, path, "weight_decay", &m->weight_decay))
        return 1;
    /* version 1 has no target: both stay 0 */
    if (version >= 2 && (option_int(text, path, "target_epochs", &m->target_epochs) ||
                         option_int(text, path, "target_steps", &m->target_steps)))
        return 1;
    if (version >= 2 && !m->target_epochs == !m->target_steps) return bad(path, "target_epochs\" or \"target_steps");
    if (version >= 3 && parse_learning(text, path, &m->learn)) return 1;
    m->shuffle = (int)shuffle;
    m->drop_last = (int)drop;
    m->data = string_of(text, "data");
    if (!m->data) return bad(path, "data");
    int64_t layout = CLT_LAYOUT_AUTO, coarse = 0;
    if (version >= 4 && (integer(text, path, "layout", 0, 2, &layout) || integer(text, path, "coarse", 0, 1, &coarse)))
        return 1;
    m->layout = (int)layout;
    m->coarse = (int)coarse;
    if (version >= 4 && !(m->test_data = string_of(text, "test_data"))) return bad(path, "test_data");
    if (version >= 4 && !(m->normalize = string_of(text, "normalize"))) return bad(path, "normalize");
    if (version >= 4 && !(m->augment = string_of(text, "augment"))) return bad(path, "augment");
    if (version >= 4 && option_number(text, path, "val_split", &m->val_split)) return 1;
    if (version >= 4 && (option_int(text, path, "image_size", &m->image_size) ||
                         option_int(text, path, "channels", &m->channels)))
        return 1;
    if (value_of(text, "precision")) {
        char *p = string_of(text, "precision");
        int ok = p && (!strcmp(p, "tf32") || !strcmp(p, "fp32"));
        m->precision = ok && !strcmp(p, "fp32") ? CLT_PRECISION_FP32 : CLT_PRECISION_DEFAULT;
        free(p);
        if (!ok) return bad(path, "precision");
    }
    return 0;
}
