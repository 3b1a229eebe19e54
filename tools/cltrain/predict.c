/* cltrain predict: each sample's most likely classes, with their
 * probabilities, from a trained net's file; the samples from a dataset
 * source or PNG and JPEG files named on the command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "data/image_files.h"
#include "netfile.h"
#include "outputs.h"

static const cli_accept predict_options[] = {
    {O_INIT_FROM, "the net: a file cltrain wrote (--export-npz), which names its model, or\nparameters alone with --model"},
    {O_RESUME, "the net of this checkpoint"},
    {O_MODEL, "the model of --init-from parameters that do not name theirs"},
    {O_DATA, "the samples: a source's test split, or its one split where it has one\n(default fashion-mnist)"},
    {O_LAYOUT, NULL},
    {O_LABEL, NULL},
    {O_IMAGE_SIZE, "images: the shorter side resized to S (bilinear), then the centre S x S\n(default: images of the net's size)"},
    {O_CHANNELS, "image folders: 1 (grey) or 3 (RGB); image files take the net's channels"},
    {O_LTEST, "predict the first N samples (default all)"},
    {O_DEVICES, "the device to predict on (the first one listed; default the first of the\ndefault devices)"},
    {O_BATCH, "samples per pass (default 256)"},
    {O_TOP, NULL},
    {O_OUTPUT, NULL},
    {O_END, NULL},
};

/* The samples fit the net. */
static int check_shape(const clt_net *net, const clt_dataset *ds, const cli_options *o)
{
    int nc, nh, nw, c, h, w;
    clt_net_input_shape(net, &nc, &nh, &nw);
    clt_dataset_shape(ds, &c, &h, &w);
    if (c == nc && h == nh && w == nw) return 0;
    fprintf(stderr, "cltrain: --data %s: the samples are %dx%dx%d (channels x height x width) but the net takes "
            "%dx%dx%d\n", o->data, c, h, w, nc, nh, nw);
    return 1;
}

/* A CSV field: quoted where it holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Class k as the net names it, else its index. */
static void put_class(FILE *f, const clt_net *net, int k)
{
    const char *name = clt_net_class_name(net, k);
    if (name) csv_field(f, name);
    else fprintf(f, "%d", k);
}

/* The header line: the first columns, then class_j,prob_j for j = 1..k. */
static void put_header(FILE *f, const char *first, int k)
{
    fputs(first, f);
    for (int j = 1; j <= k; j++) fprintf(f, ",class_%d,prob_%d", j, j);
    fputc('\n', f);
}

/* The rest of a line: the row's k best classes (into top) and their
 * probabilities. */
static void put_top(FILE *f, const clt_net *net, const float *row, int *top, int k)
{
    clt_top_k(row, clt_net_classes(net), k, top);
    for (int j = 0; j < k; j++) {
        fputc(',', f);
        put_class(f, net, top[j]);
        fprintf(f, ",%.6f", (double)row[top[j]]);
    }
    fputc('\n', f);
}

/* One CSV line per sample; *hits counts top-1 classes equal to the label. */
static int predict_all(const cli_options *o, clt_net *net, const clt_dataset *ds, FILE *f, int64_t *hits)
{
    int c, h, w, k = (int)o->top, classes = clt_net_classes(net);
    clt_dataset_shape(ds, &c, &h, &w);
    int64_t n = clt_dataset_size(ds), chunk = n < o->batch_size ? n : o->batch_size;
    float *x = malloc((size_t)chunk * (size_t)c * (size_t)h * (size_t)w * sizeof *x);
    float *p = malloc((size_t)chunk * (size_t)classes * sizeof *p);
    int32_t *labels = malloc((size_t)chunk * sizeof *labels);
    int *top = malloc((size_t)k * sizeof *top);
    int rc = x && p && labels && top ? 0 : 1;
    if (rc) fprintf(stderr, "cltrain: predict: out of memory for %lld samples a pass\n", (long long)chunk);
    if (!rc) put_header(f, "sample,label", k);
    *hits = 0;
    for (int64_t at = 0; !rc && at < n; at += chunk) {
        int m = (int)(n - at < chunk ? n - at : chunk);
        if (clt_dataset_read(ds, at, m, x, labels) != CLT_OK ||
            clt_net_predict(net, x, CLT_PIXELS_F32, CLT_LAYOUT_NCHW, m, 1, p) != CLT_OK) {
            fprintf(stderr, "cltrain: predicting samples %lld to %lld: %s\n", (long long)at, (long long)(at + m - 1),
                    clt_last_error());
            rc = 1;
            break;
        }
        for (int i = 0; i < m; i++) {
            fprintf(f, "%lld,", (long long)(at + i));
            put_class(f, net, labels[i]);
            put_top(f, net, p + (size_t)i * (size_t)classes, top, k);
            *hits += top[0] == labels[i];
        }
    }
    free(x);
    free(p);
    free(labels);
    free(top);
    return rc;
}

/* Image file i, decoded and made the net's channels x height x width
 * (resized and cropped with --image-size; otherwise it must have the net's
 * size). */
