/* Status codes, their messages, and the thread-local detail of the last
 * failure (the one piece of per-thread state the API promises). */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[8192];

const char *clt_status_str(clt_status s)
{
    switch (s) {
#define CLT_X_STR(name, value, msg) \
    case CLT_##name:                \
        return msg;
        CLT_STATUS_MAP(CLT_X_STR)
#undef CLT_X_STR
    }
    return "unknown status";
}

const char *clt_status_name(clt_status s)
{
    switch (s) {
#define CLT_X_NAME(name, value, msg) \
    case CLT_##name:                 \
        return "CLT_" #name;
        CLT_STATUS_MAP(CLT_X_NAME)
#undef CLT_X_NAME
    }
    return "CLT_UNKNOWN";
}

const char *clt_last_error(void) { return last_error; }

clt_status clt_fail(clt_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

clt_status clt_fail_context(clt_status s, const char *fmt, ...)
{
    /* Prefix the existing detail with context, keeping the original cause. */
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char cause[sizeof last_error];
    memcpy(cause, last_error[0] ? last_error : clt_status_str(s), sizeof cause);
    cause[sizeof cause - 1] = 0;
    /* Built by hand: the prefix and as much of the cause as fits. */
    size_t pl = strlen(prefix), cap = sizeof last_error;
    memcpy(last_error, prefix, pl);
    memcpy(last_error + pl, ": ", 2);
    size_t rest = cap - pl - 3;
    size_t cl = strlen(cause);
    if (cl > rest) cl = rest;
    memcpy(last_error + pl + 2, cause, cl);
    last_error[pl + 2 + cl] = 0;
    return s;
}

void clt_clear_error(void) { last_error[0] = 0; }

const char *clt_version(int *major, int *minor, int *patch)
{
    if (major) *major = CLTRAIN_VERSION_MAJOR;
    if (minor) *minor = CLTRAIN_VERSION_MINOR;
    if (patch) *patch = CLTRAIN_VERSION_PATCH;
    return CLTRAIN_VERSION;
}
