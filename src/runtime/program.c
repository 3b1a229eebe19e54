/* Program build through the on-disk binary cache.
 *
 * Cache entry layout (little-endian, one file per key):
 *   "CLTRAINB" | u32 format | u32 key_len | u64 bin_len | u64 checksum |
 *   key bytes | binary bytes
 * The checksum covers key and binary; the key is stored whole and compared,
 * so a hash collision or a stale or torn entry is never loaded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/hash.h"
#include "runtime/device.h"
#include "runtime/device_impl.h"

#define CACHE_MAGIC "CLTRAINB"
#define CACHE_FORMAT 1u
#define CACHE_HEADER 32

clt_status clt_cache_configure(clt_device *dev)
{
    dev->cache_enabled = 0;
    dev->cache_dir[0] = 0;
    const char *flag = getenv("CLTRAIN_CACHE");
    if (flag && strcmp(flag, "0") != 0 && strcmp(flag, "1") != 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "CLTRAIN_CACHE=\"%s\": expected 0 (off) or 1 (on)", flag);
    if (flag && strcmp(flag, "0") == 0) return CLT_OK;
    const char *dir = getenv("CLTRAIN_CACHE_DIR");
    int n;
    if (dir && dir[0]) {
        n = snprintf(dev->cache_dir, sizeof dev->cache_dir, "%s", dir);
    } else if ((dir = getenv("XDG_CACHE_HOME")) && dir[0] == '/') {
        n = snprintf(dev->cache_dir, sizeof dev->cache_dir, "%s/cltrain", dir);
    } else if ((dir = getenv("HOME")) && dir[0]) {
        n = snprintf(dev->cache_dir, sizeof dev->cache_dir, "%s/.cache/cltrain", dir);
    } else {
        return CLT_OK; /* nowhere to cache: build every time */
    }
    if (n < 0 || (size_t)n >= sizeof dev->cache_dir)
        return clt_fail(CLT_ERR_INVALID_ARG, "program cache directory path too long: %s", dir);
    dev->cache_enabled = 1;
    return CLT_OK;
}

