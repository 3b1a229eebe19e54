/* Every platform, every device, in platform order then device order; the
 * numbering is the same in every process and tool. CLTRAIN_DEVICES restricts
 * and renumbers like CUDA_VISIBLE_DEVICES, but strictly: a bad entry is an
 * error rather than a silent truncation. */
#include "runtime/discovery.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltrain_diag.h"
#include "core/error.h"

clt_status clt_platform_ids(cl_platform_id **out, cl_uint *n)
{
    *out = NULL;
    *n = 0;
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || np == 0) return CLT_OK;
    CLT_CL(err, "clGetPlatformIDs");
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats) return clt_fail(CLT_ERR_NO_MEMORY, "listing %u platforms", np);
    err = clGetPlatformIDs(np, plats, NULL);
    if (err != CL_SUCCESS) {
        free(plats);
        return clt_cl_fail(err, "clGetPlatformIDs");
    }
    *out = plats;
    *n = np;
    return CLT_OK;
}

static clt_status enumerate_all(clt_found_device **out, int *n)
{
    *out = NULL;
    *n = 0;
    cl_platform_id *plats;
    cl_uint np;
    CLT_TRY(clt_platform_ids(&plats, &np));
    cl_int err;
    clt_found_device *all = NULL;
    int total = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (err == CL_DEVICE_NOT_FOUND || nd == 0) continue;
        if (err != CL_SUCCESS) continue; /* a broken platform must not hide the others */
        cl_device_id *ids = calloc(nd, sizeof *ids);
        clt_found_device *grown = realloc(all, (size_t)(total + (int)nd) * sizeof *all);
        if (!ids || !grown) {
            free(ids);
            free(grown ? grown : all);
            free(plats);
            return clt_fail(CLT_ERR_NO_MEMORY, "listing %u devices", nd);
        }
        all = grown;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL) == CL_SUCCESS) {
            for (cl_uint d = 0; d < nd; d++) {
                all[total].platform = plats[p];
                all[total].device = ids[d];
                all[total].platform_index = (int)p;
                all[total].device_in_platform = (int)d;
                total++;
            }
        }
        free(ids);
    }
    free(plats);
    *out = all;
    *n = total;
    return CLT_OK;
}

/* Parses CLTRAIN_DEVICES against `total` devices into indices. */
static clt_status parse_visible(const char *env, int total, int **idx, int *n)
{
    *idx = NULL;
    *n = 0;
    size_t len = strlen(env);
    int *list = calloc(len / 2 + 1, sizeof *list);
    if (!list) return clt_fail(CLT_ERR_NO_MEMORY, "parsing CLTRAIN_DEVICES");
    int count = 0;
    const char *p = env;
    while (*p == ' ') p++;
    if (*p == 0) { /* empty: no visible device, as CUDA_VISIBLE_DEVICES="" */
        *idx = list;
        return CLT_OK;
    }
    for (;;) {
        while (*p == ' ') p++;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || (*end && *end != ',' && *end != ' ')) {
            free(list);
            return clt_fail(CLT_ERR_INVALID_ARG,
                            "CLTRAIN_DEVICES=\"%s\": \"%.*s\" is not a device index "
                            "(expected comma-separated numbers such as 0,2)",
                            env, (int)strcspn(p, ","), p);
        }
        if (v >= total) {
            free(list);
            return clt_fail(CLT_ERR_DEVICE_INDEX,
                            "CLTRAIN_DEVICES=\"%s\" names device %ld, but only %d device%s "
                            "exist%s (0..%d)",
                            env, v, total, total == 1 ? "" : "s", total == 1 ? "s" : "",
                            total - 1);
        }
        for (int i = 0; i < count; i++) {
            if (list[i] == v) {
                free(list);
                return clt_fail(CLT_ERR_INVALID_ARG,
                                "CLTRAIN_DEVICES=\"%s\" names device %ld twice", env, v);
            }
        }
        list[count++] = (int)v;
        p = end;
        while (*p == ' ') p++;
        if (*p == 0) break;
        if (*p != ',') {
            free(list);
            return clt_fail(CLT_ERR_INVALID_ARG,
                            "CLTRAIN_DEVICES=\"%s\": expected a comma after device %ld (comma-separated numbers such as 0,2)",
                            env, v);
        }
        p++;
        while (*p == ' ') p++;
        if (*p == 0) {
            free(list);
            return clt_fail(CLT_ERR_INVALID_ARG, "CLTRAIN_DEVICES=\"%s\" ends with a comma", env);
        }
    }
    *idx = list;
    *n = count;
    return CLT_OK;
}

