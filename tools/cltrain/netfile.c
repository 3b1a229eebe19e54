/* The trained net predict and export read (netfile.h). */
#include "netfile.h"

#include <stdio.h>
#include <stdlib.h>

#include "runmeta.h"

int cli_load_samples(const cli_options *o, clt_dataset **out)
{
    if (cli_load_split(o, o->data, CLT_SUBSET_TEST, 1, o->limit_test, "--data", out)) return 1;
    if (*out) return 0;
    fprintf(stderr, "cltrain: --data %s: no samples found there\n", o->data);
    return 1;
}

int cli_open_device(const cli_options *o, clt_device **dev)
{
    int devs[CLT_MAX_DEVICES], n_devs = 0, rc = cli_resolve_devices(o, devs, &n_devs);
    if (rc) return rc;
    if (clt_device_open(devs[0], dev) == CLT_OK) return 0;
    fprintf(stderr, "cltrain: device %d: %s\n", devs[0], clt_last_error());
    return 1;
}

int cli_open_net(const cli_options *o, clt_device *dev, clt_dataset **samples, clt_net **net)
{
    const char *path = o->resume ? o->resume : o->init_from, *opt = o->resume ? "--resume" : "--init-from";
    char *spec = NULL;
    if (run_meta_file_spec(path, opt, &spec)) return 1;
    int named = spec != NULL;
    free(spec);
    if (named && !CLI_GIVEN(o, O_MODEL)) {
        if (clt_net_open(path, dev, net) == CLT_OK) return 0;
        fprintf(stderr, "cltrain: %s: %s\n", opt, clt_last_error());
        return 1;
    }
    if (o->resume) {
        fprintf(stderr, "cltrain: --model does not apply with --resume: the checkpoint names its model\n");
        return 2;
    }
    if (!CLI_GIVEN(o, O_MODEL)) {
        fprintf(stderr, "cltrain: --init-from %s holds parameters alone (no model spec): name the model with --model\n",
                path);
        return 2;
    }
    if (!samples) {
        fprintf(stderr, "cltrain: --model over parameters alone takes its input shape from --data; image files need "
                "a net file that names its model (--export-npz writes one)\n");
        return 2;
    }
    int rc, c, h, w;
    if (!*samples && (rc = cli_load_samples(o, samples))) return rc;
    clt_dataset_shape(*samples, &c, &h, &w);
    char sized[1024];
    const char *model = cli_model_for_classes(o->model, clt_dataset_classes(*samples), sized, sizeof sized);
    if (clt_net_create(dev, model, c, h, w, net) != CLT_OK) {
        fprintf(stderr, "cltrain: --model %.200s: %s\n", o->model, clt_last_error());
        return 2;
    }
    if (clt_net_load_npz(*net, path) == CLT_OK) return 0;
    fprintf(stderr, "cltrain: --init-from: %s\n", clt_last_error());
    return 1;
}