clt_status clt_cache_check(const clt_device *dev)
{
    if (!dev->cache_enabled) return clt_fail(CLT_ERR_IO, "the cache is off");
    CLT_TRY(clt_mkdir_p(dev->cache_dir));
    struct stat st;
    /* mkdir accepts an existing file of that name; root passes access() on
     * most files, so the directory test comes first */
    if (stat(dev->cache_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return clt_fail(CLT_ERR_IO, "cache directory %s is not a directory", dev->cache_dir);
    if (access(dev->cache_dir, W_OK | X_OK) != 0)
        return clt_fail(CLT_ERR_IO, "cache directory %s cannot be written: %s", dev->cache_dir, strerror(errno));
    return CLT_OK;
}

void clt_cache_store_failed(clt_device *dev, const char *what)
{
    /* A cache that cannot be written costs time, not correctness. */
    if (!dev->cache_warned) {
        dev->cache_warned = 1;
        clt_device_log(dev, 2,
                       "device %d: cannot store %s in the cache (%s); what is not kept is compiled and tuned "
                       "again on every run: set CLTRAIN_CACHE_DIR to a writable directory",
                       dev->info.index, what, clt_last_error());
    } else {
        clt_device_log(dev, 0, "cache: cannot store %s: %s", what, clt_last_error());
    }
    clt_clear_error();
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The key names everything that makes a binary valid for reuse. */
static char *make_key(const clt_device *dev, const char *source, size_t length, const char *options)
{
    const clt_device_info *in = &dev->info;
    uint64_t h = clt_hash(CLT_HASH_INIT, source, length);
    size_t cap = 2048 + strlen(options);
    char *key = malloc(cap);
    if (!key) return NULL;
    snprintf(key, cap,
             "cltrain %s\noptions %s\ndevice %s\nvendor %s\ndriver %s\ndevice-version %s\n"
             "platform %s\nplatform-version %s\nsource %zu %016llx\n",
             CLTRAIN_VERSION, options, in->name, in->vendor, in->driver_version,
             in->opencl_version, in->platform, in->platform_version, length,
             (unsigned long long)h);
    return key;
}

static void entry_path(const clt_device *dev, const char *key, char *path, size_t cap)
{
    uint64_t h = clt_hash(CLT_HASH_INIT, key, strlen(key));
    snprintf(path, cap, "%s/%016llx.bin", dev->cache_dir, (unsigned long long)h);
}

static int build(clt_device *dev, cl_program prog, const char *options)
{
    return clBuildProgram(prog, 1, &dev->id, options, NULL, NULL);
}

/* Loads a cached binary: 1 = loaded, 0 = no entry, -1 = rejected. */
static int cache_load(clt_device *dev, const char *label, const char *key, const char *path,
                      const char *options, cl_program *out)
{
    unsigned char *data;
    size_t size;
    if (clt_read_file(path, 0, &data, &size) != CLT_OK) {
        clt_clear_error();
        return 0;
    }
    const char *why = NULL;
    size_t klen = strlen(key);
    if (size < CACHE_HEADER || memcmp(data, CACHE_MAGIC, 8) != 0) {
        why = "bad header";
    } else if (get_u32(data + 8) != CACHE_FORMAT) {
        why = "other format version";
    } else {
        uint64_t key_len = get_u32(data + 12), bin_len = get_u64(data + 16);
        if (key_len != klen || bin_len == 0 || bin_len > size ||
            CACHE_HEADER + key_len + bin_len != size)
            why = "sizes do not match the file";
        else if (memcmp(data + CACHE_HEADER, key, klen) != 0)
            why = "key mismatch";
        else if (clt_hash(CLT_HASH_INIT, data + CACHE_HEADER, size - CACHE_HEADER) != get_u64(data + 24))
            why = "checksum mismatch";
    }
    if (!why) {
        const unsigned char *bin = data + CACHE_HEADER + klen;
        size_t bin_len = size - CACHE_HEADER - klen;
        cl_int err, bin_status;
        cl_program prog = clCreateProgramWithBinary(dev->ctx, 1, &dev->id, &bin_len, &bin,
                                                    &bin_status, &err);
        if (!prog || err != CL_SUCCESS || bin_status != CL_SUCCESS) {
            if (prog) clReleaseProgram(prog);
            why = "driver refused the binary";
        } else if (build(dev, prog, options) != CL_SUCCESS) {
            clReleaseProgram(prog);
            why = "binary failed to build";
        } else {
            *out = prog;
        }
    }
    free(data);
    if (why) {
        dev->stats.cache_rejects++;
        clt_device_log(dev, 2, "program cache: entry %s for %s rejected (%s); rebuilding", path,
                       label, why);
        return -1;
    }
    dev->stats.cache_hits++;
    clt_device_log(dev, 0, "program cache: %s loaded from %s", label, path);
    return 1;
}

/* Stores prog's binary under key, timed in the debug log: on PoCL, asking
 * for the binary compiles every kernel of the program, which can take
 * longer than the build. */
static void cache_store(clt_device *dev, const char *label, const char *key, const char *path,
                        cl_program prog)
{
    double t0 = clt_now();
    size_t bin_len = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof bin_len, &bin_len, NULL) != CL_SUCCESS ||
        bin_len == 0)
        return; /* the driver offers no binary: nothing to cache */
    size_t klen = strlen(key);
    size_t total = CACHE_HEADER + klen + bin_len;
    unsigned char *buf = malloc(total);
    if (!buf) return;
    unsigned char *bin = buf + CACHE_HEADER + klen;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
        free(buf);
        return;
    }
    memcpy(buf, CACHE_MAGIC, 8);
    put_u32(buf + 8, CACHE_FORMAT);
    put_u32(buf + 12, (uint32_t)klen);
    put_u64(buf + 16, bin_len);
    memcpy(buf + CACHE_HEADER, key, klen);
    put_u64(buf + 24, clt_hash(CLT_HASH_INIT, buf + CACHE_HEADER, total - CACHE_HEADER));
    clt_status s = clt_mkdir_p(dev->cache_dir);
    if (s == CLT_OK) s = clt_write_file_atomic(path, buf, total);
    free(buf);
    if (s != CLT_OK) {
        char what[160];
        snprintf(what, sizeof what, "program %s", label);
        clt_cache_store_failed(dev, what);
        return;
    }
    dev->stats.cache_stores++;
    clt_device_log(dev, 0, "program cache: %s stored in %.2f s", label, clt_now() - t0);
}

