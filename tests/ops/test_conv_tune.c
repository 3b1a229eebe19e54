/* The lanes kernels' tuner and its cache (src/ops/conv_tune.c,
 * src/runtime/tune_cache.c): a plan tunes every lanes pass once, logs one
 * notice, and keeps the choices in the cache file; another device object
 * reads them back without measuring; another batch of the same class
 * reuses them in memory; damaged values, junk lines and a file of another
 * identity are ignored and replaced; CLTRAIN_TUNE off measures nothing and
 * writes nothing; without a cache only "on" measures, in memory; a pass is
 * timed when a plan first needs it. A tuned
 * forward and backward-data equal the rule-based ones bit for bit (each
 * lane sums in the same order whatever the block), backward-weights within
 * rounding. Only the winners' program binaries go to the program cache.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tmpdir.h"
#include "runtime/device_impl.h"
#include "ops/conv_algo.h"
#include "ops/conv_lanes.h"
#include "runtime/device.h"
#include "runtime/launch.h"
#include "runtime/tune_cache.h"

static char dir[256];

typedef struct log_count {
    int notices, measured, warnings;
    int lanes_built, lanes_stored;   /* conv_lanes programs built, and their binaries stored */
    int direct_built, direct_stored; /* the same for conv_direct */
} log_count;

/* Counts program's builds ("program NAME (options) built for device ...")
 * and binary stores ("program cache: NAME stored in ...") in a debug line. */
static void count_program(const char *msg, const char *name, int *built, int *stored)
{
    size_t n = strlen(name);
    if (!strncmp(msg, "program ", 8) && !strncmp(msg + 8, name, n) && !strncmp(msg + 8 + n, " (", 2) &&
        strstr(msg, " built for device "))
        ++*built;
    if (!strncmp(msg, "program cache: ", 15) && !strncmp(msg + 15, name, n) && !strncmp(msg + 15 + n, " stored", 7))
        ++*stored;
}

static void count_log(void *user, int level, const char *msg)
{
    log_count *c = user;
    if (level == 1 && strstr(msg, "tuning the convolution kernels")) c->notices++;
    if (level == 0 && strstr(msg, "tuning device")) c->measured++;
    if (level == 0) {
        count_program(msg, "conv_lanes", &c->lanes_built, &c->lanes_stored);
        count_program(msg, "conv_direct", &c->direct_built, &c->direct_stored);
    }
    if (level == 2) c->warnings++;
}

/* A device opened with CLTRAIN_CACHE_DIR = dir (or the cache off) and tune. */
static clt_device *open_dev(int cache, int tune, log_count *lc)
{
    setenv("CLTRAIN_CACHE_DIR", dir, 1);
    if (!cache) setenv("CLTRAIN_CACHE", "0", 1);
    clt_device *dev;
    REQUIRE_OK(clt_device_open(0, &dev));
    unsetenv("CLTRAIN_CACHE");
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_algo = CLT_CONV_ALGO_LANES;
    s.tune = tune;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    memset(lc, 0, sizeof *lc);
    clt_device_set_log(dev, count_log, lc);
    return dev;
}

/* The tuning file in dir (path into out); 0 when there is none. */
static int tune_file(char *out, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "tune-", 5) && (found = 1)) snprintf(out, cap, "%s/%s", dir, e->d_name);
    closedir(d);
    return found;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    (void)n;
    fclose(f);
    return buf;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    REQUIRE_OK(f ? CLT_OK : CLT_ERR_IO);
    fputs(text, f);
    fclose(f);
}

/* Lines after the header that look like "key<TAB>value". */
static int entries(const char *text)
{
    int n = 0;
    for (const char *p = strchr(text, '\n'); p && p[1]; p = strchr(p + 1, '\n'))
        if (strchr(p + 1, '\t')) n++;
    return n;
}

/* LeNet conv2's shape at a small batch: all three passes run lanes. */
static clt_conv_plan *plan_for(clt_device *dev, int n)
{
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, n, 20, 13, 13, 50, 5, 1, 0));
    clt_conv_plan *plan = NULL;
    REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
    return plan;
}

/* A device on the test's cache directory, tuning on auto, into *dev, and
 * its plan for g: measured and kept, or taken from the tuning file. */
static clt_conv_plan *open_plan(const clt_conv_geom *g, log_count *lc, clt_device **dev)
{
    *dev = open_dev(1, CLT_TUNE_AUTO, lc);
    clt_conv_plan *plan = NULL;
    REQUIRE_OK(clt_conv_plan_ensure(*dev, g, &plan));
    return plan;
}

static void close_plan(clt_conv_plan *plan, clt_device *dev)
{
    clt_conv_plan_destroy(plan);
    clt_device_destroy(dev);
}

static int all_tuned(const clt_conv_plan *p, int want)
{
    for (int i = 0; i < CLT_CONV_PASSES; i++)
        if (p->lanes.tuned[i] != want) return 0;
    return 1;
}

static int same_cfgs(const clt_conv_plan *a, const clt_conv_plan *b)
{
    return memcmp(a->lanes.cfg, b->lanes.cfg, sizeof a->lanes.cfg) == 0;
}