clt_status clt_discover(clt_found_device **out, int *n)
{
    clt_found_device *all;
    int total;
    CLT_TRY(enumerate_all(&all, &total));
    const char *env = getenv("CLTRAIN_DEVICES");
    if (!env) {
        *out = all;
        *n = total;
        return CLT_OK;
    }
    int *idx, count;
    clt_status s = parse_visible(env, total, &idx, &count);
    if (s != CLT_OK) {
        free(all);
        return s;
    }
    clt_found_device *vis = count ? calloc((size_t)count, sizeof *vis) : NULL;
    if (count && !vis) {
        free(all);
        free(idx);
        return clt_fail(CLT_ERR_NO_MEMORY, "listing devices");
    }
    for (int i = 0; i < count; i++) vis[i] = all[idx[i]];
    free(all);
    free(idx);
    *out = vis;
    *n = count;
    return CLT_OK;
}

/* ---- per-device information ---- */

#ifndef CL_DEVICE_PCI_BUS_ID_NV
#define CL_DEVICE_PCI_BUS_ID_NV 0x4008
#define CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#define CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#endif

static void get_str(cl_device_id d, cl_device_info what, char *buf, size_t cap)
{
    buf[0] = 0;
    size_t got = 0;
    if (clGetDeviceInfo(d, what, cap - 1, buf, &got) != CL_SUCCESS) {
        /* too long for the buffer: fetch whole, keep the head */
        size_t need = 0;
        if (clGetDeviceInfo(d, what, 0, NULL, &need) == CL_SUCCESS && need > 0) {
            char *tmp = malloc(need);
            if (tmp && clGetDeviceInfo(d, what, need, tmp, NULL) == CL_SUCCESS) {
                snprintf(buf, cap, "%s", tmp);
            }
            free(tmp);
        }
        return;
    }
    buf[got < cap ? got : cap - 1] = 0;
    /* trim trailing spaces some drivers leave */
    size_t l = strlen(buf);
    while (l && (buf[l - 1] == ' ' || buf[l - 1] == '\n')) buf[--l] = 0;
}

static void get_platform_str(cl_platform_id p, cl_platform_info what, char *buf, size_t cap)
{
    buf[0] = 0;
    if (clGetPlatformInfo(p, what, cap - 1, buf, NULL) != CL_SUCCESS) buf[0] = 0;
    buf[cap - 1] = 0;
}

