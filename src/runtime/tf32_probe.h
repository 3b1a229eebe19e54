/* The TF32 capability probe (tf32_probe.c). */
#ifndef CLT_RUNTIME_TF32_PROBE_H
#define CLT_RUNTIME_TF32_PROBE_H

#include "runtime/device.h"

/* At device open: sets whether the device runs TF32 mma (clt_device_tf32),
 * else keeps why not. Never fails: a failure is a "no". */
void clt_tf32_probe(clt_device *dev);
/* The probe's product: a (M x K) times b (K x N), row-major; its operands. */
#define CLT_TF32_PROBE_M 16
#define CLT_TF32_PROBE_N 8
#define CLT_TF32_PROBE_K 8
void clt_tf32_probe_operands(float *a, float *b);
/* Runs the probe's product with -DTC=tc (1: PTX mma, 2: the OpenCL C
 * twin) and compares it with the host's TF32 product: *ok 1 when it
 * matches. A failure to build or run is returned. */
clt_status clt_tf32_probe_run(clt_device *dev, int tc, int *ok);

#endif