static void test_tune_and_reuse(void)
{
    log_count lc;
    clt_device *dev = open_dev(1, CLT_TUNE_AUTO, &lc);
    clt_conv_plan *first = plan_for(dev, 40);
    CHECK(all_tuned(first, 1), "a pass was not tuned");
    CHECK(lc.notices == 1 && lc.measured >= 6, "notices %d, measurements %d", lc.notices, lc.measured);
    clt_program_stats ps;
    clt_device_program_stats(dev, &ps);
    /* the candidates' binaries held as built, then one winner per pass
     * stored: the other programs' stores and at most one per pass */
    CHECK(lc.lanes_built > CLT_CONV_PASSES && lc.lanes_stored <= CLT_CONV_PASSES &&
              ps.cache_stores <= ps.built - lc.lanes_built + CLT_CONV_PASSES,
          "the losers' binaries were stored: built %d (%d conv_lanes), stored %d (%d conv_lanes)", ps.built,
          lc.lanes_built, ps.cache_stores, lc.lanes_stored);
    char path[512];
    CHECK(tune_file(path, sizeof path), "no tuning file in %s", dir);
    char *text = read_text(path);
    CHECK(text && !strncmp(text, "cltrain-tune 2 ", 15) && entries(text) == 3, "tuning file:\n%s", text ? text : "");
    free(text);

    /* Another batch of the class: the choices from memory, nothing measured. */
    int measured = lc.measured;
    clt_conv_plan *other = plan_for(dev, 57);
    CHECK(all_tuned(other, 1) && same_cfgs(first, other) && lc.measured == measured && lc.notices == 1,
          "batch 57 measured again (%d -> %d)", measured, lc.measured);
    clt_conv_plan_destroy(other);
    clt_device_destroy(dev);

    /* Another device object: the choices from the file, the winners'
     * programs from the program cache. */
    dev = open_dev(1, CLT_TUNE_AUTO, &lc);
    other = plan_for(dev, 40);
    CHECK(all_tuned(other, 1) && same_cfgs(first, other) && lc.measured == 0 && lc.notices == 0,
          "the cached choices were measured again (%d)", lc.measured);
    for (int i = 0; i < CLT_CONV_PASSES; i++) {
        char spec[64];
        clt_conv_lanes_program(i, &other->lanes.cfg[i], spec, sizeof spec);
        CHECK_OK(clt_device_build_program(dev, spec));
    }
    clt_device_program_stats(dev, &ps);
    CHECK(ps.built == 0 && ps.cache_hits > 0, "the winners' programs were not cached: built %d, hits %d", ps.built,
          ps.cache_hits);
    clt_conv_plan_destroy(other);
    clt_device_destroy(dev);
    clt_conv_plan_destroy(first);

    /* CLTRAIN_TUNE=again: every pass measured again, once per device object
     * (another batch of the class then comes from memory); the file keeps
     * the entries of other shapes. */
    static const char other_shape[] = "lanes fwd c3 h9 w9 co5 k3 s1 p0 np16\tvw8 rm4 nv2\n";
    text = read_text(path);
    char *grown = text ? calloc(1, strlen(text) + sizeof other_shape) : NULL;
    REQUIRE_OK(grown ? CLT_OK : CLT_ERR_NO_MEMORY);
    strcat(strcat(grown, text), other_shape);
    write_text(path, grown);
    free(grown), free(text);
    dev = open_dev(1, CLT_TUNE_AGAIN, &lc);
    other = plan_for(dev, 40);
    CHECK(all_tuned(other, 1) && lc.notices == 1 && lc.measured >= 6, "again: notices %d, measured %d", lc.notices,
          lc.measured);
    measured = lc.measured;
    clt_conv_plan *more = plan_for(dev, 57);
    CHECK(all_tuned(more, 1) && lc.measured == measured, "again: batch 57 measured again (%d -> %d)", measured,
          lc.measured);
    text = read_text(path);
    CHECK(text && entries(text) == 4 && strstr(text, "lanes fwd c3 h9 w9 co5"), "again: tuning file:\n%s",
          text ? text : "");
    free(text);
    clt_conv_plan_destroy(more);
    clt_conv_plan_destroy(other);
    clt_device_destroy(dev);
}

/* Two device objects on one cache, as a training run beside `cltrain tune
 * --again`: a value one measured again is not undone when the other,
 * which read the file before, stores a choice of its own; the other then
 * finds the new value. */
