/* Predictions from a trained net's file: the net train_arrays.c saved opens
 * on its own (model, input shape and class names come from the file), then
 * classifies colour images made here, as bytes in the NHWC layout, and
 * prints the first few with their most likely classes.
 * Exits 0 when at least 95% of the predictions are right, 1 when not, 2 on
 * an error.
 *
 * Usage: predict_arrays NET.npz
 * Build: cc predict_arrays.c $(pkg-config --cflags --libs cltrain) */
#include <stdio.h>
#include <stdlib.h>

#include "cltrain.h"

enum { SIDE = 8, CHANNELS = 3, N = 200, SHOWN = 4, TOP = 2 };

/* The task of train_arrays.c, with the class given: channel `label` bright. */
static void make_image(uint64_t *state, int label, uint8_t *px)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    double hi = 120 + 60 * (double)(*state >> 11) / 9007199254740992.0, lo = (300 - hi) / 2;
    for (int p = 0; p < SIDE * SIDE; p++)
        for (int c = 0; c < CHANNELS; c++) px[p * CHANNELS + c] = (uint8_t)(c == label ? hi : lo);
}

static clt_status predict(const char *path, int *right)
{
    int dev_index, n_dev;
    clt_device *dev = NULL;
    clt_net *net = NULL;
    uint8_t *images = malloc((size_t)N * SIDE * SIDE * CHANNELS);
    float *probs = malloc((size_t)N * 3 * sizeof *probs);
    clt_status s = images && probs ? CLT_OK : CLT_ERR_NO_MEMORY;
    if (s == CLT_OK) s = clt_device_default(&dev_index, 1, &n_dev);
    if (s == CLT_OK) s = clt_device_open(dev_index, &dev);
    if (s == CLT_OK) s = clt_net_open(path, dev, &net);
    if (s == CLT_OK && clt_net_classes(net) != 3) s = CLT_ERR_SHAPE;
    uint64_t state = 7;
    for (int i = 0; s == CLT_OK && i < N; i++) make_image(&state, i % 3, images + (size_t)i * SIDE * SIDE * CHANNELS);
    if (s == CLT_OK) s = clt_net_predict(net, images, CLT_PIXELS_U8, CLT_LAYOUT_NHWC, N, 1, probs);
    *right = 0;
    for (int i = 0; s == CLT_OK && i < N; i++) {
        int top[TOP];
        s = clt_top_k(probs + (size_t)i * 3, 3, TOP, top);
        *right += s == CLT_OK && top[0] == i % 3;
        if (s != CLT_OK || i >= SHOWN) continue;
        const char *name = clt_net_class_name(net, top[0]), *second = clt_net_class_name(net, top[1]);
        printf("image %d (%s): %s %.3f, %s %.3f\n", i, clt_net_class_name(net, i % 3) ? clt_net_class_name(net, i % 3) : "?",
               name ? name : "?", (double)probs[i * 3 + top[0]], second ? second : "?", (double)probs[i * 3 + top[1]]);
    }
    clt_net_destroy(net);
    clt_device_destroy(dev);
    free(images);
    free(probs);
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: predict_arrays NET.npz (a net saved by train_arrays NET.npz)\n");
        return 2;
    }
    int right = 0;
    clt_status s = predict(argv[1], &right);
    if (s != CLT_OK) {
        fprintf(stderr, "predict_arrays: %s: %s\n", clt_status_str(s), clt_last_error());
        return 2;
    }
    printf("%d of %d predictions right\n", right, N);
    return right >= N * 95 / 100 ? 0 : 1;
}
