/* cltrain export: a trained net as an ONNX model (clt_net_export_onnx). */
#include <stdio.h>

#include "netfile.h"
#include "outputs.h"

/* What export reads: the net; the data only where parameters alone need
 * --model's sample shape (and a builtin's class count). */
static const cli_accept export_options[] = {
    {O_ONNX, "the ONNX model to write (replaced atomically)"},
    {O_INIT_FROM, "the net: a file cltrain wrote (--export-npz), which names its model, or\nparameters alone with --model"},
    {O_RESUME, "the net of this checkpoint"},
    {O_MODEL, "the model of --init-from parameters that do not name theirs"},
    {O_DATA, "with --model: data of the net's sample shape and classes (default\nfashion-mnist)"},
    {O_LAYOUT, NULL},
    {O_LABEL, NULL},
    {O_IMAGE_SIZE, NULL},
    {O_CHANNELS, NULL},
    {O_DEVICES, "the device that reads the parameters (the first one listed; default the\nfirst of the default devices)"},
    {O_END, NULL},
};

int cli_export(int argc, char **argv)
{
    cli_options o;
    cli_options_default(&o);
    int rc = cli_parse(&o, "export", export_options, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if (!o.onnx || (!o.init_from && !o.resume)) {
        fprintf(stderr, "cltrain: export needs --onnx FILE.onnx and --init-from FILE.npz or --resume CHECKPOINT (see "
                "cltrain export --help)\n");
        return 2;
    }
    cli_outputs held = {.n = 0};
    if (cli_check_outputs(&o, &held)) return 1; /* before anything is read */
    clt_dataset *samples = NULL;
    clt_device *dev = NULL;
    clt_net *net = NULL;
    if ((rc = cli_open_device(&o, &dev)) || (rc = cli_open_net(&o, dev, &samples, &net))) goto done;
    if (clt_net_export_onnx(net, o.onnx) != CLT_OK) {
        fprintf(stderr, "cltrain: --onnx %s: %s\n", o.onnx, clt_last_error());
        rc = 1;
        goto done;
    }
    printf("wrote %s (%s)\n", o.onnx, clt_net_spec(net));
done:
    clt_net_destroy(net);
    clt_device_destroy(dev);
    clt_dataset_destroy(samples);
    cli_release_outputs(&held);
    return rc;
}
