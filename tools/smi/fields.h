/* The device fields cltrain-smi can print, nvidia-smi style names. */
#ifndef CLT_SMI_FIELDS_H
#define CLT_SMI_FIELDS_H

#include <stddef.h>

#include "cltrain.h"

/* FIELD_NA: an nvidia-smi field OpenCL cannot report; always N/A.
 * FIELD_PROBE: a string known once the device is opened (smi_probe). */
typedef enum { FIELD_STR, FIELD_INT, FIELD_MIB, FIELD_NA, FIELD_PROBE } field_kind;

/* What opening a device tells (clt_device_open's TF32 probe): known 0 when
 * the device was not opened, or could not be. */
typedef struct smi_probe {
    int known, tf32, compute_capability;
} smi_probe;

typedef struct smi_field {
    const char *name;
    const char *unit;   /* printed as "name [unit]" in CSV headers, NULL for none */
    field_kind kind;
    const char *help;
} smi_field;

extern const smi_field smi_fields[];
extern const int smi_field_count;

/* Index of a field by name or nvidia-smi alias (gpu_name, clocks.max.sm, ...),
 * -1 if unknown. */
int smi_field_find(const char *name);
/* Writes the value of field f for device d into buf; "[N/A]" (as
 * nvidia-smi prints it) when unknown.
 * with_unit adds " MiB"/" MHz". Returns 1 if known, 0 for N/A. */
int smi_field_value(int f, const clt_device_info *d, int with_unit, char *buf, size_t cap);
/* The same for a FIELD_PROBE field from p. */
int smi_probe_value(int f, const smi_probe *p, char *buf, size_t cap);
/* Whether field f needs the device opened. */
int smi_field_needs_probe(int f);
const char *smi_type_name(clt_device_type t);

#endif
