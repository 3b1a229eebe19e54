/* The tuner's choices, kept per device: in memory, and on disk beside the
 * program cache (one text file per device identity and library version),
 * so a run on the same device and driver reuses them.
 *
 * File: a first line "cltrain-tune 2 <identity>", then one "key<TAB>value"
 * line per choice. Written atomically (read, merge, replace), so two
 * processes tuning at once lose at most each other's newest entries. A file
 * whose identity differs (with a warning), one of an older format
 * (without a warning: everything in it is measured again; format 2 added
 * the weight gradient's chunk targets and stride phases) and lines that
 * do not parse are ignored: the caller validates every value it reads
 * back. */
#ifndef CLT_RUNTIME_TUNE_CACHE_H
#define CLT_RUNTIME_TUNE_CACHE_H

#include "runtime/device.h"

#define CLT_TUNE_KEY_MAX 160
#define CLT_TUNE_VALUE_MAX 64

/* value (cap bytes) for key: 1 found, 0 not (CLTRAIN_TUNE=again: a value
 * this device object measured only). */
int clt_tune_lookup(clt_device *dev, const char *key, char *value, size_t cap);
/* Keeps key = value in memory and, with the cache enabled, on disk (a
 * file that cannot be written is logged: it costs a later run time, not
 * correctness). */
clt_status clt_tune_store(clt_device *dev, const char *key, const char *value);
/* Whether the tuners measure on this device (its CLTRAIN_TUNE setting):
 * AUTO measures where the cache can keep the result, and with cpu_only
 * on CPU devices only (where the rule is not the measured choice). */
int clt_tune_wanted(const clt_device *dev, int cpu_only);
/* The tuners hold the programs they build for their candidates out of the
 * on-disk cache (fetching a binary makes PoCL compile every kernel of the
 * program once more): between begin and end, built programs wait for
 * clt_program_keep. Nests. */
void clt_tune_hold_begin(clt_device *dev);
void clt_tune_hold_end(clt_device *dev);
/* Records that an interrupt (clt_device_interrupted) left shapes
 * unmeasured: their rule's choices are not stored. */
void clt_tune_cut(clt_device *dev);
/* Logs once per device that tuning starts, and where its choices go. */
void clt_tune_announce(clt_device *dev);
/* What the tuners' work on a device came to, for a tool that reports it
 * (cltrain tune) without reading the device. The strings stay valid while
 * the device does. */
typedef struct clt_tune_report {
    int cache_enabled;      /* the on-disk cache is on: tuned choices can be kept */
    int cut;                /* an interrupt left shapes unmeasured (clt_tune_cut) */
    int unkept;             /* tuned choices the cache could not keep (clt_tune_store) */
    const char *unkept_why; /* why the first of them was not */
    const char *cache_dir;  /* where the choices are kept */
} clt_tune_report;
void clt_tune_outcome(const clt_device *dev, clt_tune_report *out);
/* Frees the in-memory entries (device teardown). */
void clt_tune_free(clt_device *dev);

#endif