static void test_again_beside(void)
{
    char v[CLT_TUNE_VALUE_MAX];
    log_count la, lb;
    clt_device *a = open_dev(1, CLT_TUNE_AUTO, &la), *b = open_dev(1, CLT_TUNE_AGAIN, &lb);
    CHECK_OK(clt_tune_store(a, "test key 1", "old"));
    CHECK(clt_tune_lookup(a, "test key 1", v, sizeof v) && !strcmp(v, "old"), "lookup: %s", v);
    CHECK(!clt_tune_lookup(b, "test key 1", v, sizeof v), "again: a value from the file was looked up");
    CHECK_OK(clt_tune_store(b, "test key 1", "new"));
    clt_device_destroy(a);
    clt_device *c = open_dev(1, CLT_TUNE_AUTO, &la);
    CHECK(clt_tune_lookup(c, "test key 1", v, sizeof v) && !strcmp(v, "new"), "after again: %s", v);
    CHECK_OK(clt_tune_store(b, "test key 1", "newer"));
    CHECK_OK(clt_tune_store(c, "test key 2", "other")); /* c read "new" before b stored "newer" */
    char path[512];
    char *text = tune_file(path, sizeof path) ? read_text(path) : NULL;
    CHECK(text && strstr(text, "test key 1\tnewer\n") && strstr(text, "test key 2\tother\n"),
          "the file after a store beside --again:\n%s", text ? text : "");
    free(text);
    CHECK(clt_tune_lookup(c, "test key 1", v, sizeof v) && !strcmp(v, "newer"), "the reader's merged value: %s", v);
    clt_device_destroy(b), clt_device_destroy(c);
}

/* The tuning file at path replaced by text that is not to be read: every
 * pass is measured again, with `warnings` warnings; the file afterwards. */
static char *replaced(const char *path, const char *text, int warnings, const char *what)
{
    write_text(path, text);
    log_count lc;
    clt_device *dev = open_dev(1, CLT_TUNE_AUTO, &lc);
    clt_conv_plan *p = plan_for(dev, 40);
    CHECK(lc.measured >= 6 && lc.warnings == warnings, "%s: measured %d, warnings %d", what, lc.measured, lc.warnings);
    clt_conv_plan_destroy(p);
    clt_device_destroy(dev);
    return read_text(path);
}

/* Damaged values and junk are ignored: the passes are measured again and
 * the file holds valid entries afterwards. */
static void test_damaged(void)
{
    char path[512];
    REQUIRE_OK(tune_file(path, sizeof path) ? CLT_OK : CLT_ERR_NOT_FOUND);
    char *text = read_text(path);
    REQUIRE_OK(text ? CLT_OK : CLT_ERR_IO);
    char *nl = strchr(text, '\n');
    REQUIRE_OK(nl ? CLT_OK : CLT_ERR_FORMAT);
    nl[1] = 0; /* the header alone */
    char bad[4096];
    snprintf(bad, sizeof bad,
             "%slanes fwd c20 h13 w13 co50 k5 s1 p0 np32\tvw7 rm3 nv2\n"
             "lanes bwd-data c20 h13 w13 co50 k5 s1 p0 np32\tvw8 rm99 nv2\n"
             "lanes bwd-weights c20 h13 w13 co50 k5 s1 p0 np32\tvw8 rm3 nv2\n"
             "no tab on this line\n\x01\x02\xff\tjunk\n",
             text);
    write_text(path, bad);
    log_count lc;
    clt_device *dev = open_dev(1, CLT_TUNE_AUTO, &lc);
    clt_conv_plan *p = plan_for(dev, 40);
    CHECK(all_tuned(p, 1) && lc.notices == 1 && lc.measured >= 6, "damaged entries: measured %d", lc.measured);
    for (int i = 0; i < CLT_CONV_PASSES; i++)
        CHECK(clt_conv_lanes_cfg_ok(&p->lanes, i, &p->lanes.cfg[i]), "pass %d took a damaged value", i);
    clt_conv_plan_destroy(p);
    clt_device_destroy(dev);
    char *after = read_text(path);
    CHECK(after && !strstr(after, "vw7") && !strstr(after, "rm99") && !strstr(after, "junk") && entries(after) == 3,
          "the damaged values stayed:\n%s", after ? after : "");

    /* One of an older format (here the valid entries just kept) is not
     * read, without a warning, and is replaced. */
    char old[4096];
    snprintf(old, sizeof old, "%s", after);
    old[13] = '1'; /* "cltrain-tune 2 <identity>" -> 1 */
    free(after);
    after = replaced(path, old, 0, "older format");
    CHECK(after && !strncmp(after, "cltrain-tune 2 ", 15), "older format kept:\n%s", after ? after : "");

    /* A newer format is another identity: */
    old[13] = '3';
    free(after);
    after = replaced(path, old, 1, "newer format");
    CHECK(after && !strncmp(after, "cltrain-tune 2 ", 15), "newer format kept:\n%s", after ? after : "");

    /* A file of another identity is not read, and is replaced. */
    free(after);
    after = replaced(path, "cltrain-tune 2 another device\nlanes fwd c20 h13 w13 co50 k5 s1 p0 np32\tvw8 rm4 nv2\n", 1,
                     "foreign file");
    CHECK(after && !strstr(after, "another device") && entries(after) == 3, "foreign file kept:\n%s", after ? after : "");
    free(after);
    free(text);
}

/* The tuning file at path with the weight gradient's value under key
 * (up to its tab) given the suffix after its block (" ck128"; "" for
 * none), and the block ("vw8 wa2 wb2") unless NULL; a kept block's row
 * of taps (" tr", last) stays. */
