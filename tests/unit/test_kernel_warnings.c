/* Every embedded kernel source compiles without a warning on every device:
 * built with -Werror (a standard OpenCL build option) and, for compilers
 * that ignore it (Oclgrind), with no "warning" in the build log. The first
 * run on a machine would otherwise print the compiler's "N warnings
 * generated." Built directly, past the program cache, so every run compiles;
 * parameterised sources also with defines they are built with. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/device_impl.h"
#include "runtime/device.h"
#include "runtime/kernel_sources.h"

/* The build log of prog on dev (malloc'd, never NULL). */
static char *build_log(cl_program prog, cl_device_id dev)
{
    size_t n = 0;
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = calloc(n + 1, 1);
    if (log && n) clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    return log ? log : calloc(1, 1);
}

/* Each source as it is (the first row), and the parameterised ones with
 * the build defines the library passes them. */
static const struct {
    const char *program, *defines;
} variants[] = {
    {"", ""},
    {"conv_direct", "-DVW=8"},
    {"conv_direct", "-DVW=8 -DRM=4"},
    {"conv_direct", "-DVW=8 -DRM=4 -DKW=3 -DPOOL=0"}, /* the kernel size a constant (conv_direct_tune.c) */
    {"conv_direct", "-DVW=16 -DCB=3 -DKW=3 -DNT=9"},
    {"conv_direct", "-DVW=8 -DRM=4 -DPOOL=1"},
    {"conv_direct", "-DVW=16 -DRM=10 -DPOOL=2"},
    {"conv_direct", "-DVW=8 -DCB=1 -DKW=3 -DNT=9 -DPOOL=2"},
    {"conv_direct", "-DVW=16 -DCB=2 -DKW=1 -DNT=4 -DPOOL=1"},
    {"conv_direct", "-DVW=16 -DCB=1 -DKW=2 -DNT=8 -DPOOL=2"},
    {"conv_lanes", "-DVW=8 -DWA=2 -DWB=2 -DTR=3"}, /* rows of taps (ops/conv_lanes.c) */
    {"pool", "-DPV=4"},
    {"pool", "-DPOOL_NO_INDEX"}, /* max pooling's inference forward (ops/pool.c) */
    {"pool", "-DPOOL_NO_INDEX -DPV=4"},
    {"pool", "-DPOOL_PACKED"}, /* the layer's argmax, 2 bits per output (ops/pool.h) */
    {"pool", "-DPOOL_PACKED -DPV=4"},
    {"conv_layout", "-DTQ=8 -DNT=1"}, /* transposes below AVX-512, stores past the cache (ops/conv_lanes_copy.c) */
    {"conv_layout", "-DNT=1"},        /* the same with AVX-512's 16 x 16 blocks */
    {"sgd", "-DEW=8"},
    {"adam", "-DEW=16"},
    {"sgd", "-DEW=8 -DNGRAD=3 -DNOUT=3"}, /* replicas updating each other (parallel/peers.c) */
    {"adam", "-DEW=4 -DNGRAD=8 -DNOUT=8"},
    {"activation", "-DEW=8"},
    {"elementwise", "-DEW=4"},
    {"dense_cpu", "-DVW=16 -DRA=4 -DRB=6 -DRM=6 -DNV=4"},
    {"conv_lanes", "-DVW=4 -DRM=3 -DNV=4"},
    {"conv_lanes", "-DVW=16 -DRM=12 -DNV=1"},
    /* the forward's products and the weight gradient's, both tile sizes (ops/conv_winograd.c) */
    {"conv_winograd", "-DWM=2 -DRM=8 -DNV=2"},
    {"conv_winograd", "-DWM=4 -DRM=8 -DNV=2"},
    {"conv_winograd", "-DWM=2 -DWR=8 -DWV=2"},
    {"conv_winograd", "-DWM=4 -DWR=8 -DWV=2"},
    {"conv_lanes", "-DVW=4 -DWA=3 -DWB=4"},
    {"conv_lanes", "-DVW=8 -DWA=1 -DWB=8"},
    {"conv_implicit", "-DPASS=0 -DGC=3 -DGH=9 -DGW=7 -DGCO=5 -DGK=3 -DGS=2 -DGPAD=1 -DGOH=5 -DGOW=4 -DTM=128 -DTN=128 "
                      "-DTK=8 -DRM=8 -DRN=8"},
    {"conv_implicit", "-DPASS=1 -DGC=3 -DGH=9 -DGW=7 -DGCO=5 -DGK=3 -DGS=1 -DGPAD=0 -DGOH=7 -DGOW=5 -DGPY=0 -DGPX=0 "
                      "-DTM=32 -DTN=64 -DTK=16 -DRM=4 -DRN=4"},
    /* a stride phase (ops/conv_implicit.c) */
    {"conv_implicit", "-DPASS=1 -DGC=3 -DGH=9 -DGW=7 -DGCO=5 -DGK=3 -DGS=2 -DGPAD=1 -DGOH=5 -DGOW=4 -DGPY=1 -DGPX=0 "
                      "-DTM=64 -DTN=64 -DTK=16 -DRM=4 -DRN=4"},
    {"conv_implicit", "-DPASS=2 -DGC=3 -DGH=9 -DGW=7 -DGCO=5 -DGK=1 -DGS=2 -DGPAD=0 -DGOH=5 -DGOW=4 -DTM=128 -DTN=64 "
                      "-DTK=16 -DRM=8 -DRN=4"},
    {"conv_implicit", "-DPASS=1 -DTM=64 -DTN=128 -DTK=16 -DRM=4 -DRN=8"}, /* CPUs: the geometry as an argument */
    {"conv_implicit", "-DPASS=2 -DTM=128 -DTN=128 -DTK=8 -DRM=8 -DRN=8"},
    /* TF32 tiles in their OpenCL C twin (TC 1, PTX, builds on NVIDIA only: tools/ptx/check) */
    {"conv_implicit", "-DPASS=0 -DTC=2 -DTM=128 -DTN=64 -DTK=16 -DRM=8 -DRN=4"},
    {"conv_implicit", "-DPASS=1 -DTC=2 -DGC=3 -DGH=9 -DGW=7 -DGCO=5 -DGK=3 -DGS=2 -DGPAD=1 -DGOH=5 -DGOW=4 -DGPY=1 "
                      "-DGPX=0 -DTM=64 -DTN=64 -DTK=8 -DRM=4 -DRN=4"},
    {"conv_implicit", "-DPASS=2 -DTC=2 -DTM=64 -DTN=128 -DTK=16 -DRM=4 -DRN=8"},
    {"tf32_probe", "-DTC=2"},
};

