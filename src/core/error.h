/* Internal error helpers: set the thread-local detail and return a status. */
#ifndef CLT_CORE_ERROR_H
#define CLT_CORE_ERROR_H

#include "cltrain.h"

#if defined(__GNUC__)
#define CLT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLT_PRINTF(a, b)
#endif

/* Sets the detail (printf-style) and returns s. */
clt_status clt_fail(clt_status s, const char *fmt, ...) CLT_PRINTF(2, 3);
/* Prefixes the current detail with context ("loading x.npz: <old detail>"). */
clt_status clt_fail_context(clt_status s, const char *fmt, ...) CLT_PRINTF(2, 3);
void clt_clear_error(void);

/* Propagate a failure: `CLT_TRY(call);` returns its status when not OK. */
#define CLT_TRY(expr)                     \
    do {                                  \
        clt_status clt_try_s_ = (expr);   \
        if (clt_try_s_ != CLT_OK)         \
            return clt_try_s_;            \
    } while (0)

#endif
