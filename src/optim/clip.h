/* Gradient clipping by global L2 norm, as torch.nn.utils.clip_grad_norm_:
 * the gradients are scaled by min(1, max_norm / (norm + 1e-6)). Host side:
 * the trainer applies it to the reduced gradients, so every device (and any
 * number of devices) sees the same scaled gradients. */
#ifndef CLT_OPTIM_CLIP_H
#define CLT_OPTIM_CLIP_H

#include <stddef.h>

/* L2 norm of n floats, summed in double in index order. */
double clt_grad_norm(const float *g, size_t n);
/* The factor for a gradient of this norm (1 when it is within max_norm). */
float clt_clip_factor(double norm, float max_norm);

#endif
