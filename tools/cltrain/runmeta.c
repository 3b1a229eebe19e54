#include "runmeta.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json.h"

void run_meta_format(const run_meta *m, char *buf, size_t cap)
{
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    if (f) {
        json_string(f, m->data);
        fclose(f);
    }
    snprintf(buf, cap,
             "{\"format\": \"cltrain-run\", \"version\": 1, \"epoch\": %lld, \"batch\": %lld, \"steps\": %lld, "
             "\"seed\": %lld, \"batch_size\": %lld, \"limit_train\": %lld, \"shuffle\": %d, \"drop_last\": %d, "
             "\"lr\": %.9g, \"momentum\": %.9g, \"weight_decay\": %.9g, \"data\": %s}",
             (long long)m->epoch, (long long)m->batch, (long long)m->steps, (long long)m->seed,
             (long long)m->batch_size, (long long)m->limit_train, m->shuffle, m->drop_last, m->lr, m->momentum,
             m->weight_decay, data ? data : "\"\"");
    free(data);
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

static int number(const char *text, const char *path, const char *key, double lo, double hi, double *out)
{
    const char *v = value_of(text, key);
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : NAN;
    if (!v || end == v || errno || !isfinite(d) || d < lo || d > hi || (*end != ',' && *end != '}')) {
        fprintf(stderr, "cltrain: %s: checkpoint metadata has no valid \"%s\" (expected %g..%g)\n", path, key, lo, hi);
        return 1;
    }
    *out = d;
    return 0;
}

int run_meta_parse(const char *text, const char *path, run_meta *m)
{
    memset(m, 0, sizeof *m);
    const char *fmt = value_of(text, "format");
    if (!fmt || strncmp(fmt, "\"cltrain-run\"", 13) != 0) {
        fprintf(stderr, "cltrain: %s: checkpoint metadata is not a cltrain run record\n", path);
        return 1;
    }
    double v[11];
    static const char *keys[11] = {"epoch", "batch", "steps", "seed", "batch_size", "limit_train", "shuffle",
                                   "drop_last", "lr", "momentum", "weight_decay"};
    static const double lo[11] = {1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    static const double hi[11] = {1e9, 1e12, 1e15, 9.2e18, 1 << 20, 2147483647, 1, 1, 1e6, 0.999999, 1e6};
    for (int i = 0; i < 11; i++)
        if (number(text, path, keys[i], lo[i], hi[i], &v[i])) return 1;
    m->epoch = (int64_t)v[0], m->batch = (int64_t)v[1], m->steps = (int64_t)v[2], m->seed = (int64_t)v[3];
    m->batch_size = (int64_t)v[4], m->limit_train = (int64_t)v[5], m->shuffle = (int)v[6], m->drop_last = (int)v[7];
    m->lr = v[8], m->momentum = v[9], m->weight_decay = v[10];
    const char *d = value_of(text, "data");
    size_t n = 0;
    if (d && *d == '"') {
        for (d++; *d && *d != '"' && n + 1 < sizeof m->data; d++) {
            if (*d == '\\' && d[1]) d++; /* our own writer escapes only \\ and \" here */
            m->data[n++] = *d;
        }
    }
    if (!d || *d != '"') {
        fprintf(stderr, "cltrain: %s: checkpoint metadata has no valid \"data\"\n", path);
        return 1;
    }
    m->data[n] = 0;
    return 0;
}
