/* Whether a device may run TF32 tensor-core kernels (tf32.h's arithmetic,
 * kernels/prelude.h's helpers): checked once when the device opens, so
 * that untested code can never train silently wrong. The device must be
 * NVIDIA's OpenCL (the only driver that passes inline PTX through) with
 * compute capability 8.0 or more (mma.sync m16n8k8 .tf32 is sm_80's), the
 * probe program must build, and its 16x8x8 product on the device must
 * match the host's TF32 product. Anything else leaves the device without
 * TF32, the reason kept for the log (clt_device_set_log writes it once at
 * debug level). */
#include <stdio.h>
#include <string.h>

#include "runtime/device_impl.h"
#include "runtime/launch.h"
#include "runtime/queue.h"
#include "runtime/tf32.h"
#include "runtime/tf32_probe.h"

/* cl_nv_device_attribute_query's CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV,
 * _MINOR_NV (cl_ext.h has them only in newer headers) */
#define CC_MAJOR_NV 0x4000
#define CC_MINOR_NV 0x4001

/* The probe's operands: ties of TF32 rounding (1 + 2^-11 and kin, of
 * both signs), values just below and above them, scaled by small
 * integers and halved or doubled, plus steps of 2^-9: on these the
 * products of operands truncated, rounded to even or not rounded at all
 * each miss the host's TF32 product on nearly every element
 * (tests/unit/test_tf32.c checks it), and so does a fragment in the
 * wrong place. */
void clt_tf32_probe_operands(float *a, float *b)
{
    static const float ties[] = {1.0f + 0x1p-11f, -(1.0f + 0x1p-11f), 1.0f + 0x1p-11f - 0x1p-23f,
                                 1.0f + 0x3p-11f, -(1.0f + 0x5p-11f), 0.75f + 0x3p-13f};
    for (int i = 0; i < CLT_TF32_PROBE_M * CLT_TF32_PROBE_K; i++)
        a[i] = ties[i % 6] * (float)(1 + i % 7) * ((i / 7) % 2 ? 0.5f : 2.0f) + (float)(i % 11) * 0x1p-9f;
    for (int i = 0; i < CLT_TF32_PROBE_K * CLT_TF32_PROBE_N; i++)
        b[i] = ties[(i * 5) % 6] * (float)(1 + (i * 3) % 5) - (float)(i % 4) * 0.125f;
}

clt_status clt_tf32_probe_run(clt_device *dev, int tc, int *ok)
{
    enum { PM = CLT_TF32_PROBE_M, PN = CLT_TF32_PROBE_N, PK = CLT_TF32_PROBE_K };
    float a[PM * PK], b[PK * PN], c[PM * PN];
    double ref[PM * PN];
    clt_tf32_probe_operands(a, b);
    *ok = 0;
    char prog[32];
    snprintf(prog, sizeof prog, "tf32_probe -DTC=%d", tc);
    cl_mem ba = NULL, bb = NULL, bc = NULL;
    clt_status s = clt_buffer_create(dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof a, a, "TF32 probe", &ba);
    if (s == CLT_OK)
        s = clt_buffer_create(dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof b, b, "TF32 probe", &bb);
    if (s == CLT_OK) s = clt_buffer_create(dev, CL_MEM_WRITE_ONLY, sizeof c, NULL, "TF32 probe", &bc);
    if (s == CLT_OK)
        s = clt_launch_1d_local(dev, prog, "tf32_probe", 32, 32, CLT_ARGS(CLT_ARG(ba), CLT_ARG(bb), CLT_ARG(bc)));
    if (s == CLT_OK) s = clt_device_read(dev, bc, 0, sizeof c, c, "TF32 probe result");
    clt_buffer_release(ba);
    clt_buffer_release(bb);
    clt_buffer_release(bc);
    if (s != CLT_OK) return s;
    clt_tf32_product(PM, PN, PK, a, b, ref);
    *ok = clt_tf32_matches(PM, PN, PK, a, b, ref, c);
    return CLT_OK;
}

/* Whether the device is NVIDIA's with the attribute query; its compute capability into *major, *minor. */
static int nvidia_cc(const clt_device *dev, cl_uint *major, cl_uint *minor)
{
    char ext[8192] = "";
    if (!strstr(dev->info.vendor, "NVIDIA") ||
        clGetDeviceInfo(dev->id, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL) != CL_SUCCESS ||
        !strstr(ext, "cl_nv_device_attribute_query"))
        return 0;
    return clGetDeviceInfo(dev->id, CC_MAJOR_NV, sizeof *major, major, NULL) == CL_SUCCESS &&
           clGetDeviceInfo(dev->id, CC_MINOR_NV, sizeof *minor, minor, NULL) == CL_SUCCESS;
}

void clt_tf32_probe(clt_device *dev)
{
    cl_uint major = 0, minor = 0;
    int ok = 0;
    dev->tf32 = 0;
    if (!nvidia_cc(dev, &major, &minor)) {
        snprintf(dev->tf32_why, sizeof dev->tf32_why, "not NVIDIA's OpenCL with cl_nv_device_attribute_query");
        return;
    }
    dev->cc_major = (int)major;
    dev->cc_minor = (int)minor;
    if (major < 8) {
        snprintf(dev->tf32_why, sizeof dev->tf32_why, "compute capability %u.%u (TF32 needs 8.0)", major, minor);
        return;
    }
    clt_status s = clt_tf32_probe_run(dev, 1, &ok);
    if (s != CLT_OK) {
        snprintf(dev->tf32_why, sizeof dev->tf32_why, "the probe did not run: %.400s", clt_last_error());
        clt_clear_error();
    } else if (!ok)
        snprintf(dev->tf32_why, sizeof dev->tf32_why, "the probe's product differs from the host's TF32 product");
    else dev->tf32 = 1;
}

int clt_device_tf32(const clt_device *dev) { return dev ? dev->tf32 : 0; }

int clt_device_tf32_kernels(const clt_device *dev)
{
    if (!dev || dev->settings.tf32 == CLT_TF32_OFF) return 0;
    return dev->settings.tf32 == CLT_TF32_EMULATE ? 2 : dev->tf32 ? 1 : 0;
}

int clt_device_compute_capability(const clt_device *dev) { return dev ? dev->cc_major * 10 + dev->cc_minor : 0; }