/* Remembers a program built while dev->cache_hold is set, for
 * clt_program_keep; 0 when out of memory (then it is stored now). */
static int hold(clt_device *dev, const char *label, char *key, cl_program prog)
{
    if (clt_grow((void **)&dev->held, dev->n_held, &dev->cap_held, sizeof *dev->held, 16, "held programs") !=
        CLT_OK) {
        clt_clear_error();
        return 0;
    }
    clt_held_program *h = &dev->held[dev->n_held++];
    clRetainProgram(prog);
    h->program = prog;
    h->key = key;
    snprintf(h->label, sizeof h->label, "%s", label);
    return 1;
}

static clt_status build_failure(clt_device *dev, cl_program prog, const char *label, cl_int err)
{
    size_t n = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, dev->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n) {
        log = malloc(n + 1);
        if (log && clGetProgramBuildInfo(prog, dev->id, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS)
            log[n] = 0;
        else if (log)
            log[0] = 0;
    }
    clt_status s = clt_fail(CLT_ERR_BUILD, "building %s for device %d (%s) failed: %s (%d)\n%s", label,
                            dev->info.index, dev->info.name, clt_cl_error_name(err), (int)err,
                            log && log[0] ? log : "(the driver gave no build log)");
    free(log);
    return s;
}

clt_status clt_program_build(clt_device *dev, const char *label, const char *source, size_t length,
                             const char *options, cl_program *out)
{
    *out = NULL;
    char *key = NULL;
    char path[1200] = "";
    if (dev->cache_enabled) {
        key = make_key(dev, source, length, options);
        if (!key) return clt_fail(CLT_ERR_NO_MEMORY, "program cache key");
        entry_path(dev, key, path, sizeof path);
        if (cache_load(dev, label, key, path, options, out) == 1) {
            free(key);
            return CLT_OK;
        }
    }
    cl_int err;
    cl_program prog = clCreateProgramWithSource(dev->ctx, 1, &source, &length, &err);
    if (!prog) {
        free(key);
        return clt_cl_fail(err, "clCreateProgramWithSource");
    }
    double t0 = clt_now();
    err = build(dev, prog, options);
    if (err != CL_SUCCESS) {
        clt_status s = build_failure(dev, prog, label, err);
        clReleaseProgram(prog);
        free(key);
        return s;
    }
    dev->stats.built++;
    clt_device_log(dev, 0, "program %s (%s) built for device %d in %.2f s", label, options, dev->info.index,
                   clt_now() - t0);
    if (key && dev->cache_hold > 0 && hold(dev, label, key, prog)) key = NULL; /* the entry owns it */
    if (key) cache_store(dev, label, key, path, prog);
    free(key);
    *out = prog;
    return CLT_OK;
}

void clt_program_keep(clt_device *dev, cl_program prog)
{
    for (int i = 0; i < dev->n_held; i++) {
        clt_held_program *h = &dev->held[i];
        if (h->program != prog) continue;
        char path[1200];
        entry_path(dev, h->key, path, sizeof path);
        cache_store(dev, h->label, h->key, path, prog);
        clReleaseProgram(h->program);
        free(h->key);
        dev->held[i] = dev->held[--dev->n_held];
        return;
    }
}

void clt_program_drop_held(clt_device *dev)
{
    for (int i = 0; i < dev->n_held; i++) {
        clReleaseProgram(dev->held[i].program);
        free(dev->held[i].key);
    }
    free(dev->held);
    dev->held = NULL;
    dev->n_held = dev->cap_held = 0;
}