static void set_bwdw(const char *path, const char *key, const char *block, const char *suffix)
{
    char *text = read_text(path);
    REQUIRE_OK(text ? CLT_OK : CLT_ERR_IO);
    char *line = strstr(text, key);
    char *tab = line ? strchr(line, '\t') : NULL, *end = tab ? strchr(tab, '\n') : NULL;
    REQUIRE_OK(end ? CLT_OK : CLT_ERR_FORMAT);
    char *ck = strstr(tab, " ck");
    char out[1 << 16];
    if (block) snprintf(out, sizeof out, "%.*s%s%s%s", (int)(tab + 1 - text), text, block, suffix, end);
    else {
        int row = end - tab > 3 && !strncmp(end - 3, " tr", 3) && !strstr(suffix, " tr");
        snprintf(out, sizeof out, "%.*s%s%s%s", (int)((ck && ck < end ? ck : end) - text), text, suffix, row ? " tr" : "",
                 end);
    }
    write_text(path, out);
    free(text);
}

static void set_bwdw_chunks(const char *path, const char *key, const char *suffix) { set_bwdw(path, key, NULL, suffix); }

/* plan_for's weight gradient in the tuning file. */
#define LENET_BWDW "lanes bwd-weights c20 h13 w13 co50 k5 s1 p0 "

/* A kept chunk target is taken as it is; one the tuner would not time,
 * or none (a line kept before the tuner timed them), or phases at stride
 * 1, is damaged: that pass is measured again. */
static void test_chunk_values(void)
{
    char path[512];
    REQUIRE_OK(tune_file(path, sizeof path) ? CLT_OK : CLT_ERR_NOT_FOUND);
    static const char *const damaged[] = {" ck100", "", " ck512 ph"}; /* phases: only at stride 2 */
    log_count lc;
    clt_device *dev;
    clt_conv_plan *p;
    for (size_t i = 0; i < sizeof damaged / sizeof damaged[0]; i++) {
        set_bwdw_chunks(path, LENET_BWDW, damaged[i]);
        dev = open_dev(1, CLT_TUNE_AUTO, &lc);
        p = plan_for(dev, 40);
        int ck = p->lanes.cfg[CLT_CONV_BWD_WEIGHTS].ck;
        /* the block's candidates, then the two fastest at three chunk targets */
        CHECK(all_tuned(p, 1) && lc.measured >= 4 && (ck == 0 || ck == 128 || ck == 256),
              "a kept \"%s\": measured %d, ck %d", damaged[i], lc.measured, ck);
        clt_conv_plan_destroy(p);
        clt_device_destroy(dev);
    }
    set_bwdw_chunks(path, LENET_BWDW, " ck128");
    dev = open_dev(1, CLT_TUNE_AUTO, &lc);
    p = plan_for(dev, 40);
    char what[64];
    clt_conv_lanes_describe(p, CLT_CONV_BWD_WEIGHTS, what, sizeof what);
    /* the tuner may have kept a row of taps (a close second on this 5x5 layer), which stays */
    const char *want = p->lanes.cfg[CLT_CONV_BWD_WEIGHTS].tr ? " ck128 tr tuned" : " ck128 tuned";
    CHECK(all_tuned(p, 1) && lc.measured == 0 && p->lanes.cfg[CLT_CONV_BWD_WEIGHTS].ck == 128 &&
              strstr(what, want),
          "a kept ck128: measured %d, ck %d, \"%s\"", lc.measured, p->lanes.cfg[CLT_CONV_BWD_WEIGHTS].ck, what);
    clt_conv_plan_destroy(p);
    clt_device_destroy(dev);
    /* phases, where the layer has stride 2 */
    clt_conv_geom g2;
    REQUIRE_OK(clt_conv_geom_init(&g2, 40, 8, 9, 9, 16, 3, 2, 1));
    clt_conv_plan *p2 = open_plan(&g2, &lc, &dev);
    clt_conv_lanes_cfg tuned = p2->lanes.cfg[CLT_CONV_BWD_WEIGHTS];
    close_plan(p2, dev);
    set_bwdw_chunks(path, "lanes bwd-weights c8 h9 w9 co16 k3 s2 p1 ", " ck128 ph");
    p2 = open_plan(&g2, &lc, &dev);
    const clt_conv_lanes_cfg *c2 = &p2->lanes.cfg[CLT_CONV_BWD_WEIGHTS];
    CHECK(lc.measured == 0 && c2->ph == 1 && c2->ck == 128 && c2->a == tuned.a && c2->b == tuned.b &&
              c2->tr == tuned.tr,
          "a kept ck128 ph at stride 2: measured %d, ph %d, ck %d", lc.measured, c2->ph, c2->ck);
    close_plan(p2, dev);

    set_bwdw_chunks(path, LENET_BWDW, " ck512"); /* the rule's, as the tuner writes it */
    dev = open_dev(1, CLT_TUNE_AUTO, &lc);
    p = plan_for(dev, 40);
    CHECK(lc.measured == 0 && p->lanes.cfg[CLT_CONV_BWD_WEIGHTS].ck == 0, "a kept ck512: measured %d, ck %d",
          lc.measured, p->lanes.cfg[CLT_CONV_BWD_WEIGHTS].ck);
    clt_conv_plan_destroy(p);
    clt_device_destroy(dev);
}


