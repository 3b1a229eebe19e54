/* A net's file opens on its own (clt_net_open) with its normalisation and
 * class names; clt_net_predict equals a forward pass on inputs normalised
 * by hand, for bytes and floats, NCHW and NHWC, past one chunk; the
 * setters refuse bad values; a file whose own keys disagree with its net
 * is refused naming the key; clt_top_k orders as documented. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/npz.h"
#include "nn/net_npz.h"

#define SPEC "conv:4:3,relu,maxpool:2,flatten,dense:3"
#define C 3
#define H 8
#define W 8
#define N 300 /* past the 256 samples of one prediction pass */

static char dir[256];

static void top_k(void)
{
    const float s[] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
    int top[5];
    CHECK_OK(clt_top_k(s, 5, 5, top));
    CHECK(top[0] == 1 && top[1] == 3 && top[2] == 4 && top[3] == 0 && top[4] == 2, "order %d %d %d %d %d", top[0],
          top[1], top[2], top[3], top[4]);
    CHECK_OK(clt_top_k(s, 5, 1, top));
    CHECK(top[0] == 1, "ties: the lower index first, got %d", top[0]);
    CHECK_FAIL(clt_top_k(s, 5, 6, top), CLT_ERR_INVALID_ARG, "k 6 of 5");
    CHECK_FAIL(clt_top_k(s, 5, 0, top), CLT_ERR_INVALID_ARG, "k 0");
}

/* What a net keeps refuses bad values and leaves its own. */
static void setters(clt_net *net)
{
    const float mean[C] = {0.5f, 0.4f, 0.3f}, std[C] = {0.25f, 0.2f, 0.1f}, bad[C] = {0.25f, 0.0f, 0.1f};
    const char *names[3] = {"cat", "dog", "bird"}, *ctrl[3] = {"cat", "d\nog", "bird"}, *empty[3] = {"cat", "", "b"};
    CHECK_FAIL(clt_net_set_normalization(net, mean, bad), CLT_ERR_INVALID_ARG, "channel 1", "std > 0");
    CHECK_FAIL(clt_net_set_normalization(net, mean, NULL), CLT_ERR_INVALID_ARG, "both");
    CHECK(!clt_net_normalization(net, NULL, NULL), "a refused normalisation was kept");
    CHECK_OK(clt_net_set_normalization(net, mean, std));
    float m[C], s[C];
    CHECK(clt_net_normalization(net, m, s) && m[2] == 0.3f && s[0] == 0.25f, "normalisation kept");
    CHECK_FAIL(clt_net_set_class_names(net, ctrl), CLT_ERR_INVALID_ARG, "class 1", "control character");
    CHECK_FAIL(clt_net_set_class_names(net, empty), CLT_ERR_INVALID_ARG, "class 1", "0 bytes");
    CHECK(clt_net_class_name(net, 0) == NULL, "a refused name list was kept");
    CHECK_OK(clt_net_set_class_names(net, names));
    CHECK(!strcmp(clt_net_class_name(net, 2), "bird") && !clt_net_class_name(net, 3), "names kept");
    int c, h, w;
    clt_net_input_shape(net, &c, &h, &w);
    CHECK(c == C && h == H && w == W, "input shape %d %d %d", c, h, w);
}

