/* The valid range of every numeric option, defined once. The command line
 * (cli_parse), the run record reader (runmeta.c) and --help all take it
 * from here, so any value the command line accepts is one a checkpoint
 * records and resumes with. A float option is checked as float32, the
 * type the library takes it in: 0.99999999 rounds to 1. */
#ifndef CLT_CLI_RANGES_H
#define CLT_CLI_RANGES_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"

typedef enum opt_kind { OPT_INT, OPT_FLOAT32, OPT_DOUBLE } opt_kind;

typedef struct opt_range {
    enum cli_opt opt;
    const char *key;      /* its key in the run record; NULL: not recorded */
    opt_kind kind;
    int64_t ilo, ihi;     /* OPT_INT: lo..hi */
    double lo, hi;        /* the others: lo_open ? (lo : [lo, hi_open ? hi) : hi] */
    int lo_open, hi_open;
    int zero_unset;       /* the record holds 0 where the option was not given */
} opt_range;

extern const opt_range opt_ranges[];
extern const int n_opt_ranges;

/* The (first) row of an option; NULL for an option without a range. */
const opt_range *opt_range_of(enum cli_opt opt);
/* "[0, 1)", "1..1000000" into buf; returns buf. */
const char *opt_range_text(const opt_range *r, char *buf, size_t cap);
/* Whether v lies in r's range (floats as float32). */
int opt_range_holds(const opt_range *r, double v);
/* The option's value from text: 0, or 2 after a usage message naming the
 * option, the text and the range. */
int opt_parse_int(enum cli_opt opt, const char *text, int64_t *out);
int opt_parse_number(enum cli_opt opt, const char *text, double *out);

#endif
