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
    {"compute_cap", NULL, FIELD_PROBE,
     "NVIDIA's compute capability, 9.0 for an H100 (N/A elsewhere; opens the device)"},
    {"tf32", NULL, FIELD_PROBE, "Yes where the device passed its TF32 tensor-core probe (opens the device)"},
    /* nvidia-smi fields OpenCL cannot know: accepted so that scripts
     * written for nvidia-smi run, and always [N/A] as nvidia-smi prints an
     * unsupported field. */
#define NA(name, unit) {name, unit, FIELD_NA, "not available through OpenCL: always [N/A]"}
    NA("memory.used", "MiB"), NA("memory.reserved", "MiB"), NA("utilization.gpu", "%"),
    NA("utilization.memory", "%"), NA("temperature.gpu", "C"), NA("temperature.memory", "C"),
    NA("fan.speed", "%"), NA("pstate", NULL), NA("power.draw", "W"), NA("power.limit", "W"),
    NA("power.default_limit", "W"), NA("power.max_limit", "W"), NA("power.min_limit", "W"),
    NA("enforced.power.limit", "W"), NA("power.management", NULL), NA("clocks.current.graphics", "MHz"),
    NA("clocks.current.sm", "MHz"), NA("clocks.current.memory", "MHz"), NA("clocks.current.video", "MHz"),
    NA("clocks.max.memory", "MHz"), NA("clocks.applications.graphics", "MHz"),
    NA("clocks.applications.memory", "MHz"), NA("persistence_mode", NULL), NA("compute_mode", NULL),
    NA("display_mode", NULL), NA("display_active", NULL), NA("serial", NULL), NA("vbios_version", NULL),
    NA("pcie.link.gen.current", NULL), NA("pcie.link.gen.max", NULL), NA("pcie.link.width.current", NULL),
    NA("pcie.link.width.max", NULL), NA("ecc.mode.current", NULL), NA("mig.mode.current", NULL),
    NA("encoder.stats.sessionCount", NULL),
#undef NA
};
const int smi_field_count = (int)(sizeof smi_fields / sizeof smi_fields[0]);

/* nvidia-smi's other spellings of fields we have. */
static const char *const aliases[][2] = {
    {"gpu_name", "name"}, {"gpu_uuid", "uuid"}, {"gpu_bus_id", "pci.bus_id"}, {"clocks.max.graphics", "clocks.max"},
    {"clocks.max.gr", "clocks.max"}, {"clocks.max.sm", "clocks.max"}, {"clocks.gr", "clocks.current.graphics"},
    {"clocks.sm", "clocks.current.sm"}, {"clocks.mem", "clocks.current.memory"},
    {"clocks.video", "clocks.current.video"}, {"clocks.max.mem", "clocks.max.memory"},
    {"gpu_serial", "serial"}, {"temperature.gpu.tlimit", "temperature.gpu"},
};

int smi_field_find(const char *name)
{
    for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++)
        if (strcmp(aliases[a][0], name) == 0) name = aliases[a][1];
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
    snprintf(buf, cap, "%s", s[0] ? s : "[N/A]");
    return s[0] != 0;
}

static int put_num(int64_t v, int64_t div, const char *unit, int with_unit, char *buf, size_t cap)
{
    if (v < 0) {
        snprintf(buf, cap, "[N/A]");
        return 0;
    }
    if (with_unit && unit)
        snprintf(buf, cap, "%" PRId64 " %s", v / div, unit);
    else
        snprintf(buf, cap, "%" PRId64, v / div);
    return 1;
}

int smi_field_needs_probe(int f) { return f >= 0 && f < smi_field_count && smi_fields[f].kind == FIELD_PROBE; }

int smi_probe_value(int f, const smi_probe *p, char *buf, size_t cap)
{
    const char *n = smi_fields[f].name;
    if (p->known && !strcmp(n, "tf32")) return put_str(p->tf32 ? "Yes" : "No", buf, cap);
    if (p->known && !strcmp(n, "compute_cap") && p->compute_capability) {
        snprintf(buf, cap, "%d.%d", p->compute_capability / 10, p->compute_capability % 10);
        return 1;
    }
    snprintf(buf, cap, "[N/A]");
    return 0;
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
    snprintf(buf, cap, "[N/A]");
    return 0;
}
