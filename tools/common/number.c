#include "number.h"

#include <math.h>
#include <stdio.h>

const char *format_number(char *buf, size_t cap, double v)
{
    if (!isfinite(v) || v < 0) snprintf(buf, cap, "n/a");
    else if (v >= 99.95) snprintf(buf, cap, "%.0f", v);
    else snprintf(buf, cap, "%#.3g", v); /* '#': 1.00, not 1 (three digits shown) */
    return buf;
}
