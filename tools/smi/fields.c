#include "fields.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const smi_field smi_fields[] = {
    {"index", NULL, FIELD_INT, "cltrain device index (as CLTRAIN_DEVICES and --devices use)"},
    {"name", NULL, FIELD_STR, "device name"},
    {"vendor", NULL, FIELD_STR, "device vendor"},
    {"platform", NULL, FIELD_STR, "OpenCL platform name"},
    {"platform_version", NULL, FIELD_STR, "OpenCL platform version"},
    {"type", NULL, FIELD_STR, "GPU, CPU, ACCELERATOR or OTHER"},
    {"driver_version", NULL, FIELD_STR, "driver version"},
    {"opencl_version", NULL, FIELD_STR, "OpenCL version of the device"},
    {"memory.total", "MiB", FIELD_MIB, "global memory"},
    {"memory.free", "MiB", FIELD_MIB, "free global memory (N/A unless the vendor reports it)"},
    {"memory.local", "KiB", FIELD_INT, "local memory per work-group"},
    {"memory.max_alloc", "MiB", FIELD_MIB, "largest single allocation"},
    {"compute_units", NULL, FIELD_INT, "compute units"},
    {"clocks.max", "MHz", FIELD_INT, "maximum clock"},
    {"pci.bus_id", NULL, FIELD_STR, "PCI bus id (N/A unless an extension reports it)"},
    {"uuid", NULL, FIELD_STR, "device UUID (N/A unless cl_khr_device_uuid)"},
    /* OpenCL cannot know these; accepted for nvidia-smi habits, always N/A. */
    {"temperature.gpu", "C", FIELD_INT, "not available through OpenCL: always N/A"},
    {"utilization.gpu", "%", FIELD_INT, "not available through OpenCL: always N/A"},
    {"power.draw", "W", FIELD_INT, "not available through OpenCL: always N/A"},
};
const int smi_field_count = (int)(sizeof smi_fields / sizeof smi_fields[0]);

int smi_field_find(const char *name)
{
    for (int i = 0; i < smi_field_count; i++)
        if (strcmp(smi_fields[i].name, name) == 0) return i;
    return -1;
}

const char *smi_type_name(clt_device_type t)
{
    switch (t) {
    case CLT_DEVICE_GPU: return "GPU";
    case CLT_DEVICE_CPU: return "CPU";
    case CLT_DEVICE_ACCELERATOR: return "ACCELERATOR";
    default: return "OTHER";
    }
}

static int put_str(const char *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", s[0] ? s : "N/A");
    return s[0] != 0;
}

static int put_num(int64_t v, int64_t div, const char *unit, int with_unit, char *buf, size_t cap)
{
    if (v < 0) {
        snprintf(buf, cap, "N/A");
        return 0;
    }
    if (with_unit && unit)
        snprintf(buf, cap, "%" PRId64 " %s", v / div, unit);
    else
        snprintf(buf, cap, "%" PRId64, v / div);
    return 1;
}

int smi_field_value(int f, const clt_device_info *d, int with_unit, char *buf, size_t cap)
{
    const char *n = smi_fields[f].name;
    const char *u = smi_fields[f].unit;
    const int64_t mib = 1024 * 1024;
    if (!strcmp(n, "index")) return put_num(d->index, 1, u, with_unit, buf, cap);
    if (!strcmp(n, "name")) return put_str(d->name, buf, cap);
    if (!strcmp(n, "vendor")) return put_str(d->vendor, buf, cap);
    if (!strcmp(n, "platform")) return put_str(d->platform, buf, cap);
    if (!strcmp(n, "platform_version")) return put_str(d->platform_version, buf, cap);
    if (!strcmp(n, "type")) return put_str(smi_type_name(d->type), buf, cap);
    if (!strcmp(n, "driver_version")) return put_str(d->driver_version, buf, cap);
    if (!strcmp(n, "opencl_version")) return put_str(d->opencl_version, buf, cap);
    if (!strcmp(n, "memory.total")) return put_num(d->global_mem_bytes, mib, u, with_unit, buf, cap);
    if (!strcmp(n, "memory.free")) return put_num(d->free_mem_bytes, mib, u, with_unit, buf, cap);
    if (!strcmp(n, "memory.local")) return put_num(d->local_mem_bytes, 1024, u, with_unit, buf, cap);
    if (!strcmp(n, "memory.max_alloc")) return put_num(d->max_alloc_bytes, mib, u, with_unit, buf, cap);
    if (!strcmp(n, "compute_units")) return put_num(d->compute_units, 1, u, with_unit, buf, cap);
    if (!strcmp(n, "clocks.max")) return put_num(d->max_clock_mhz, 1, u, with_unit, buf, cap);
    if (!strcmp(n, "pci.bus_id")) return put_str(d->pci_bus_id, buf, cap);
    if (!strcmp(n, "uuid")) return put_str(d->uuid, buf, cap);
    snprintf(buf, cap, "N/A");
    return 0;
}
