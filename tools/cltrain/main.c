/* cltrain: train, and benchmark, convolutional networks on every OpenCL
 * device of the machine. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cltrain_diag.h"
#include "log.h"
#include "options.h"
#include "stop.h"
#include "world.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: cltrain COMMAND [options]\n\n"
            "Commands:\n"
            "  train    train a model on a dataset across devices (cltrain train --help)\n"
            "  eval     test loss, accuracy and confusion matrix of saved parameters (cltrain eval --help)\n"
            "  predict  each sample's most likely classes from a trained net (cltrain predict --help)\n"
            "  export   a trained net as an ONNX model (cltrain export --help)\n"
            "  bench    bench train: samples/s and scaling over devices; bench ops: every op's\n"
            "           time and fraction of the device's measured peak (cltrain bench --help)\n"
            "  tune     measure the convolution kernels' configurations ahead of training\n"
            "           (cltrain tune --help)\n\n"
            "  --version, --help\n"
            "Devices are numbered as cltrain-smi lists them.\n");
}

/* What a command printed must have reached standard output: a result
 * lost to a full disk is an error (a closed pipe train reports itself). */
static int flushed(int rc)
{
    clt_release_shared_caches(); /* every device is closed by now */
    if (rc) return rc; /* said already */
    int err = stop_check_output(stdout);
    if (!err) return 0;
    if (err == EPIPE) return 128 + SIGPIPE;
    fprintf(stderr, "cltrain: writing to standard output failed: %s\n", strerror(err));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (cli_log_check()) return 2;
    if (stop_init()) return 1; /* before MPI, OpenCL or any thread starts */
    cli_world world;
    int rc = cli_world_open(&world, &argc, &argv);
    if (rc) return rc;
    if (world.size > 1) {
        /* train and bench train run across processes; the others would only repeat each other */
        if (!strcmp(cmd, "train"))
            rc = cli_train(argc - 1, argv + 1, &world);
        else if (!strcmp(cmd, "bench") && argc > 2 && !strcmp(argv[2], "train"))
            rc = cli_bench(argc - 1, argv + 1, &world);
        else {
            if (world.rank == 0)
                fprintf(stderr, "cltrain: %s runs in one process; under mpirun only train and bench train run "
                        "across processes\n", cmd);
            rc = 2;
        }
        clt_release_shared_caches();
        cli_world_close(&world, rc);
        return rc;
    }
    cli_world_close(&world, 0);
    if (!strcmp(cmd, "train")) return flushed(cli_train(argc - 1, argv + 1, &world));
    if (!strcmp(cmd, "eval")) return flushed(cli_eval(argc - 1, argv + 1));
    if (!strcmp(cmd, "predict")) return flushed(cli_predict(argc - 1, argv + 1));
    if (!strcmp(cmd, "export")) return flushed(cli_export(argc - 1, argv + 1));
    if (!strcmp(cmd, "bench")) return flushed(cli_bench(argc - 1, argv + 1, &world));
    if (!strcmp(cmd, "tune")) return flushed(cli_tune(argc - 1, argv + 1));
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return flushed(0);
    }
    if (!strcmp(cmd, "--version")) {
        printf("cltrain %s\n", clt_version(NULL, NULL, NULL));
        return flushed(0);
    }
    fprintf(stderr, "cltrain: unknown command \"%s\" (train, eval, predict, export, bench, tune; see cltrain --help)\n", cmd);
    return 2;
}
