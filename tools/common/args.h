/* Checked parsing of command-line values: each failure prints one line
 * naming the option and the value, and returns 2 (usage error). */
#ifndef CLT_TOOLS_ARGS_H
#define CLT_TOOLS_ARGS_H

#include <stdint.h>

/* prog is the tool's name used in messages ("cltrain"). */
int arg_int(const char *prog, const char *opt, const char *text, int64_t min, int64_t max, int64_t *out);
int arg_float(const char *prog, const char *opt, const char *text, double min, double max, double *out);
/* Comma-separated device indices, or "all" (sets *all). Up to cap entries. */
int arg_devices(const char *prog, const char *opt, const char *text, int *list, int cap, int *n, int *all);
/* Comma-separated non-negative floats (split weights). */
int arg_floats(const char *prog, const char *opt, const char *text, float *list, int cap, int *n);
/* Prints "prog: message" to stderr and returns 2. */
int usage_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
