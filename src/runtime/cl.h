/* OpenCL include and error mapping shared by every room that calls OpenCL. */
#ifndef CLT_RUNTIME_CL_H
#define CLT_RUNTIME_CL_H

#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "cltrain.h"

/* "CL_OUT_OF_RESOURCES" for -5, "CL_UNKNOWN_ERROR" for unknown codes. */
const char *clt_cl_error_name(cl_int err);
/* Maps an OpenCL error to a status and sets the detail
 * "<what>: CL_XXX (-n)". */
clt_status clt_cl_fail(cl_int err, const char *what);

/* `CLT_CL(call, "what")` returns the mapped status when call fails. */
#define CLT_CL(expr, what)                          \
    do {                                            \
        cl_int clt_cl_e_ = (expr);                  \
        if (clt_cl_e_ != CL_SUCCESS)                \
            return clt_cl_fail(clt_cl_e_, (what));  \
    } while (0)

#endif