/* A kept row of taps (cfg.tr) is taken as it is, at stride 1 and at
 * stride 2 in phases; one on a 1x1 layer is damaged. */
static void test_tap_rows(void)
{
    char path[512];
    REQUIRE_OK(tune_file(path, sizeof path) ? CLT_OK : CLT_ERR_NOT_FOUND);
    static const struct {
        int stride;
        const char *key, *suffix;
    } kept[] = {{1, "lanes bwd-weights c8 h9 w9 co16 k3 s1 p1 ", " ck128 tr"},
                {2, "lanes bwd-weights c8 h9 w9 co16 k3 s2 p1 ", " ck128 ph tr"}};
    log_count lc;
    clt_device *dev;
    clt_conv_plan *p;
    clt_conv_geom g;
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        REQUIRE_OK(clt_conv_geom_init(&g, 40, 8, 9, 9, 16, 3, kept[i].stride, 1));
        p = open_plan(&g, &lc, &dev);
        clt_conv_lanes_cfg cand[10], row = {0};
        int n = clt_conv_lanes_candidates(dev, &p->lanes, CLT_CONV_BWD_WEIGHTS, cand, 10);
        for (int c = 0; c < n && !row.tr; c++) row = cand[c];
        CHECK(row.tr == 3, "no row-of-taps candidate among %d at stride %d", n, kept[i].stride);
        close_plan(p, dev);
        char block[64], want[64], what[64];
        snprintf(block, sizeof block, "vw%d wa%d wb%d", row.vw, row.a, row.b);
        snprintf(want, sizeof want, "%s tuned", kept[i].suffix);
        set_bwdw(path, kept[i].key, block, kept[i].suffix);
        p = open_plan(&g, &lc, &dev);
        const clt_conv_lanes_cfg *c = &p->lanes.cfg[CLT_CONV_BWD_WEIGHTS];
        clt_conv_lanes_describe(p, CLT_CONV_BWD_WEIGHTS, what, sizeof what);
        CHECK(lc.measured == 0 && c->tr == 3 && c->ck == 128 && c->ph == (kept[i].stride == 2) && c->a == row.a &&
                  c->b == row.b && strstr(what, want),
              "a kept \"%s%s\": measured %d, \"%s\"", block, kept[i].suffix, lc.measured, what);
        close_plan(p, dev);
    }
    /* a 1x1 layer (here a strided one, as ResNet's projections) has one tap */
    REQUIRE_OK(clt_conv_geom_init(&g, 40, 8, 9, 9, 16, 1, 2, 0));
    p = open_plan(&g, &lc, &dev); /* dev is set by the call: not in one expression */
    close_plan(p, dev);
    set_bwdw_chunks(path, "lanes bwd-weights c8 h5 w5 co16 k1 s1 p0 ", " ck128 tr");
    p = open_plan(&g, &lc, &dev);
    CHECK(lc.measured >= 4 && p->lanes.cfg[CLT_CONV_BWD_WEIGHTS].tr == 0, "a kept tr on a 1x1 layer: measured %d, tr %d",
          lc.measured, p->lanes.cfg[CLT_CONV_BWD_WEIGHTS].tr);
    close_plan(p, dev);
}
/* Off: nothing measured or written; no cache: only "on" measures. */
static void test_modes(void)
{
    char path[512];
    if (tune_file(path, sizeof path)) unlink(path);
    struct {
        int cache, tune, tuned;
    } cases[] = {{1, CLT_TUNE_OFF, 0}, {0, CLT_TUNE_AUTO, 0}, {0, CLT_TUNE_ON, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        log_count lc;
        clt_device *dev = open_dev(cases[i].cache, cases[i].tune, &lc);
        clt_conv_plan *p = plan_for(dev, 40);
        CHECK(all_tuned(p, cases[i].tuned) && (lc.measured > 0) == cases[i].tuned,
              "case %zu: tuned %d, measured %d", i, p->lanes.tuned[0], lc.measured);
        CHECK(!tune_file(path, sizeof path), "case %zu wrote %s", i, path);
        clt_conv_plan_destroy(p);
        clt_device_destroy(dev);
    }
}

/* A pass is tuned when it is first planned: a forward-only plan times the
 * forward alone; the backward passes added later are timed then. */
static void test_lazy_passes(void)
{
    log_count lc;
    clt_device *dev = open_dev(0, CLT_TUNE_ON, &lc); /* no cache: in memory, every pass timed */
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, 40, 20, 13, 13, 50, 5, 1, 0));
    clt_conv_plan *p = NULL;
    REQUIRE_OK(clt_conv_plan_ensure_passes(dev, &g, CLT_CONV_PASS(CLT_CONV_FWD), &p));
    int fwd = lc.measured;
    CHECK(p->lanes.tuned[CLT_CONV_FWD] && !p->lanes.tuned[CLT_CONV_BWD_DATA] && !p->lanes.tuned[CLT_CONV_BWD_WEIGHTS] &&
              fwd > 0,
          "a forward-only plan: tuned %d %d %d, %d timed", p->lanes.tuned[0], p->lanes.tuned[1], p->lanes.tuned[2],
          fwd);
    unsigned backward = CLT_CONV_PASS(CLT_CONV_BWD_DATA) | CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS);
    REQUIRE_OK(clt_conv_plan_ensure_passes(dev, &g, backward, &p));
    CHECK(all_tuned(p, 1) && lc.measured > fwd && lc.notices == 1, "the backward added: %d timed, %d notices",
          lc.measured - fwd, lc.notices);
    clt_conv_plan_destroy(p);
    clt_device_destroy(dev);
}