int main(void)
{
    /* PoCL keeps compiled kernels (and drops their logs) in its own cache. */
    setenv("POCL_KERNEL_CACHE", "0", 1);
    test_need_devices(1);
    int count = 0;
    REQUIRE_OK(clt_device_count(&count));
    for (int d = 0; d < count; d++) {
        clt_device *dev;
        REQUIRE_OK(clt_device_open(d, &dev));
        for (int i = 0; i < clt_kernel_source_count; i++) {
            const clt_kernel_source *k = &clt_kernel_sources[i];
            cl_int err;
            cl_program prog = clCreateProgramWithSource(dev->ctx, 1, (const char **)&k->source, &k->length, &err);
            CHECK(prog, "device %d: kernels/%s.cl: clCreateProgramWithSource: %d", d, k->name, (int)err);
            if (!prog) continue;
            for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
                if (v > 0 && strcmp(variants[v].program, k->name) != 0) continue;
                char options[256];
                snprintf(options, sizeof options, "-cl-std=CL1.2 -Werror %s", variants[v].defines);
                err = clBuildProgram(prog, 1, &dev->id, options, NULL, NULL);
                char *log = build_log(prog, dev->id);
                CHECK(err == CL_SUCCESS && !strstr(log, "warning"), "device %d (%s): kernels/%s.cl %s: build %d, log:\n%s",
                      d, dev->info.name, k->name, variants[v].defines, (int)err, log);
                free(log);
            }
            clReleaseProgram(prog);
        }
        clt_device_destroy(dev);
    }
    return test_result();
}
