/* Minimal JSON output helpers shared by the command-line tools. */
#ifndef CLT_TOOLS_JSON_H
#define CLT_TOOLS_JSON_H

#include <stdio.h>

/* Writes s as a JSON string literal, quotes included. */
void json_string(FILE *f, const char *s);

#endif
