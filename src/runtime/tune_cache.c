#include "runtime/tune_cache.h"
#include "runtime/device_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/atomic_file.h"
#include "core/hash.h"

#define TUNE_FORMAT "cltrain-tune "
#define TUNE_VERSION 2
#define STR_(x) #x
#define STR(x) STR_(x)
#define TUNE_MAGIC TUNE_FORMAT STR(TUNE_VERSION) " "
#define TUNE_FILE_MAX (1u << 20)

struct clt_tune_entry {
    char key[CLT_TUNE_KEY_MAX];
    char value[CLT_TUNE_VALUE_MAX];
    int measured; /* by this device object (not read from the file): CLT_TUNE_AGAIN looks up only these */
};

/* What makes a measurement valid for reuse, on one line. */
static void identity(const clt_device *dev, char *out, size_t cap)
{
    const clt_device_info *in = &dev->info;
    snprintf(out, cap, "%s|%s|%s|%s|%s|%s", CLTRAIN_VERSION, in->name, in->vendor, in->driver_version,
             in->platform, in->platform_version);
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

static void file_path(const clt_device *dev, const char *id, char *path, size_t cap)
{
    snprintf(path, cap, "%s/tune-%016llx.txt", dev->cache_dir,
             (unsigned long long)clt_hash(CLT_HASH_INIT, id, strlen(id)));
}

static struct clt_tune_entry *find(clt_device *dev, const char *key)
{
    for (int i = 0; i < dev->n_tune; i++)
        if (strcmp(dev->tune[i].key, key) == 0) return &dev->tune[i];
    return NULL;
}

/* Sets key = value in memory (replacing); measured: not from the file. */
static clt_status put(clt_device *dev, const char *key, const char *value, int measured)
{
    struct clt_tune_entry *e = find(dev, key);
    if (!e) {
        CLT_TRY(clt_grow((void **)&dev->tune, dev->n_tune, &dev->cap_tune, sizeof *dev->tune, 16, "tuning cache"));
        e = &dev->tune[dev->n_tune++];
        snprintf(e->key, sizeof e->key, "%s", key);
    }
    snprintf(e->value, sizeof e->value, "%s", value);
    e->measured = measured;
    return CLT_OK;
}

static int printable(const char *s)
{
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e) return 0;
    return 1;
}

/* Merges the file's entries into memory: a value this device object
 * measured wins, the file's replaces one read before (another process, or
 * another device object, may have measured it again since: CLTRAIN_TUNE=
 * again); a file of another identity is logged when `warn`. */
static void load_file(clt_device *dev, int warn)
{
    char id[1536], path[1200];
    identity(dev, id, sizeof id);
    file_path(dev, id, path, sizeof path);
    unsigned char *data;
    size_t n;
    if (clt_read_file(path, TUNE_FILE_MAX, &data, &n) != CLT_OK) {
        clt_clear_error();
        return;
    }
    char *text = (char *)data, *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    size_t ml = strlen(TUNE_MAGIC);
    size_t fl = strlen(TUNE_FORMAT);
    if (line && !strncmp(line, TUNE_FORMAT, fl) && line[fl] >= '1' && line[fl] < '0' + TUNE_VERSION &&
        line[fl + 1] == ' ') {
        clt_device_log(dev, 0, "tuning cache %s: an older format; measured again", path);
        free(data);
        return;
    }
    if (!line || strncmp(line, TUNE_MAGIC, ml) != 0 || strcmp(line + ml, id) != 0) {
        if (warn) clt_device_log(dev, 2, "tuning cache %s: not this device's or version's; ignored", path);
        free(data);
        return;
    }
    while ((line = strtok_r(NULL, "\n", &save))) {
        char *tab = strchr(line, '\t');
        if (!tab || tab == line || (size_t)(tab - line) >= CLT_TUNE_KEY_MAX || strlen(tab + 1) >= CLT_TUNE_VALUE_MAX ||
            strchr(tab + 1, '\t'))
            continue; /* not a line this file format writes */
        *tab = 0;
        if (!printable(line) || !printable(tab + 1)) continue;
        const struct clt_tune_entry *e = find(dev, line);
        if ((!e || !e->measured) && put(dev, line, tab + 1, 0) != CLT_OK) {
            clt_clear_error(); /* out of memory: the entries so far are kept */
            break;
        }
    }
    free(data);
}

static void ensure_loaded(clt_device *dev)
{
    if (dev->tune_loaded) return;
    dev->tune_loaded = 1;
    if (dev->cache_enabled) load_file(dev, 1);
}