/* The first lanes pass's output of plan on fixed inputs (host copy). */
static float *run_pass(clt_device *dev, const clt_conv_plan *plan, int pass)
{
    const clt_conv_geom *g = &plan->g;
    size_t nx = (size_t)g->n * g->c * g->h * g->w, nw = (size_t)g->co * g->c * g->k * g->k,
           ny = (size_t)g->n * g->co * g->oh * g->ow;
    size_t sizes[4] = {nx, nw, ny, pass == CLT_CONV_FWD ? ny : pass == CLT_CONV_BWD_DATA ? nx : nw};
    cl_mem m[4];
    for (int i = 0; i < 4; i++) {
        float *h = malloc(sizes[i] * sizeof *h);
        for (size_t j = 0; j < sizes[i]; j++) h[j] = (float)sin(0.37 * (double)j + i);
        cl_int err;
        m[i] = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizes[i] * sizeof *h, h, &err);
        free(h);
        REQUIRE_OK(m[i] ? CLT_OK : CLT_ERR_OPENCL);
    }
    if (pass == CLT_CONV_FWD) CHECK_OK(clt_conv_plan_forward(dev, plan, m[0], m[1], NULL, NULL, m[3]));
    else if (pass == CLT_CONV_BWD_DATA) CHECK_OK(clt_conv_plan_backward(dev, plan, m[0], m[1], m[2], NULL, m[3], NULL, NULL));
    else CHECK_OK(clt_conv_plan_backward(dev, plan, m[0], m[1], m[2], NULL, NULL, m[3], NULL));
    float *out = malloc(sizes[3] * sizeof *out);
    cl_int err = clEnqueueReadBuffer(dev->queue, m[3], CL_TRUE, 0, sizes[3] * sizeof *out, out, 0, NULL, NULL);
    CHECK(err == CL_SUCCESS, "clEnqueueReadBuffer: %d", (int)err);
    for (int i = 0; i < 4; i++) clReleaseMemObject(m[i]);
    return out;
}

static void test_same_results(void)
{
    log_count lc;
    clt_device *dev = open_dev(1, CLT_TUNE_AUTO, &lc);
    clt_conv_plan *tuned = plan_for(dev, 40);
    clt_device_settings s = *clt_device_get_settings(dev);
    s.tune = CLT_TUNE_OFF;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    clt_conv_plan *rule = plan_for(dev, 40);
    size_t n[3] = {(size_t)40 * 50 * 81, (size_t)40 * 20 * 169, (size_t)50 * 20 * 25};
    for (int p = 0; p < CLT_CONV_PASSES; p++) {
        float *a = run_pass(dev, tuned, p), *b = run_pass(dev, rule, p);
        if (p < CLT_CONV_BWD_WEIGHTS)
            CHECK(!memcmp(a, b, n[p] * sizeof *a), "pass %d: tuned and rule-based results differ", p);
        else
            /* sums of 3,240 products in another order: 1.2e-5 was seen
             * between two blocks; an indexing error gives O(1) */
            CHECK(max_rel_err(b, a, n[p]) < 1e-4, "backward-weights: tuned and rule-based differ by %g",
                  max_rel_err(b, a, n[p]));
        free(a);
        free(b);
    }
    clt_conv_plan_destroy(tuned);
    clt_conv_plan_destroy(rule);
    clt_device_destroy(dev);
}

/* The direct forward's tuner (conv_direct_tune.c): LeNet conv1's shape
 * runs the direct forward; its choice (the kernel size a build constant
 * or not) is measured once and kept in the file, read back by another
 * device object without measuring; both programs give the same bits;
 * only the winner's binary is kept. */