/* predict equals forward on the inputs x/255 normalised by hand. */
static void predict(clt_net *net, const uint8_t *u8)
{
    float m[C], s[C];
    clt_net_normalization(net, m, s);
    size_t per = (size_t)C * H * W;
    float *x = malloc(N * per * sizeof *x), *want = malloc(N * 3 * sizeof *want), *got = malloc(N * 3 * sizeof *got);
    uint8_t *nhwc = malloc(N * per);
    for (size_t i = 0; i < N * per; i++) {
        int ch = (int)(i / (H * W) % C);
        x[i] = ((float)u8[i] / 255.0f - m[ch]) / s[ch];
    }
    for (int i = 0; i < N; i += 100) { /* forward in pieces of 100 */
        REQUIRE_OK(clt_net_forward(net, x + (size_t)i * per, 100, 0));
        REQUIRE_OK(clt_net_output(net, want + (size_t)i * 3, 300));
    }
    CHECK_OK(clt_net_predict(net, u8, CLT_PIXELS_U8, CLT_LAYOUT_NCHW, N, 0, got));
    double worst = 0;
    for (int i = 0; i < N * 3; i++) worst = fmax(worst, fabs(got[i] - want[i]));
    CHECK(worst <= 1e-5, "bytes: predict differs from forward by %g", worst);
    for (int i = 0; i < N; i++)
        for (int p = 0; p < H * W; p++)
            for (int ch = 0; ch < C; ch++) nhwc[((size_t)i * H * W + p) * C + ch] = u8[(size_t)i * per + ch * H * W + p];
    float *got2 = malloc(N * 3 * sizeof *got2);
    CHECK_OK(clt_net_predict(net, nhwc, CLT_PIXELS_U8, CLT_LAYOUT_NHWC, N, 0, got2));
    CHECK(memcmp(got, got2, N * 3 * sizeof *got) == 0, "NHWC predicts otherwise than NCHW");
    /* floats are taken as they are: x/255 given, the same result */
    for (size_t i = 0; i < N * per; i++) x[i] = (float)u8[i] / 255.0f;
    CHECK_OK(clt_net_predict(net, x, CLT_PIXELS_F32, CLT_LAYOUT_AUTO, N, 1, got2));
    double sum_err = 0;
    for (int i = 0; i < N; i++) {
        double sum = 0, top = -INFINITY;
        for (int k = 0; k < 3; k++) top = fmax(top, got[i * 3 + k]);
        for (int k = 0; k < 3; k++) sum += exp(got[i * 3 + k] - top);
        for (int k = 0; k < 3; k++) sum_err = fmax(sum_err, fabs(got2[i * 3 + k] - exp(got[i * 3 + k] - top) / sum));
    }
    CHECK(sum_err <= 1e-6, "probabilities differ from the softmax of the scores by %g", sum_err);
    x[5] = NAN;
    CHECK_FAIL(clt_net_predict(net, x, CLT_PIXELS_F32, CLT_LAYOUT_NCHW, N, 1, got2), CLT_ERR_INVALID_ARG, "samples 0 to");
    CHECK_FAIL(clt_net_predict(net, u8, CLT_PIXELS_U8, CLT_LAYOUT_NCHW, 0, 0, got2), CLT_ERR_INVALID_ARG, "0 samples");
    free(x);
    free(want);
    free(got);
    free(got2);
    free(nhwc);
}

/* A copy of the net's file with one of its own entries replaced. */
static void write_altered(const clt_net *net, const char *path, const char *key, const void *bytes, size_t n,
                          const float *f, int64_t rows, int64_t cols)
{
    clt_npz_writer *w;
    REQUIRE_OK(clt_npz_writer_create(path, 0, &w));
    REQUIRE_OK(clt_net_npz_add(w, net, 0, ""));
    REQUIRE_OK(clt_npz_writer_add_bytes(w, "__cltrain__/spec", SPEC, strlen(SPEC)));
    REQUIRE_OK(clt_npz_writer_add_f32(w, "__cltrain__/input", 1, (int64_t[]){3}, (float[]){C, H, W}));
    if (bytes) REQUIRE_OK(clt_npz_writer_add_bytes(w, key, bytes, n));
    else REQUIRE_OK(clt_npz_writer_add_f32(w, key, 2, (int64_t[]){rows, cols}, f));
    REQUIRE_OK(clt_npz_writer_commit(w));
    clt_npz_writer_destroy(w);
}

