/* Why no device is visible: what the tools print in place of a bare "no
 * device found", which sent users to install a driver they had. A
 * platform can list none because its devices are absent (a GPU driver
 * without its GPU) or because it failed to start: PoCL, the CPU driver the
 * README installs, lists none when it cannot create its kernel cache
 * (a service account whose HOME is not writable). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cltrain_diag.h"
#include "core/error.h"
#include "runtime/discovery.h"

typedef struct why_buf {
    char *s;
    size_t cap, len;
} why_buf;

static void say(why_buf *b, const char *fmt, ...) CLT_PRINTF(2, 3);
static void say(why_buf *b, const char *fmt, ...)
{
    if (b->len + 1 >= b->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n > 0) b->len += (size_t)n < b->cap - b->len ? (size_t)n : b->cap - b->len - 1;
}

/* 0 when path can be made a directory by its user: it or its nearest
 * existing ancestor is a writable directory; else an errno for why not. */
static int cannot_create(const char *path)
{
    char p[1024];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) return ENAMETOOLONG;
    for (;;) {
        struct stat st;
        if (stat(p, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) return ENOTDIR;
            return access(p, W_OK | X_OK) == 0 ? 0 : errno;
        }
        if (errno != ENOENT) return errno;
        char *slash = strrchr(p, '/');
        if (!slash) return 0; /* relative: under the working directory, assumed writable */
        slash[slash == p] = 0; /* the parent; "/" itself for a top-level name (HOME=/nonexistent) */
    }
}

/* PoCL's kernel cache directory as PoCL resolves it, if it cannot be made. */
static void pocl_hint(why_buf *b)
{
    const char *d;
    char dir[1024];
    int n;
    if ((d = getenv("POCL_CACHE_DIR")) && d[0]) n = snprintf(dir, sizeof dir, "%s", d);
    else if ((d = getenv("XDG_CACHE_HOME")) && d[0]) n = snprintf(dir, sizeof dir, "%s/pocl/kcache", d);
    else if ((d = getenv("HOME")) && d[0]) n = snprintf(dir, sizeof dir, "%s/.cache/pocl/kcache", d);
    else return;
    if (n < 0 || (size_t)n >= sizeof dir) return; /* a path that long: no guess */
    int err = cannot_create(dir);
    if (err)
        say(b, "; PoCL lists none when it cannot create its kernel cache, here %s (%s): set POCL_CACHE_DIR to a "
               "writable directory", dir, strerror(err));
}

clt_status clt_no_device_reason(char *why, size_t cap)
{
    if (!why || cap == 0) return clt_fail(CLT_ERR_INVALID_ARG, "clt_no_device_reason: no buffer");
    why[0] = 0;
    why_buf b = {why, cap, 0};
    cl_platform_id *plats;
    cl_uint np;
    if (clt_platform_ids(&plats, &np) != CLT_OK) {
        say(&b, "%s", clt_last_error());
        clt_clear_error();
        return CLT_OK;
    }
    if (np == 0) {
        /* the same answer where an .icd file names a library that fails to
         * load; here, and only here, a driver is what is missing */
        const char *v = getenv("OCL_ICD_VENDORS");
        say(&b, "no OpenCL platform: the ICD loader found no driver that loads (its .icd files in %s).\n"
                "Install a driver (on Debian, pocl-opencl-icd gives a CPU device)",
            v && v[0] ? v : "/etc/OpenCL/vendors");
        return CLT_OK;
    }
    cl_uint listed = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        cl_int err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (err == CL_SUCCESS && nd > 0) {
            listed += nd;
            continue;
        }
        char name[256] = "";
        if (clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof name - 1, name, NULL) != CL_SUCCESS)
            snprintf(name, sizeof name, "unnamed");
        say(&b, "%splatform %u (%s) lists no device (%s)", b.len ? "\n" : "", p, name,
            clt_cl_error_name(err == CL_SUCCESS ? CL_DEVICE_NOT_FOUND : err));
        if (strstr(name, "Portable Computing Language")) pocl_hint(&b);
    }
    free(plats);
    const char *visible = getenv("CLTRAIN_DEVICES");
    if (listed > 0 && visible)
        say(&b, "%sCLTRAIN_DEVICES=\"%s\" hides the %u device%s the platforms list", b.len ? "\n" : "", visible,
            listed, listed == 1 ? "" : "s");
    return CLT_OK;
}
