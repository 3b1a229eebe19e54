#include "args.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int usage_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see %s --help)\n", prog);
    return 2;
}

int arg_int(const char *prog, const char *opt, const char *text, int64_t min, int64_t max, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno || v < min || v > max)
        return usage_error(prog, "%s: \"%s\" is not an integer in %lld..%lld", opt, text, (long long)min,
                           (long long)max);
    *out = v;
    return 0;
}

int arg_float(const char *prog, const char *opt, const char *text, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v) || v < min || v > max)
        return usage_error(prog, "%s: \"%s\" is not a number in [%g, %g]", opt, text, min, max);
    *out = v;
    return 0;
}

int arg_devices(const char *prog, const char *opt, const char *text, int *list, int cap, int *n, int *all)
{
    *n = 0;
    *all = 0;
    if (strcmp(text, "all") == 0) {
        *all = 1;
        return 0;
    }
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 1000000 || (*end && *end != ','))
            return usage_error(prog, "%s: \"%s\" is not \"all\" or a list of device indices such as 0,1", opt, text);
        for (int i = 0; i < *n; i++)
            if (list[i] == v) return usage_error(prog, "%s: device %ld is listed twice", opt, v);
        if (*n == cap) return usage_error(prog, "%s: more than %d devices", opt, cap);
        list[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end && !*p) return usage_error(prog, "%s: \"%s\" ends with a comma", opt, text);
    }
    if (*n == 0) return usage_error(prog, "%s: empty device list", opt);
    return 0;
}

int arg_floats(const char *prog, const char *opt, const char *text, float *list, int cap, int *n)
{
    *n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !isfinite(v) || v < 0 || (*end && *end != ','))
            return usage_error(prog, "%s: \"%s\" is not a list of non-negative weights such as 1,3", opt, text);
        if (v > FLT_MAX) /* the library takes float weights */
            return usage_error(prog, "%s: weight %g is beyond float32's range", opt, v);
        if (*n == cap) return usage_error(prog, "%s: more than %d weights", opt, cap);
        list[(*n)++] = (float)v;
        p = *end ? end + 1 : end;
        if (*end && !*p) return usage_error(prog, "%s: \"%s\" ends with a comma", opt, text);
    }
    if (*n == 0) return usage_error(prog, "%s: empty weight list", opt);
    return 0;
}
