#include "core/config.h"

#include "core/error.h"

clt_status clt_config_check_reserved(const unsigned char *reserved, size_t n, const char *op)
{
    return clt_config_check_reserved_from(reserved, 0, n, op);
}

clt_status clt_config_check_reserved_from(const unsigned char *reserved, size_t from, size_t n, const char *op)
{
    for (size_t i = from; i < n; i++)
        if (reserved[i])
            return clt_fail(CLT_ERR_INVALID_ARG,
                            "%s: config.reserved[%zu] is not zero: initialise the config with its "
                            "*_config_default call (a field of a newer cltrain.h is not known to "
                            "library version %s)",
                            op, i, CLTRAIN_VERSION);
    return CLT_OK;
}
