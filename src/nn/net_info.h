/* What a net knows of its data, and the keys every file a net is saved to
 * carries it under (README "Files"): the expanded spec, the input shape,
 * the inputs' per-channel normalisation and the classes' names. A file
 * with them opens as a net on its own (clt_net_open). */
#ifndef CLT_NN_NET_INFO_H
#define CLT_NN_NET_INFO_H

#include "cltrain.h"

#define CLT_KEY_PREFIX "__cltrain__/"
#define CLT_KEY_SPEC CLT_KEY_PREFIX "spec"           /* bytes: the expanded spec */
#define CLT_KEY_INPUT CLT_KEY_PREFIX "input"         /* float32 (3,): channels, height, width */
#define CLT_KEY_NORMALIZE CLT_KEY_PREFIX "normalize" /* float32 (2, channels): means, then stds */
#define CLT_KEY_CLASSES CLT_KEY_PREFIX "classes"     /* bytes: the names, each ended by '\n' */
#define CLT_KEY_VERSION CLT_KEY_PREFIX "version"     /* bytes: the cltrain that wrote the file */
/* Longest class name, in bytes. */
#define CLT_CLASS_NAME_MAX 255

/* Adds the net's keys to an archive being written (a failure marks the
 * writer failed). */
clt_status clt_net_info_add(clt_npz_writer *w, const clt_net *net);
/* Whether `name` is one of the keys above (a file's own entries, not
 * parameters). */
int clt_net_info_key(const char *name);
/* A filter (io/npz.h) keeping the keys above, each at most
 * CLT_NET_INFO_MAX bytes (CLT_ERR_FORMAT naming the entry otherwise), and
 * skipping every other entry. */
#define CLT_NET_INFO_MAX (1 << 20)
clt_status clt_net_info_filter(void *ctx, const char *path, const clt_npz_entry *e, int *skip);
/* Checks the normalisation and class names an archive holds against the
 * net (shape, finite values, one name per class) and sets them on the net
 * when `apply` (the file's absence of either leaves the net's as it is). */
clt_status clt_net_info_load(const clt_npz *z, clt_net *net, int apply);
/* Copies from's normalisation and class names to `to` (nets of one model). */
clt_status clt_net_info_copy(clt_net *to, const clt_net *from);
/* Frees them (net destruction). */
void clt_net_info_free(clt_net *net);

#endif
