/* IDX reader internals shared by clt_idx_read and the fuzz target. */
#ifndef CLT_DATA_IDX_H
#define CLT_DATA_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"

/* Largest data payload accepted (4 GiB): a header claiming more is refused
 * before anything is allocated. */
#define CLT_IDX_MAX_BYTES ((uint64_t)4 << 30)

/* Parses an IDX file held in memory: plain, or gzip when it starts with the
 * gzip magic 1f 8b. `label` names the input in error messages (a path). On
 * success *out owns a malloc'd copy of the data (free with clt_idx_clear); on
 * failure *out is zeroed and the detail names `label` and the problem. */
clt_status clt_idx_parse_memory(const uint8_t *src, size_t n, const char *label, clt_idx *out);
/* Frees idx->data and zeroes *idx (the struct itself stays). NULL-safe. */
void clt_idx_clear(clt_idx *idx);

#endif
