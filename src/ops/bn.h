/* Batch normalisation on raw device buffers.
 *
 * x is viewed as (n, c, hw): hw = h*w for (n, c, h, w), 1 for (n, c). Every
 * per-channel vector is c floats; "pairs" are 2c floats [first c | second c].
 * All buffers of one call belong to `dev`; calls only queue work.
 *
 * Training forward, one device:
 *     clt_bn_shift_raw(x -> shift)                          shift = x[0, c, 0]
 *     clt_bn_stats_raw(x, shift -> stats)                   [sum (x-s) | sum (x-s)^2]
 *     clt_bn_finalize_raw(stats, shift, count = n*hw -> mean_invstd, running stats)
 *     clt_bn_apply_raw(x, mean_invstd, gamma, beta -> y)
 * Training backward:
 *     clt_bn_backward_stats_raw(x, dy, mean_invstd -> bstats)  [sum dy | sum dy*xhat]
 *     clt_bn_backward_apply_raw(x, dy, mean_invstd, gamma, bstats, count -> dx)
 *     dbeta = bstats[0 .. c), dgamma = bstats[c .. 2c): copy them (clEnqueueCopyBuffer,
 *     offsets 0 and c*4 bytes) into the parameter gradients.
 * Inference: clt_bn_infer_raw (running stats -> mean_invstd, then apply);
 *     backward clt_bn_backward_infer_raw for dx and clt_bn_backward_stats_raw
 *     with the same mean_invstd for dgamma / dbeta.
 *
 * Synchronised batch norm over k devices (shards n_0 + ... + n_{k-1} = B):
 *     1. every device uses ONE COMMON shift (the sums are about it): the
 *        running mean (identical on every replica, no extra transfer; exact
 *        for any shift, and as precise as the per-device path once the
 *        running mean has followed the data for a few dozen steps) or device
 *        0's clt_bn_shift_raw broadcast to all (one more small round trip;
 *        as precise as one device from the first step);
 *     2. clt_bn_stats_raw on each shard (an empty shard, n = 0, gives zeros);
 *     3. the host sums the k stats vectors (2c floats each) in device order
 *        and writes the sum back to every device;
 *     4. clt_bn_finalize_raw with count = B*hw on every device: identical
 *        mean_invstd and running statistics on every replica;
 *     5. clt_bn_apply_raw on each shard.
 *   Backward: clt_bn_backward_stats_raw per shard, host sum of the bstats
 *   (2c floats) in device order, written back; clt_bn_backward_apply_raw
 *   with the summed bstats and count = B*hw. The summed bstats ARE the
 *   parameter gradient sums of the whole batch (dbeta = first c, dgamma =
 *   second c); or copy each device's own bstats into its gradients before
 *   the host sum and let the ordinary gradient reduction add them.
 *
 * Numerics: the statistics are power sums about the shift (so they add up
 * across shards), accumulated in float: each work-item sums its positions of
 * up to 16 planes of one channel in order, then one work-group per channel
 * adds those partials by fixed strided subsets and a fixed tree
 * (deterministic: the same bits for the same shapes on the same device; no
 * atomics). With the shift near the channel mean, var = S2/M - (S1/M)^2
 * loses only a factor of about 1 + ((mean - shift)/std)^2 to cancellation;
 * with a shift of 0 and inputs ~ 100 + N(0, 1), var would be off by ~1e-3.
 * Running means as the common shift must be identical on every replica
 * (the synchronised path keeps them so).
 *
 * clt_bn_stats_raw and clt_bn_backward_stats_raw use the device scratch
 * buffer (runtime/launch.h) for their partials (at most about a quarter of
 * the size of x; 2 MB for (256, 64, 28, 28)): none of their arguments may be
 * the scratch buffer. */
#ifndef CLT_OPS_BN_H
#define CLT_OPS_BN_H

#include "ops/epilogue.h"
#include "runtime/device.h"

#define CLT_BN_EPS 1e-5f
#define CLT_BN_MOMENTUM 0.1f

/* shift[c] = x[0, c, 0] (needs n >= 1). */
clt_status clt_bn_shift_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem shift);
/* stats (2c) = [sum (x - shift) | sum (x - shift)^2] over the n*hw elements
 * of each channel of this shard; n = 0 writes zeros. */
clt_status clt_bn_stats_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem shift,
                            cl_mem stats);
/* From stats about `shift` over `count` (>= 2) elements per channel (summed
 * over shards): mean_invstd (2c) = [mean | 1/sqrt(var + eps)] with the biased
 * variance, and, when running_mean and running_var are given (both or
 * neither), running = (1 - momentum) * running + momentum * (mean, var *
 * count/(count-1)). shift may be running_mean (read before it is updated). */
clt_status clt_bn_finalize_raw(clt_device *dev, int c, double count, cl_mem stats, cl_mem shift,
                               float momentum, float eps, cl_mem running_mean, cl_mem running_var,
                               cl_mem mean_invstd);
/* y = (x - mean) * invstd * gamma + beta; gamma NULL = 1, beta NULL = 0; y may be x.
 * epi (NULL: none): a tensor added (epi->add, shaped as x, not y) and then a
 * ReLU, fused into the store (ops/epilogue.h). */
clt_status clt_bn_apply_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem mean_invstd,
                            cl_mem gamma, cl_mem beta, const clt_epilogue *epi, cl_mem y);

/* mean_invstd = [running_mean | 1/sqrt(running_var + eps)]. */
clt_status clt_bn_infer_stats_raw(clt_device *dev, int c, cl_mem running_mean, cl_mem running_var,
                                  float eps, cl_mem mean_invstd);
/* Inference forward: clt_bn_infer_stats_raw then clt_bn_apply_raw;
 * mean_invstd (2c) is written for the backward. */
clt_status clt_bn_infer_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem running_mean,
                            cl_mem running_var, float eps, cl_mem gamma, cl_mem beta,
                            cl_mem mean_invstd, const clt_epilogue *epi, cl_mem y);

/* bstats (2c) = [sum dy | sum dy * xhat], xhat = (x - mean) * invstd, over
 * this shard (n = 0 writes zeros). In both modes these are dbeta and dgamma.
 * The backward launchers read dy through epi's ReLU derivative (epi: the
 * forward's, with its output; NULL: none). */
clt_status clt_bn_backward_stats_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem dy,
                                     const clt_epilogue *epi, cl_mem mean_invstd, cl_mem bstats);
/* Training mode: dx = gamma * invstd * (dy - B1/count - xhat * B2/count) with
 * bstats = [B1 | B2] summed over the `count` elements per channel of the
 * whole (possibly multi-device) batch. dx may be dy. */
clt_status clt_bn_backward_apply_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem dy,
                                     const clt_epilogue *epi, cl_mem mean_invstd, cl_mem gamma, cl_mem bstats,
                                     double count, cl_mem dx);
/* Statistics held fixed (inference): dx = gamma * invstd * dy. dx may be dy. */
clt_status clt_bn_backward_infer_raw(clt_device *dev, int n, int c, int hw, cl_mem dy, const clt_epilogue *epi,
                                     cl_mem mean_invstd, cl_mem gamma, cl_mem dx);

#endif