int clt_tune_lookup(clt_device *dev, const char *key, char *value, size_t cap)
{
    ensure_loaded(dev);
    struct clt_tune_entry *e = find(dev, key);
    if (!e || (dev->settings.tune == CLT_TUNE_AGAIN && !e->measured)) return 0;
    snprintf(value, cap, "%s", e->value);
    return 1;
}

static clt_status write_file(clt_device *dev)
{
    char id[1536], path[1200];
    identity(dev, id, sizeof id);
    file_path(dev, id, path, sizeof path);
    size_t cap = strlen(TUNE_MAGIC) + strlen(id) + 2 + (size_t)dev->n_tune * (CLT_TUNE_KEY_MAX + CLT_TUNE_VALUE_MAX + 2);
    char *buf = malloc(cap);
    if (!buf) return clt_fail(CLT_ERR_NO_MEMORY, "tuning cache");
    size_t len = (size_t)snprintf(buf, cap, "%s%s\n", TUNE_MAGIC, id);
    for (int i = 0; i < dev->n_tune; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s\t%s\n", dev->tune[i].key, dev->tune[i].value);
    /* past the size a load accepts, a file would lose every entry */
    clt_status s = len > TUNE_FILE_MAX ? clt_fail(CLT_ERR_IO, "%s would exceed %u bytes", path, TUNE_FILE_MAX)
                                       : clt_mkdir_p(dev->cache_dir);
    if (s == CLT_OK) s = clt_write_file_atomic(path, buf, len);
    free(buf);
    return s;
}

clt_status clt_tune_store(clt_device *dev, const char *key, const char *value)
{
    if (strlen(key) >= CLT_TUNE_KEY_MAX || strlen(value) >= CLT_TUNE_VALUE_MAX || !printable(key) ||
        !printable(value) || strchr(key, '\t') || strchr(value, '\t'))
        return clt_fail(CLT_ERR_INTERNAL, "tuning cache: bad entry \"%s\" = \"%s\"", key, value);
    ensure_loaded(dev);
    if (!dev->cache_enabled) return put(dev, key, value, 1);
    load_file(dev, 0); /* another process's entries since, merged */
    CLT_TRY(put(dev, key, value, 1));
    if (write_file(dev) != CLT_OK) {
        if (!dev->tune_unkept++) snprintf(dev->unkept_why, sizeof dev->unkept_why, "%s", clt_last_error());
        char what[CLT_TUNE_KEY_MAX + 16];
        snprintf(what, sizeof what, "tuning of %s", key);
        clt_cache_store_failed(dev, what);
    }
    return CLT_OK;
}

void clt_tune_free(clt_device *dev)
{
    free(dev->tune);
    dev->tune = NULL;
    dev->n_tune = dev->cap_tune = 0;
    dev->tune_loaded = 0;
}

int clt_tune_wanted(const clt_device *dev, int cpu_only)
{
    int mode = dev->settings.tune;
    if (mode == CLT_TUNE_OFF) return 0;
    return mode != CLT_TUNE_AUTO || (dev->cache_enabled && (!cpu_only || dev->info.type == CLT_DEVICE_CPU));
}

void clt_tune_hold_begin(clt_device *dev) { dev->cache_hold++; }

void clt_tune_hold_end(clt_device *dev) { dev->cache_hold--; }

void clt_tune_cut(clt_device *dev) { dev->tune_cut = 1; }

void clt_tune_outcome(const clt_device *dev, clt_tune_report *out)
{
    out->cache_enabled = dev->cache_enabled;
    out->cut = dev->tune_cut;
    out->unkept = dev->tune_unkept;
    out->unkept_why = dev->unkept_why;
    out->cache_dir = dev->cache_dir;
}

void clt_tune_announce(clt_device *dev)
{
    if (dev->tune_announced) return;
    dev->tune_announced = 1;
    /* where the choices go: a cache that cannot be written was reported (or
     * is now, once) and keeps nothing */
    const char *where = dev->cache_enabled ? dev->cache_dir : "memory only; the cache is off";
    if (dev->cache_enabled && clt_cache_check(dev) != CLT_OK) {
        clt_cache_store_failed(dev, "the tuning");
        where = "memory only; the cache cannot be written";
    }
    clt_device_log(dev, 1,
                   "device %d (%s): tuning the convolution kernels for its shapes, once per device and "
                   "driver (kept in %s; CLTRAIN_TUNE=0 skips it)",
                   dev->info.index, dev->info.name, where);
}