static int read_image(const cli_options *o, const clt_net *net, const char *path, uint8_t *to)
{
    int c, h, w;
    clt_net_input_shape(net, &c, &h, &w);
    clt_image im;
    if (clt_image_decode_file(path, &im) != CLT_OK) {
        fprintf(stderr, "cltrain: %s\n", clt_last_error());
        return 1;
    }
    int fits = o->image_size ? (o->image_size == h && h == w) : (im.width == w && im.height == h);
    if (fits) clt_image_to_chw(&im, (int)o->image_size, c, h, w, to);
    else if (o->image_size)
        fprintf(stderr, "cltrain: --image-size %lld makes %lldx%lld images, the net takes %dx%d (height x width)\n",
                (long long)o->image_size, (long long)o->image_size, (long long)o->image_size, h, w);
    else
        fprintf(stderr, "cltrain: %s is %dx%d (height x width), the net takes %dx%d: give --image-size to resize "
                "and crop\n", path, im.height, im.width, h, w);
    free(im.pixels);
    return !fits;
}

/* One CSV line per image file named on the command line. */
static int predict_files(const cli_options *o, clt_net *net, FILE *f)
{
    int c, h, w, k = (int)o->top, classes = clt_net_classes(net);
    clt_net_input_shape(net, &c, &h, &w);
    size_t sample = (size_t)c * (size_t)h * (size_t)w;
    int64_t chunk = o->n_files < o->batch_size ? o->n_files : o->batch_size;
    uint8_t *x = malloc((size_t)chunk * sample);
    float *p = malloc((size_t)chunk * (size_t)classes * sizeof *p);
    int *top = malloc((size_t)k * sizeof *top);
    int rc = x && p && top ? 0 : 1;
    if (rc) fprintf(stderr, "cltrain: predict: out of memory for %lld images a pass\n", (long long)chunk);
    if (!rc) put_header(f, "file", k);
    for (int64_t at = 0; !rc && at < o->n_files; at += chunk) {
        int m = (int)(o->n_files - at < chunk ? o->n_files - at : chunk);
        for (int i = 0; !rc && i < m; i++) rc = read_image(o, net, o->files[at + i], x + (size_t)i * sample);
        if (!rc && clt_net_predict(net, x, CLT_PIXELS_U8, CLT_LAYOUT_NCHW, m, 1, p) != CLT_OK) {
            fprintf(stderr, "cltrain: predicting %s and on: %s\n", o->files[at], clt_last_error());
            rc = 1;
        }
        for (int i = 0; !rc && i < m; i++) {
            csv_field(f, o->files[at + i]);
            put_top(f, net, p + (size_t)i * (size_t)classes, top, k);
        }
    }
    free(x);
    free(p);
    free(top);
    return rc;
}

/* The predictions into --output, atomically, or onto standard output. */
static int run(const cli_options *o, clt_net *net, const clt_dataset *ds)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = o->output ? open_memstream(&text, &len) : stdout;
    if (!f) {
        fprintf(stderr, "cltrain: --output: out of memory\n");
        return 1;
    }
    int64_t hits = 0;
    int rc = ds ? predict_all(o, net, ds, f, &hits) : predict_files(o, net, f);
    if (o->output && fclose(f) != 0 && !rc) {
        fprintf(stderr, "cltrain: --output: out of memory\n");
        rc = 1;
    }
    if (!rc && o->output && clt_write_file_atomic(o->output, text, len) != CLT_OK) {
        fprintf(stderr, "cltrain: --output: %s\n", clt_last_error());
        rc = 1;
    }
    free(text);
    if (!rc && ds)
        fprintf(stderr, "cltrain: %lld samples predicted; the first class is the label for %lld (%.4f)\n",
                (long long)clt_dataset_size(ds), (long long)hits, (double)hits / (double)clt_dataset_size(ds));
    return rc;
}

int cli_predict(int argc, char **argv)
{
    cli_options o;
    cli_options_default(&o);
    o.top = 1;
    o.files_ok = 1;
    int rc = cli_parse(&o, "predict", predict_options, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if (o.n_files && (CLI_GIVEN(&o, O_DATA) || CLI_GIVEN(&o, O_LTEST) || CLI_GIVEN(&o, O_CHANNELS))) {
        fprintf(stderr, "cltrain: %s applies to --data, not to image files (%s ...)\n",
                CLI_GIVEN(&o, O_DATA) ? "--data" : CLI_GIVEN(&o, O_LTEST) ? "--limit-test" : "--channels", o.files[0]);
        return 2;
    }
    if (!o.init_from && !o.resume) {
        fprintf(stderr, "cltrain: predict needs --init-from FILE.npz or --resume CHECKPOINT (see cltrain predict --help)\n");
        return 2;
    }
    cli_outputs held = {.n = 0};
    if (cli_check_outputs(&o, &held)) return 1;
    clt_dataset *ds = NULL;
    clt_device *dev = NULL;
    clt_net *net = NULL;
    if ((rc = cli_open_device(&o, &dev)) || (!o.n_files && (rc = cli_load_samples(&o, &ds)))) goto done;
    if ((rc = cli_open_net(&o, dev, o.n_files ? NULL : &ds, &net)) || (ds && (rc = check_shape(net, ds, &o))))
        goto done;
    if (o.top > clt_net_classes(net)) {
        fprintf(stderr, "cltrain: --top %lld: the net has %d classes\n", (long long)o.top, clt_net_classes(net));
        rc = 2;
        goto done;
    }
    rc = run(&o, net, ds);
done:
    clt_net_destroy(net);
    clt_device_destroy(dev);
    clt_dataset_destroy(ds);
    cli_release_outputs(&held);
    return rc;
}