static int has_extension(const char *exts, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = exts; (p = strstr(p, name)) != NULL; p += n) {
        if ((p == exts || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return 1;
    }
    return 0;
}

static void fill_bus_and_uuid(cl_device_id d, const char *exts, clt_device_info *info)
{
    if (has_extension(exts, "cl_khr_pci_bus_info")) {
        cl_device_pci_bus_info_khr b;
        if (clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof b, &b, NULL) == CL_SUCCESS)
            snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.%x",
                     b.pci_domain & 0xffff, b.pci_bus & 0xff, b.pci_device & 0x1f,
                     b.pci_function & 0x7);
    }
    if (!info->pci_bus_id[0] && has_extension(exts, "cl_nv_device_attribute_query")) {
        cl_uint bus = 0, slot = 0, dom = 0;
        if (clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_ID_NV, sizeof bus, &bus, NULL) == CL_SUCCESS &&
            clGetDeviceInfo(d, CL_DEVICE_PCI_SLOT_ID_NV, sizeof slot, &slot, NULL) == CL_SUCCESS) {
            if (clGetDeviceInfo(d, CL_DEVICE_PCI_DOMAIN_ID_NV, sizeof dom, &dom, NULL) != CL_SUCCESS)
                dom = 0;
            snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.%x",
                     dom & 0xffff, bus & 0xff, (slot >> 3) & 0x1f, slot & 0x7);
        }
    }
    if (!info->pci_bus_id[0] && has_extension(exts, "cl_amd_device_attribute_query")) {
        cl_device_topology_amd t;
        memset(&t, 0, sizeof t);
        if (clGetDeviceInfo(d, CL_DEVICE_TOPOLOGY_AMD, sizeof t, &t, NULL) == CL_SUCCESS &&
            t.raw.type == CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD)
            snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "0000:%02x:%02x.%x",
                     (unsigned)(unsigned char)t.pcie.bus, (unsigned)(unsigned char)t.pcie.device,
                     (unsigned)(unsigned char)t.pcie.function);
        size_t fm[2] = {0, 0}; /* KiB; [0] is the total free */
        if (clGetDeviceInfo(d, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof fm, fm, NULL) == CL_SUCCESS)
            info->free_mem_bytes = (int64_t)fm[0] * 1024;
    }
    if (has_extension(exts, "cl_khr_device_uuid")) {
        unsigned char u[16];
        if (clGetDeviceInfo(d, CL_DEVICE_UUID_KHR, sizeof u, u, NULL) == CL_SUCCESS) {
            static const char hex[] = "0123456789abcdef";
            char *o = info->uuid;
            for (int i = 0; i < 16; i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10) *o++ = '-';
                *o++ = hex[u[i] >> 4];
                *o++ = hex[u[i] & 15];
            }
            *o = 0;
        }
    }
}

clt_status clt_device_info_fill(const clt_found_device *f, clt_device_info *info)
{
    int index = info->index;
    memset(info, 0, sizeof *info);
    info->index = index;
    info->platform_index = f->platform_index;
    info->device_in_platform = f->device_in_platform;
    info->free_mem_bytes = -1;
    cl_device_id d = f->device;
    get_str(d, CL_DEVICE_NAME, info->name, sizeof info->name);
    get_str(d, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    get_str(d, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
    get_str(d, CL_DEVICE_VERSION, info->opencl_version, sizeof info->opencl_version);
    get_str(d, CL_DEVICE_OPENCL_C_VERSION, info->opencl_c_version, sizeof info->opencl_c_version);
    get_platform_str(f->platform, CL_PLATFORM_NAME, info->platform, sizeof info->platform);
    get_platform_str(f->platform, CL_PLATFORM_VERSION, info->platform_version,
                     sizeof info->platform_version);

    cl_device_type t = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL) != CL_SUCCESS)
        return clt_fail(CLT_ERR_OPENCL, "device %d (%s): cannot read its type", index, info->name);
    info->type = (t & CL_DEVICE_TYPE_GPU)           ? CLT_DEVICE_GPU
                 : (t & CL_DEVICE_TYPE_ACCELERATOR) ? CLT_DEVICE_ACCELERATOR
                 : (t & CL_DEVICE_TYPE_CPU)         ? CLT_DEVICE_CPU
                                                    : CLT_DEVICE_OTHER;
    cl_uint u = 0;
    cl_ulong ul = 0;
    size_t sz = 0;
    info->compute_units = clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL) == CL_SUCCESS ? (int)u : -1;
    info->max_clock_mhz = clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof u, &u, NULL) == CL_SUCCESS ? (int)u : -1;
    info->global_mem_bytes = clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS ? (int64_t)ul : -1;
    info->local_mem_bytes = clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS ? (int64_t)ul : -1;
    info->max_alloc_bytes = clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS ? (int64_t)ul : -1;
    info->max_work_group_size = clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof sz, &sz, NULL) == CL_SUCCESS ? (int64_t)sz : -1;
    if (info->max_clock_mhz == 0) info->max_clock_mhz = -1; /* some CPU drivers say 0 */

    size_t elen = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &elen) == CL_SUCCESS && elen) {
        char *exts = malloc(elen + 1);
        if (exts && clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, elen, exts, NULL) == CL_SUCCESS) {
            exts[elen] = 0;
            fill_bus_and_uuid(d, exts, info);
        }
        free(exts);
    }
    return CLT_OK;
}

