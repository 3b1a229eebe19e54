/* The TF32 probe's product (src/runtime/tf32_probe.c): one warp computes
 * c (16 x 8, row-major) = a (16 x 8, row-major) times b (8 x 8, row-major)
 * through prelude.h's tensor-core helpers, built with the -DTC of the
 * convolution (1: PTX mma, 2: its OpenCL C twin), so that the host can
 * compare it with its own TF32 product before any convolution uses them:
 * it checks the rounding, the fragment layout and that the driver passes
 * the PTX through. */
#ifdef TF32_FA /* built with -DTC only (alone it is an empty program) */

__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void tf32_probe(__global const float *a,
                                                                         __global const float *b, __global float *c)
{
    __local float sa[8 * 16], sb[8 * 8];
    int lane = get_local_id(0);
    for (int e = lane; e < 16 * 8; e += 32) sa[(e % 8) * 16 + e / 8] = tf32_round(a[e]);
    for (int e = lane; e < 8 * 8; e += 32) sb[e] = tf32_round(b[e]);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint fa[TF32_FA], fb[TF32_FB];
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    tf32_frag_a(sa, 16, lane, fa);
    tf32_frag_b(sb, 8, lane, fb);
    tf32_mma(acc, fa, fb);
    for (int r = 0; r < 4; r++) c[(lane / 4 + 8 * (r >> 1)) * 8 + 2 * (lane % 4) + (r & 1)] = acc[r];
}
#endif