static void bad_files(clt_device *dev, const clt_net *net)
{
    char path[300];
    clt_net *out = NULL;
    snprintf(path, sizeof path, "%s/bad.npz", dir);
    write_altered(net, path, "__cltrain__/classes", "a\nb\n", 4, NULL, 0, 0);
    CHECK_FAIL(clt_net_open(path, dev, &out), CLT_ERR_FORMAT, "__cltrain__/classes", "names 2 classes", "has 3");
    write_altered(net, path, "__cltrain__/classes", "a\nb\nc", 5, NULL, 0, 0);
    CHECK_FAIL(clt_net_open(path, dev, &out), CLT_ERR_FORMAT, "does not end with a newline");
    write_altered(net, path, "__cltrain__/normalize", NULL, 0, (float[]){0, 0, 1, 1}, 2, 2);
    CHECK_FAIL(clt_net_open(path, dev, &out), CLT_ERR_FORMAT, "__cltrain__/normalize", "(2, 3)");
    write_altered(net, path, "__cltrain__/normalize", NULL, 0, (float[]){0, 0, 0, 1, -1, 1}, 2, 3);
    CHECK_FAIL(clt_net_open(path, dev, &out), CLT_ERR_FORMAT, "__cltrain__/normalize", "std");
    CHECK(out == NULL, "a refused file gave a net");
    CHECK_FAIL(clt_net_load_npz((clt_net *)net, path), CLT_ERR_FORMAT, "__cltrain__/normalize");
    /* parameters alone: clt_net_open says what to do instead */
    clt_npz_writer *w;
    REQUIRE_OK(clt_npz_writer_create(path, 0, &w));
    REQUIRE_OK(clt_net_npz_add(w, net, 0, ""));
    REQUIRE_OK(clt_npz_writer_commit(w));
    clt_npz_writer_destroy(w);
    CHECK_FAIL(clt_net_open(path, dev, &out), CLT_ERR_FORMAT, "__cltrain__/spec", "clt_net_load_npz");
    unlink(path);
}

int main(void)
{
    test_need_devices(1);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/clt-net-open-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return 1;
    top_k();
    clt_device *dev;
    REQUIRE_OK(clt_device_open(0, &dev));
    clt_net *net, *opened = NULL;
    REQUIRE_OK(clt_net_create(dev, SPEC, C, H, W, &net));
    REQUIRE_OK(clt_net_init(net, 7, CLT_INIT_XAVIER));
    setters(net);
    uint8_t *u8 = malloc((size_t)N * C * H * W);
    for (size_t i = 0; i < (size_t)N * C * H * W; i++) u8[i] = (uint8_t)((i * 2654435761u) >> 13);
    predict(net, u8);

    char path[300];
    snprintf(path, sizeof path, "%s/net.npz", dir);
    CHECK_OK(clt_net_save_npz(net, path));
    CHECK_OK(clt_net_open(path, dev, &opened));
    if (opened) {
        float a[N * 3], b[N * 3];
        CHECK_OK(clt_net_predict(net, u8, CLT_PIXELS_U8, CLT_LAYOUT_NCHW, N, 1, a));
        CHECK_OK(clt_net_predict(opened, u8, CLT_PIXELS_U8, CLT_LAYOUT_NCHW, N, 1, b));
        CHECK(memcmp(a, b, sizeof a) == 0, "the opened net predicts otherwise");
        CHECK(!strcmp(clt_net_spec(opened), SPEC) && !strcmp(clt_net_class_name(opened, 1), "dog"),
              "spec and names travel");
        /* loading a file into a net takes its normalisation and names too */
        clt_net *fresh;
        REQUIRE_OK(clt_net_create(dev, SPEC, C, H, W, &fresh));
        CHECK_OK(clt_net_load_npz(fresh, path));
        CHECK(clt_net_normalization(fresh, NULL, NULL) && clt_net_class_name(fresh, 0), "load_npz takes them");
        clt_net_destroy(fresh);
    }
    bad_files(dev, net);
    unlink(path);
    clt_net_destroy(opened);
    clt_net_destroy(net);
    free(u8);
    clt_device_destroy(dev);
    CHECK(rmdir(dir) == 0, "files left in %s", dir);
    return test_result();
}
