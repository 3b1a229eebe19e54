/* Training on arrays a program already holds: colour images made here, in
 * the NHWC layout most image code uses, handed to cltrain with
 * clt_dataset_from_memory (which copies them), then trained on every
 * OpenCL device cltrain picks and evaluated on held-out images.
 *
 * The task needs colour: an 8x8 image is class k when channel k is the
 * bright one, but every image has the same grey level (the channels' mean),
 * so a one-channel reading of these images cannot tell the classes apart.
 * Exits 0 when the net reaches 95% test accuracy, 1 when it does not, 2 on
 * an error. With a path argument the trained net is saved there, with its
 * model and class names, for predict_arrays.c to open.
 *
 * Build: cc train_arrays.c $(pkg-config --cflags --libs cltrain) */
#include <stdio.h>
#include <stdlib.h>

#include "cltrain.h"

enum { SIDE = 8, CHANNELS = 3, CLASSES = 3, TRAIN = 1536, TEST = 512 };

/* A small deterministic generator, so every run sees the same images. */
static double uniform(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* n images (NHWC bytes) and labels: channel `label` at level hi, the other
 * two at lo, with hi + 2 lo the same for every image, plus a little noise. */
static void make_images(int n, uint64_t seed, uint8_t *images, int32_t *labels)
{
    uint64_t state = seed;
    for (int i = 0; i < n; i++) {
        int label = (int)(uniform(&state) * CLASSES) % CLASSES;
        double hi = 120 + 60 * uniform(&state), lo = (300 - hi) / 2;
        labels[i] = label;
        for (int p = 0; p < SIDE * SIDE; p++)
            for (int c = 0; c < CHANNELS; c++) {
                double v = (c == label ? hi : lo) + 8 * (uniform(&state) - 0.5);
                images[(i * SIDE * SIDE + p) * CHANNELS + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    }
}

static clt_status make_dataset(int n, uint64_t seed, clt_dataset **out)
{
    uint8_t *images = malloc((size_t)n * SIDE * SIDE * CHANNELS);
    int32_t *labels = malloc((size_t)n * sizeof *labels);
    if (!images || !labels) {
        free(images);
        free(labels);
        return CLT_ERR_NO_MEMORY;
    }
    make_images(n, seed, images, labels);
    clt_dataset_desc desc;
    clt_dataset_desc_default(&desc);
    desc.n = n;
    desc.channels = CHANNELS;
    desc.height = desc.width = SIDE;
    desc.type = CLT_PIXELS_U8;
    desc.layout = CLT_LAYOUT_NHWC;
    desc.images = images;
    desc.labels = labels;
    desc.classes = CLASSES;
    clt_status s = clt_dataset_from_memory(&desc, out);
    free(images); /* the dataset holds its own copy */
    free(labels);
    return s;
}

static clt_status train(const clt_dataset *train_set, const clt_dataset *test_set, const char *save,
                        double *accuracy)
{
    clt_trainer_config cfg;
    clt_trainer_config_default(&cfg);
    cfg.spec = "conv:8:3:1:1,relu,gap,flatten,dense:3";
    cfg.channels = CHANNELS;
    cfg.height = cfg.width = SIDE;
    cfg.lr = 0.5f;
    cfg.init = CLT_INIT_XAVIER;
    clt_trainer *t = NULL;
    clt_batcher *b = NULL;
    clt_batcher_config bc;
    clt_batcher_config_default(&bc);
    bc.batch_size = 64;
    clt_status s = clt_trainer_create(&cfg, &t);
    if (s == CLT_OK) s = clt_batcher_create(train_set, &bc, &b);
    for (int64_t step = 0; s == CLT_OK && step < 8 * clt_batcher_batches_per_epoch(b);) {
        clt_batch batch;
        s = clt_batcher_next(b, &batch);
        if (s != CLT_OK || batch.count == 0) continue; /* 0: an epoch ended */
        s = clt_trainer_step(t, batch.images, batch.labels, batch.count, NULL, NULL);
        step++;
    }
    if (s == CLT_OK) s = clt_trainer_evaluate(t, test_set, 256, NULL, accuracy);
    /* replica 0's net is what files keep; names make predictions readable */
    static const char *const names[CLASSES] = {"red", "green", "blue"};
    if (s == CLT_OK && save) s = clt_net_set_class_names(clt_trainer_net(t, 0), names);
    if (s == CLT_OK && save) s = clt_net_save_npz(clt_trainer_net(t, 0), save);
    clt_batcher_destroy(b);
    clt_trainer_destroy(t);
    return s;
}

int main(int argc, char **argv)
{
    clt_dataset *train_set = NULL, *test_set = NULL;
    double accuracy = 0;
    clt_status s = make_dataset(TRAIN, 1, &train_set);
    if (s == CLT_OK) s = make_dataset(TEST, 2, &test_set);
    if (s == CLT_OK) s = train(train_set, test_set, argc > 1 ? argv[1] : NULL, &accuracy);
    clt_dataset_destroy(train_set);
    clt_dataset_destroy(test_set);
    if (s != CLT_OK) {
        fprintf(stderr, "train_arrays: %s: %s\n", clt_status_str(s), clt_last_error());
        return 2;
    }
    printf("test accuracy %.4f on %d colour images\n", accuracy, TEST);
    return accuracy >= 0.95 ? 0 : 1;
}
