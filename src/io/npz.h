/* Internal side of the .npz reader and writer (public calls in cltrain.h):
 * in-memory reading (tests, fuzzing), lookups that do not touch the error
 * detail, and the moves between an archive and a net's flat device buffers
 * that the checkpoint code shares with clt_net_save_npz / clt_net_load_npz.
 *
 * A checkpoint is an .npz like any other: the parameters under their own
 * names, "momentum/<name>" arrays from net->vel, and a byte entry holding
 * JSON metadata, written with clt_npz_writer_add_params (prefix "" and
 * "momentum/") plus clt_npz_writer_add_bytes, read back with
 * clt_npz_check_params + clt_npz_upload_params and clt_npz_get. */
#ifndef CLT_IO_NPZ_H
#define CLT_IO_NPZ_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"
#include "runtime/cl.h"

/* Reads an archive from memory; `label` names it in error details (a path
 * or "<memory>"). The bytes are not kept. Same checks as clt_npz_read. */
clt_status clt_npz_read_memory(const uint8_t *data, size_t n, const char *label, clt_npz **out);

/* The entry named `name` (without ".npy"), or NULL; sets no error detail.
 * The pointer lives as long as the archive. */
const clt_npz_entry *clt_npz_get(const clt_npz *npz, const char *name);
/* The path (or label) the archive was read from. */
const char *clt_npz_path(const clt_npz *npz);

/* "(2, 3)", "(5,)" or "()" into buf; returns buf. */
const char *clt_npz_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);

/* Marks the writer failed: the temporary file goes, the target stays as it
 * was, and later calls are refused. Returns s, for `return
 * clt_npz_writer_fail(w, s);` when a caller's own step fails mid-archive. */
clt_status clt_npz_writer_fail(clt_npz_writer *w, clt_status s);

/* `momentum` selects what these calls move: 0 the state_dict (parameters
 * and batch-norm running statistics), 1 the SGD momentum of the parameters
 * (net->vel, which must exist). */
/* Adds them, in spec order, as float32 under prefix + name. A failure marks
 * the writer failed. */
clt_status clt_npz_writer_add_params(clt_npz_writer *w, const clt_net *net, int momentum,
                                     const char *prefix);

/* Checks that the archive holds prefix + name for every parameter of the
 * net, as float32 of the parameter's shape. CLT_ERR_FORMAT naming the file,
 * the entry and both shapes otherwise. Reads nothing from the device. */
clt_status clt_npz_check_params(const clt_npz *npz, const clt_net *net, int momentum, const char *prefix);

/* 1 when `name` is prefix + the name of a parameter of the net. */
int clt_npz_is_param_name(const clt_net *net, int momentum, const char *prefix, const char *name);

/* Writes the prefix + name arrays to the device and waits for the writes.
 * Call clt_npz_check_params first: this only re-checks sizes. */
clt_status clt_npz_upload_params(const clt_npz *npz, clt_net *net, int momentum, const char *prefix);

#endif