static void test_direct_forward(void)
{
    log_count lc;
    clt_device *dev = open_dev(1, CLT_TUNE_AUTO, &lc);
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, 40, 1, 28, 28, 20, 3, 1, 0));
    clt_conv_plan *plan = NULL;
    REQUIRE_OK(clt_conv_plan_ensure_passes(dev, &g, CLT_CONV_PASS(CLT_CONV_FWD), &plan));
    CHECK(plan->algo[CLT_CONV_FWD] == &clt_conv_direct && plan->direct.fwd_tuned, "direct forward not tuned");
    /* both choices built, only the winner's binary kept */
    CHECK(lc.direct_built == 2 && lc.direct_stored == 1, "direct programs: %d built, %d stored", lc.direct_built,
          lc.direct_stored);
    char path[512];
    char *text = tune_file(path, sizeof path) ? read_text(path) : NULL;
    CHECK(text && strstr(text, "direct forward c1 h28 w28 co20 k3 s1 p0\tkc"), "tuning file:\n%s", text ? text : "");
    free(text);
    /* the other choice computes the same bits */
    clt_conv_plan other = *plan;
    other.direct.kc = !plan->direct.kc;
    float *a = run_pass(dev, plan, CLT_CONV_FWD), *b = run_pass(dev, &other, CLT_CONV_FWD);
    CHECK(!memcmp(a, b, (size_t)40 * 20 * 26 * 26 * sizeof *a), "the direct forward with kc %d and %d differ",
          plan->direct.kc, other.direct.kc);
    free(a);
    free(b);
    int kc = plan->direct.kc;
    clt_conv_plan_destroy(plan);
    clt_device_destroy(dev);
    dev = open_dev(1, CLT_TUNE_AUTO, &lc);
    plan = NULL;
    REQUIRE_OK(clt_conv_plan_ensure_passes(dev, &g, CLT_CONV_PASS(CLT_CONV_FWD), &plan));
    CHECK(plan->direct.fwd_tuned && plan->direct.kc == kc && lc.measured == 0 && lc.notices == 0,
          "the kept direct choice was measured again (%d) or changed", lc.measured);
    clt_conv_plan_destroy(plan);
    clt_device_destroy(dev);
}

/* The tuning file's entry for key set to value (NULL: removed). */
static void set_entry(const char *key, const char *value)
{
    char path[512];
    REQUIRE_OK(tune_file(path, sizeof path) ? CLT_OK : CLT_ERR_NOT_FOUND);
    char *text = read_text(path);
    REQUIRE_OK(text ? CLT_OK : CLT_ERR_IO);
    size_t cap = strlen(text) + strlen(key) + 64, n = 0, klen = strlen(key);
    char *out = calloc(1, cap);
    REQUIRE_OK(out ? CLT_OK : CLT_ERR_NO_MEMORY);
    for (char *line = text, *next; *line; line = next) {
        next = strchr(line, '\n');
        next = next ? next + 1 : line + strlen(line);
        if (!strncmp(line, key, klen) && line[klen] == '\t') continue;
        memcpy(out + n, line, (size_t)(next - line));
        n += (size_t)(next - line);
    }
    if (value) snprintf(out + n, cap - n, "%s\t%s\n", key, value);
    write_text(path, out);
    free(out);
    free(text);
}

/* A device as open_dev makes it, its native vector width forced (the
 * direct kernels' vw follows it: 16, or 8 as on AVX2). */
static clt_device *open_width(int width, log_count *lc)
{
    clt_device *dev = open_dev(1, CLT_TUNE_AUTO, lc);
    dev->native_float_width = width;
    return dev;
}

static clt_conv_plan *weights_plan(clt_device *dev, const clt_conv_geom *g)
{
    clt_conv_plan *plan = NULL;
    REQUIRE_OK(clt_conv_plan_ensure_passes(dev, g, CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS), &plan));
    return plan;
}

/* The direct weight gradient's tuner: LeNet conv1's shape runs it. At vw
 * 16 its block (cb 1, 2 or 3 channels) is measured once and kept in the
 * file, then read back by another device object without measuring (a value
 * written there too: the lookup takes it), damaged values measured again;
 * only the winner's binary is kept. At vw 8 cb 1 is the only block:
 * nothing is timed. Every block gives the same weights (cb 1's row pairs
 * add a row's two vectors in another order: the last bits may differ). */
