/* Fused softmax cross-entropy, one work-item per row of `classes` logits.
 * Numerically stable: the row maximum is subtracted before exp, so logits of
 * any finite size give finite losses and gradients.
 *   stats[2r]   = log(sum_j exp(x_j - max)) + max - x[label]
 *   stats[2r+1] = 1 if the first maximum of the row is at label, else 0
 *   dlogits[r]  = scale * (softmax(x) - onehot(label))
 * With label smoothing E (smooth, PyTorch's CrossEntropyLoss(label_smoothing)):
 *   loss = (1 - E) nll + E mean_j(-log p_j) = lse - (1 - E) x[label] - E mean(x)
 *   dlogits = scale * (softmax(x) - (1 - E) onehot(label) - E / classes)
 * A label outside [0, classes) gives a NaN loss and NaN gradients for its row
 * (never an out-of-bounds read); the host reports it. stats or dlogits may be
 * NULL when the matching want_* flag is 0. */
__kernel void loss_xent(__global const float *logits, __global const int *labels,
                        __global float *dlogits, __global float *stats, const float scale,
                        const int rows, const int classes, const int want_grad,
                        const int want_stats, const float smooth)
{
    int r = get_global_id(0);
    if (r >= rows) return;
    __global const float *x = logits + (size_t)r * classes;
    float m = x[0];
    int am = 0;
    for (int j = 1; j < classes; j++) {
        float v = x[j];
        if (v > m) {
            m = v;
            am = j;
        }
    }
    float sum = 0.0f;
    for (int j = 0; j < classes; j++) sum += exp(x[j] - m);
    int label = labels[r];
    int ok = label >= 0 && label < classes;
    float mean = 0.0f; /* of x - m, for smoothing */
    if (smooth != 0.0f) {
        for (int j = 0; j < classes; j++) mean += x[j] - m;
        mean /= (float)classes;
    }
    if (want_stats) {
        float lse = log(sum); /* of x - m */
        stats[2 * r] = !ok ? NAN
                     : smooth != 0.0f ? lse - (1.0f - smooth) * (x[label] - m) - smooth * mean
                                      : -((x[label] - m) - lse);
        stats[2 * r + 1] = ok && am == label ? 1.0f : 0.0f;
    }
    if (want_grad) {
        __global float *d = dlogits + (size_t)r * classes;
        float inv = 1.0f / sum;
        for (int j = 0; j < classes; j++) {
            float p = exp(x[j] - m) * inv;
            float t = smooth != 0.0f ? (j == label ? 1.0f - smooth : 0.0f) + smooth / (float)classes
                                     : (j == label ? 1.0f : 0.0f);
            d[j] = ok ? scale * (p - t) : NAN;
        }
    }
}
