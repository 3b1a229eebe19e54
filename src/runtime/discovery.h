/* Platform and device enumeration with cltrain's stable global numbering. */
#ifndef CLT_RUNTIME_DISCOVERY_H
#define CLT_RUNTIME_DISCOVERY_H

#include "runtime/cl.h"

typedef struct clt_found_device {
    cl_platform_id platform;
    cl_device_id device;
    int platform_index;
    int device_in_platform;
} clt_found_device;

/* Every OpenCL platform the ICD loader offers; *out is freed with free().
 * No platform at all (the loader's CL_PLATFORM_NOT_FOUND_KHR included) is
 * CLT_OK with *n = 0 and *out NULL; another failure names OpenCL's answer. */
clt_status clt_platform_ids(cl_platform_id **out, cl_uint *n);
/* The visible devices (CLTRAIN_DEVICES applied), in global order. *out is
 * freed with free(); *n may be 0 (then *out is NULL). */
clt_status clt_discover(clt_found_device **out, int *n);
/* Visible device `index`, or CLT_ERR_NO_DEVICE / CLT_ERR_DEVICE_INDEX. */
clt_status clt_discover_one(int index, clt_found_device *out);
/* Fills info from the device's answers (index is set by the caller). */
clt_status clt_device_info_fill(const clt_found_device *f, clt_device_info *info);

#endif
