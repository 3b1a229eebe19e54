/* Checks shared by the public config structs. */
#ifndef CLT_CORE_CONFIG_H
#define CLT_CORE_CONFIG_H

#include <stddef.h>

#include "cltrain.h"

/* A config's reserved bytes must be zero: set by its *_config_default, and
 * taken by fields of later versions with 0 as their default. Anything else
 * means the struct was not initialised, or a newer header's field was set
 * for this older library. `op` names the call. */
clt_status clt_config_check_reserved(const unsigned char *reserved, size_t n, const char *op);
/* The same from byte `from` on: the bytes before it belong to fields laid
 * over the reserved ones. */
clt_status clt_config_check_reserved_from(const unsigned char *reserved, size_t from, size_t n, const char *op);

#endif
