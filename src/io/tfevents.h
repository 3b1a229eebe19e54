/* TensorBoard event files: the `Event` protos of TensorFlow's summary
 * writer (src/proto/tfevent.proto), framed as TFRecords (io/tfrecord.h),
 * in a run directory TensorBoard reads as one run. Written with
 * protobuf-c; without it (the meson feature 'protobuf' off) the calls are
 * there and opening fails with CLT_ERR_UNSUPPORTED saying why.
 *
 * The file is an append log, so it is not written atomically: each event
 * goes to the kernel in one write as it is added (a killed process loses
 * nothing written), and clt_tfevents_sync makes it durable. What a machine
 * crash can leave is a torn last record, which TensorBoard ignores and the
 * next open cuts off. Not thread-safe: one writer, one thread. */
#ifndef CLT_IO_TFEVENTS_H
#define CLT_IO_TFEVENTS_H

#include <stdint.h>

#include "cltrain.h"

typedef struct clt_tfevents clt_tfevents;

/* Opens the run directory `dir` (made, with its parents, if missing) for
 * one writer, holding a lock in it (core/file_lock.h) until closed.
 *
 * keep_steps < 0, a new run: a directory that holds another run's
 * summaries is refused (TensorBoard would draw both as one); an event file
 * there without any (a run that failed before its first step) is
 * continued. keep_steps >= 0, a run resumed after that step: the newest
 * event file continues, cut before the first event past keep_steps (those
 * steps are made again, so none is drawn twice) or before a torn or
 * corrupt record; without one a new file starts. A new file is
 * events.out.tfevents.<unix time>.<host>.<pid> and begins with the
 * file_version event "brain.Event:2". */
clt_status clt_tfevents_open(const char *dir, int64_t keep_steps, clt_tfevents **out);
/* The event file written. */
const char *clt_tfevents_path(const clt_tfevents *w);
/* What the open cut off the continued file: the events past keep_steps,
 * and the bytes of a torn or corrupt record and all after it (0, 0: it
 * cut nothing). */
void clt_tfevents_cut(const clt_tfevents *w, int64_t *events, int64_t *torn_bytes);
/* One event at `step`, stamped with the current time, holding n scalar
 * summaries tags[i] = values[i]. CLT_ERR_IO naming the file; a failed
 * write leaves the file at its last complete record. */
clt_status clt_tfevents_add(clt_tfevents *w, int64_t step, int n, const char *const *tags, const float *values);
/* The events added so far to disk (fsync). */
clt_status clt_tfevents_sync(clt_tfevents *w);
/* Syncs, closes and frees; NULL-safe. */
void clt_tfevents_close(clt_tfevents *w);

#endif
