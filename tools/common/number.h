/* Measured numbers (samples/s, seconds) for people: "0 samples/s" from a
 * tiny run says nothing, 12458.3 says too much. */
#ifndef CLT_TOOLS_NUMBER_H
#define CLT_TOOLS_NUMBER_H

#include <stddef.h>

/* 3 significant digits below 1000 (0.0123, 4.56, 789), a whole number from
 * 1000 on (12458), "n/a" when not finite or negative. Returns buf. */
const char *format_number(char *buf, size_t cap, double v);

/* For JSON and CSV: 6 significant digits, never rounded to 0. */
#define NUMBER_MACHINE_FMT "%.6g"

#endif
