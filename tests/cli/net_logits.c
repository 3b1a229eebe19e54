/* net_logits NET INPUT.npz OUT.npz [MODEL.onnx]: cltrain's scores for the
 * images in INPUT.npz's "x" (N, C, H, W float32, as clt_net_predict takes
 * them: its normalisation applied) from the net file NET (clt_net_open),
 * into OUT.npz's "logits" (N, classes); with MODEL.onnx, also the net
 * exported by clt_net_export_onnx. Prints the net's expanded spec. The
 * ONNX test (test_onnx.py) compares them with ONNX Runtime's. */
#include <stdio.h>
#include <stdlib.h>

#include "cltrain.h"

static int failed(const char *what)
{
    fprintf(stderr, "net_logits: %s: %s\n", what, clt_last_error());
    return 1;
}

static int run(clt_net *net, const char *input, const char *output)
{
    clt_npz *in = NULL;
    clt_npz_entry x;
    if (clt_npz_read(input, &in) != CLT_OK || clt_npz_find(in, "x", &x) != CLT_OK) {
        clt_npz_destroy(in);
        return failed(input);
    }
    int classes = clt_net_classes(net), rc = 1;
    int64_t n = x.shape[0];
    float *scores = malloc((size_t)n * (size_t)classes * sizeof *scores);
    clt_npz_writer *w = NULL;
    if (!scores)
        fprintf(stderr, "net_logits: out of memory\n");
    else if (clt_net_predict(net, x.data, CLT_PIXELS_F32, CLT_LAYOUT_NCHW, n, 0, scores) != CLT_OK)
        rc = failed("predict");
    else if (clt_npz_writer_create(output, 0, &w) != CLT_OK ||
             clt_npz_writer_add_f32(w, "logits", 2, (int64_t[]){n, classes}, scores) != CLT_OK ||
             clt_npz_writer_commit(w) != CLT_OK)
        rc = failed(output);
    else
        rc = 0;
    clt_npz_writer_destroy(w);
    free(scores);
    clt_npz_destroy(in);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: net_logits NET INPUT.npz OUT.npz [MODEL.onnx]\n");
        return 2;
    }
    clt_device *dev = NULL;
    clt_net *net = NULL;
    int rc = 1;
    if (clt_device_open(0, &dev) != CLT_OK)
        rc = failed("device 0");
    else if (clt_net_open(argv[1], dev, &net) != CLT_OK)
        rc = failed(argv[1]);
    else if (argc == 5 && clt_net_export_onnx(net, argv[4]) != CLT_OK)
        rc = failed(argv[4]);
    else if ((rc = run(net, argv[2], argv[3])) == 0)
        printf("%s\n", clt_net_spec(net));
    clt_net_destroy(net);
    clt_device_destroy(dev);
    return rc;
}