static void test_direct_weights(void)
{
    static const char key[] = "direct backward-weights c1 h28 w28 co20 k3 s1 p0";
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, 24, 1, 28, 28, 20, 3, 1, 0));
    for (int width = 16; width >= 8; width -= 8) {
        set_entry(key, NULL);
        log_count lc;
        clt_device *dev = open_width(width, &lc);
        clt_conv_plan *plan = weights_plan(dev, &g);
        if (plan->algo[CLT_CONV_BWD_WEIGHTS] != &clt_conv_direct) {
            CHECK(0, "LeNet conv1's weight gradient is not direct");
            clt_conv_plan_destroy(plan);
            clt_device_destroy(dev);
            return;
        }
        char path[512], want[64];
        snprintf(want, sizeof want, "%s\tcb%d\n", key, plan->direct.cb);
        char *text = tune_file(path, sizeof path) ? read_text(path) : NULL;
        if (width == 16)
            CHECK(plan->direct.bwdw_tuned && lc.measured == 1 && lc.direct_built == 3 && lc.direct_stored == 1 &&
                      text && strstr(text, want),
                  "vw 16: tuned %d, %d measured, %d programs built, %d stored; tuning file:\n%s",
                  plan->direct.bwdw_tuned, lc.measured, lc.direct_built, lc.direct_stored, text ? text : "");
        else
            CHECK(!plan->direct.bwdw_tuned && plan->direct.cb == 1 && lc.measured == 0 &&
                      !(text && strstr(text, key)),
                  "vw 8: cb %d, tuned %d, %d measured", plan->direct.cb, plan->direct.bwdw_tuned, lc.measured);
        free(text);
        float *ref = run_pass(dev, plan, CLT_CONV_BWD_WEIGHTS);
        for (int cb = 1; cb <= CLT_CONV_DIRECT_MAX_CB; cb++) {
            clt_conv_plan other = *plan;
            CHECK(clt_conv_direct_use_cb(dev, &other, cb) && other.direct.cb == cb, "vw %d: cb %d refused", width,
                  cb);
            float *got = run_pass(dev, &other, CLT_CONV_BWD_WEIGHTS);
            /* sums of 16,224 products; an indexing error gives O(1) */
            double e = max_rel_err(ref, got, (size_t)20 * 9);
            CHECK(e < 1e-4, "vw %d: cb %d and cb %d differ by %g", width, cb, plan->direct.cb, e);
            free(got);
        }
        free(ref);
        clt_conv_plan bad = *plan;
        CHECK(!clt_conv_direct_use_cb(dev, &bad, 0) && !clt_conv_direct_use_cb(dev, &bad, CLT_CONV_DIRECT_MAX_CB + 1) &&
                  !memcmp(&bad.direct, &plan->direct, sizeof bad.direct),
              "a block of 0 or %d channels was taken, or changed the plan", CLT_CONV_DIRECT_MAX_CB + 1);
        clt_conv_plan_destroy(plan);
        clt_device_destroy(dev);
    }

    /* read back: a value the file holds is taken without measuring */
    for (int cb = 1; cb <= CLT_CONV_DIRECT_MAX_CB; cb++) {
        char value[8];
        snprintf(value, sizeof value, "cb%d", cb);
        set_entry(key, value);
        log_count lc;
        clt_device *dev = open_width(16, &lc);
        clt_conv_plan *plan = weights_plan(dev, &g);
        CHECK(plan->direct.bwdw_tuned && plan->direct.cb == cb && lc.measured == 0 && lc.notices == 0,
              "file's cb %d: took cb %d, %d measured", cb, plan->direct.cb, lc.measured);
        clt_conv_plan_destroy(plan);
        clt_device_destroy(dev);
    }
    /* damaged values: measured again, and replaced */
    static const char *const damaged[] = {"cb0", "cb4", "kc1", "cb", "cb2x"};
    for (size_t i = 0; i < sizeof damaged / sizeof *damaged; i++) {
        set_entry(key, damaged[i]);
        log_count lc;
        clt_device *dev = open_width(16, &lc);
        clt_conv_plan *plan = weights_plan(dev, &g);
        char path[512];
        char *text = tune_file(path, sizeof path) ? read_text(path) : NULL;
        char stored[64];
        snprintf(stored, sizeof stored, "%s\tcb%d\n", key, plan->direct.cb);
        CHECK(plan->direct.bwdw_tuned && lc.measured == 1 && plan->direct.cb >= 1 && plan->direct.cb <= 3 && text &&
                  strstr(text, stored),
              "damaged \"%s\": cb %d, %d measured; tuning file:\n%s", damaged[i], plan->direct.cb, lc.measured,
              text ? text : "");
        free(text);
        clt_conv_plan_destroy(plan);
        clt_device_destroy(dev);
    }
    /* no block wider than co channels */
    clt_conv_geom two;
    REQUIRE_OK(clt_conv_geom_init(&two, 4, 1, 28, 28, 2, 3, 1, 0));
    log_count lc;
    clt_device *dev = open_width(16, &lc);
    clt_conv_plan *plan = weights_plan(dev, &two);
    CHECK(plan->algo[CLT_CONV_BWD_WEIGHTS] == &clt_conv_direct && plan->direct.cb <= 2 &&
              !clt_conv_direct_use_cb(dev, plan, 3) && clt_conv_direct_use_cb(dev, plan, 2),
          "co 2: cb %d, a block of 3 taken or one of 2 refused", plan->direct.cb);
    clt_conv_plan_destroy(plan);
    clt_device_destroy(dev);
}

int main(void)
{
    test_need_devices(1);
    unsetenv("CLTRAIN_KERNEL_DIR"); /* program labels would be file paths, which count_log does not count */
    clt_device_type type;
    {
        clt_device_info info;
        REQUIRE_OK(clt_device_query(0, &info));
        type = info.type;
    }
    if (type != CLT_DEVICE_CPU) {
        fprintf(stderr, "skip: the lanes kernels run on CPU devices\n");
        return 77;
    }
    if (!tmpdir_make(dir, sizeof dir, "clt-tune")) return 1;
    test_tune_and_reuse();
    test_again_beside();
    test_damaged();
    test_chunk_values();
    test_tap_rows();
    test_modes();
    test_lazy_passes();
    test_same_results();
    test_direct_forward();
    test_direct_weights();
    /* the test's own cache directory: program binaries and the tuning file */
    CHECK(tmpdir_remove(dir), "could not remove %s", dir);
    return test_result();
}
