/* A net's parameters to and from .npz archives, by state_dict name: what
 * clt_net_save_npz / clt_net_load_npz do, in pieces the trainer's
 * checkpoints (parallel/checkpoint.c) combine: the parameters under their
 * own names, "momentum/<name>" or "adam/m/<name>" arrays from an optimizer
 * state slot, and entries of their own.
 *
 * `which` selects what these calls move: 0 the state_dict (parameters and
 * batch-norm running statistics), 1 + i optimizer state slot i of the
 * parameters (which must exist: clt_net_ensure_slots). */
#ifndef CLT_NN_NET_NPZ_H
#define CLT_NN_NET_NPZ_H

#include "cltrain.h"

/* Adds them, in spec order, as float32 under prefix + name. A failure marks
 * the writer failed. */
clt_status clt_net_npz_add(clt_npz_writer *w, const clt_net *net, int which, const char *prefix);

/* Checks that the archive holds prefix + name for every parameter of the
 * net, as float32 of the parameter's shape, all finite. CLT_ERR_FORMAT
 * naming the file, the entry and both shapes (or the first non-finite
 * value's index) otherwise. Reads nothing from the device. */
clt_status clt_net_npz_check(const clt_npz *npz, const clt_net *net, int which, const char *prefix);

/* For a filter (io/npz.h), from an entry's header alone: when it is named
 * prefix + a parameter's name (*found = 1), it must be float32 of the
 * parameter's shape (CLT_ERR_FORMAT naming `path`, the entry and both
 * shapes otherwise). *found = 0 and CLT_OK for any other name. */
clt_status clt_net_npz_check_entry(const clt_net *net, int which, const char *prefix, const char *path,
                                   const clt_npz_entry *e, int *found);

/* 1 when `name` is prefix + the name of a parameter of the net. */
int clt_net_npz_is_param(const clt_net *net, int which, const char *prefix, const char *name);

/* The filter (io/npz.h) reading a net's file (ctx: the net): its
 * parameters, checked from their headers, and its own keys
 * (clt_net_info_filter); every other entry stays compressed, so a hostile
 * file costs no more memory than the net's parameters. */
clt_status clt_net_npz_filter(void *ctx, const char *path, const clt_npz_entry *e, int *skip);

/* Writes the prefix + name arrays to the device and waits for the writes.
 * Call clt_net_npz_check first: this only re-checks sizes. */
clt_status clt_net_npz_upload(const clt_npz *npz, clt_net *net, int which, const char *prefix);

#endif