/* ---- public discovery calls ---- */

clt_status clt_device_count(int *count)
{
    if (!count) return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_count: count is NULL");
    *count = 0;
    clt_found_device *all;
    int n;
    CLT_TRY(clt_discover(&all, &n));
    free(all);
    *count = n;
    return CLT_OK;
}

clt_status clt_discover_one(int index, clt_found_device *out)
{
    clt_found_device *all;
    int n;
    CLT_TRY(clt_discover(&all, &n));
    if (index < 0 || index >= n) {
        free(all);
        if (n == 0) /* CLTRAIN_DEVICES="" hides them all: say so, the devices may well be there */
            return clt_fail(CLT_ERR_NO_DEVICE, "device %d: no OpenCL device is visible%s", index,
                            getenv("CLTRAIN_DEVICES") ? " (CLTRAIN_DEVICES is set and hides every device)" : "");
        return clt_fail(CLT_ERR_DEVICE_INDEX, "device %d does not exist (devices 0..%d)", index, n - 1);
    }
    *out = all[index];
    free(all);
    return CLT_OK;
}

clt_status clt_device_query(int index, clt_device_info *info)
{
    if (!info) return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_query: info is NULL");
    clt_found_device f;
    CLT_TRY(clt_discover_one(index, &f));
    info->index = index;
    return clt_device_info_fill(&f, info);
}

clt_status clt_device_default(int *indices, int cap, int *n)
{
    if (!n || (cap > 0 && !indices))
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_default: NULL output");
    *n = 0;
    clt_found_device *all;
    int total;
    CLT_TRY(clt_discover(&all, &total));
    int found = 0;
    for (int pass = 0; pass < 2 && found == 0; pass++) {
        for (int i = 0; i < total; i++) {
            cl_device_type t = 0;
            clGetDeviceInfo(all[i].device, CL_DEVICE_TYPE, sizeof t, &t, NULL);
            int gpu = (t & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
            int want = pass == 0 ? gpu : (t & CL_DEVICE_TYPE_CPU) != 0;
            if (want) {
                if (found < cap) indices[found] = i;
                found++;
            }
        }
    }
    free(all);
    *n = found < cap ? found : cap;
    return CLT_OK;
}

#ifndef CL_ICDL_NAME
#define CL_ICDL_OCL_VERSION 1
#define CL_ICDL_VERSION 2
#define CL_ICDL_NAME 3
#endif
typedef cl_int (*icdl_info_fn)(cl_uint, size_t, void *, size_t *);

clt_status clt_icd_loader_info(char *name, size_t name_cap, char *version, size_t version_cap)
{
    if (name && name_cap) name[0] = 0;
    if (version && version_cap) version[0] = 0;
    /* Both ocl-icd and the Khronos loader answer this loader extension. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    /* The 1.2 per-platform variant needs a platform; the loader answers the
     * platform-less call itself. */
    void *fp = clGetExtensionFunctionAddress("clGetICDLoaderInfoOCLICD");
#pragma GCC diagnostic pop
    if (!fp) return CLT_OK;
    icdl_info_fn fn;
    memcpy(&fn, &fp, sizeof fn);
    if (name && name_cap > 1 && fn(CL_ICDL_NAME, name_cap - 1, name, NULL) != CL_SUCCESS) name[0] = 0;
    if (version && version_cap > 1 && fn(CL_ICDL_VERSION, version_cap - 1, version, NULL) != CL_SUCCESS)
        version[0] = 0;
    if (name && name_cap) name[name_cap - 1] = 0;
    if (version && version_cap) version[version_cap - 1] = 0;
    return CLT_OK;
}
