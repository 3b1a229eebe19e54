/* Training across MPI processes (run under mpirun, N processes with D PoCL
 * devices each: argv[1] = D): the processes' trainer equals one plain
 * device on the whole batch (a net without batch norm, and one with
 * synchronised batch norm, also when a process's shards are all empty),
 * equals one process driving all N*D devices (per-device batch norm,
 * clipping, evaluation), and its replicas agree across processes. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "../data/idx_write.h"
#include "check.h"
#include "trainer_util.h"
#include "parallel/trainer.h"

#define SPEC "conv:4:3,relu,maxpool:2,conv:6:3:1:1,tanh,flatten,dense:16,sigmoid,dense:10"
#define BN_SPEC "conv:4:3:1:1,bn,relu,res:6:2,gap,dense:10"
#define C 1
#define H 12
#define W 12
#define B 16

static float images[3 * B * C * H * W];
static int32_t labels[3 * B];
static int rank, ranks, per;

static float clip; /* the gradient clipping of the trainers made */

static clt_trainer *make(const char *spec, int sync_bn, const int *devs, int k, void *comm)
{
    clt_trainer_config cfg;
    test_trainer_config(&cfg, spec, sync_bn, C, H, W, devs, k);
    cfg.bucket_bytes = 4096; /* several buckets, several allreduces */
    cfg.mpi_comm = comm;
    cfg.clip_grad_norm = clip;
    clt_trainer *t = NULL;
    REQUIRE_OK(clt_trainer_create(&cfg, &t));
    return t;
}

/* Three steps across the processes against `ref` (a plain net, or NULL and
 * a one-process trainer on every device). */
static void compare(const char *spec, int sync_bn, int plain, int b, const clt_dataset *eval, const char *what)
{
    int mine[8], every[64];
    for (int i = 0; i < per; i++) mine[i] = rank * per + i;
    for (int i = 0; i < ranks * per; i++) every[i] = i;
    clt_trainer *dist = make(spec, sync_bn, mine, per, &(MPI_Comm){MPI_COMM_WORLD});
    clt_device *dev = NULL;
    clt_net *ref = NULL;
    clt_trainer *one = NULL;
    if (plain) {
        REQUIRE_OK(clt_device_open(mine[0], &dev));
        REQUIRE_OK(clt_net_create(dev, spec, C, H, W, &ref));
        REQUIRE_OK(clt_net_init(ref, 11, CLT_INIT_XAVIER));
    } else
        one = make(spec, sync_bn, every, ranks * per, NULL);
    for (int s = 0; s < 3; s++) {
        const float *x = images + (size_t)s * b * C * H * W;
        const int32_t *y = labels + s * b;
        double l1 = 0, lk = 0;
        int64_t c1 = 0, ck = 0;
        if (plain) {
            CHECK_OK(clt_net_forward(ref, x, b, 1));
            CHECK_OK(clt_net_backward(ref, y, 1.0f / (float)b, &l1, &c1));
            CHECK_OK(clt_net_sgd_step(ref, 0.1f, 0.9f, 1e-3f));
        } else
            CHECK_OK(clt_trainer_step(one, x, y, b, &l1, &c1));
        CHECK_OK(clt_trainer_step(dist, x, y, b, &lk, &ck));
        CHECK(fabs(l1 - lk) <= 1e-5 * fabs(l1), "%s: step %d loss %.8g vs %.8g", what, s, l1, lk);
        CHECK(c1 == ck, "%s: step %d correct %lld vs %lld", what, s, (long long)c1, (long long)ck);
    }
    size_t n1, nk;
    float *p1 = test_net_params(plain ? ref : clt_trainer_net(one, 0), &n1),
          *pk = test_net_params(clt_trainer_net(dist, 0), &nk);
    CHECK(n1 == nk && max_rel_err(p1, pk, n1) < 2e-5, "%s (rank %d): parameters after 3 steps differ by %g", what, rank,
          max_rel_err(p1, pk, n1));
    CHECK_OK(clt_trainer_check_replicas(dist));
    if (eval && one) { /* split over every device of every process, then summed */
        double la = 0, aa = 0, lb = 0, ab = 0;
        CHECK_OK(clt_trainer_evaluate(one, eval, 7, &la, &aa));
        CHECK_OK(clt_trainer_evaluate(dist, eval, 7, &lb, &ab));
        CHECK(fabs(la - lb) <= 1e-5 * fabs(la) && aa == ab, "%s: evaluation %.8g / %g vs %.8g / %g", what, la, aa,
              lb, ab);
    }
    free(p1);
    free(pk);
    clt_trainer_destroy(dist);
    clt_trainer_destroy(one);
    clt_net_destroy(ref);
    clt_device_destroy(dev);
}

int main(int argc, char **argv)
{
    int level = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    per = argc > 1 ? atoi(argv[1]) : 1;
    int have = 0, code = 0;
    if (clt_device_count(&have) != CLT_OK || have < ranks * per || per < 1 || per > 8) {
        if (rank == 0) printf("skip: %d processes x %d devices need %d OpenCL devices, %d visible\n", ranks, per,
                              ranks * per, have);
        code = 77;
    }
    if (!code) {
        unsigned seed = 5;
        for (size_t i = 0; i < sizeof images / sizeof images[0]; i++) {
            seed = seed * 1664525u + 1013904223u;
            images[i] = (float)(seed >> 9) / 8388608.0f;
        }
        for (int i = 0; i < 3 * B; i++) labels[i] = (int32_t)((i * 7 + 3) % 10);
        /* a dataset on disk for the evaluation, written by process 0 */
        char dir[4096];
        clt_dataset *eval = NULL;
        if (rank == 0) tw_mkdtemp(dir, sizeof dir, "mpi");
        MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
        if (rank == 0) tw_write_dataset(dir, 0, 40, 23, H, W);
        MPI_Barrier(MPI_COMM_WORLD);
        char img[4200], lab[4200];
        snprintf(img, sizeof img, "%s", tw_path(dir, "t10k-images-idx3-ubyte"));
        snprintf(lab, sizeof lab, "%s", tw_path(dir, "t10k-labels-idx1-ubyte"));
        REQUIRE_OK(clt_dataset_from_idx(img, lab, 10, 0, &eval));
        compare(SPEC, 0, 1, B, NULL, "no batch norm, against one device");
        compare(BN_SPEC, 1, 1, B, NULL, "synchronised batch norm, against one device");
        compare(BN_SPEC, 1, 1, 1, NULL, "synchronised batch norm, one sample: empty shards");
        compare(BN_SPEC, 0, 0, B, eval, "per-device batch norm, against one process on every device");
        clip = 0.05f;
        compare(SPEC, 0, 0, B, eval, "clipped, against one process on every device");
        clt_dataset_destroy(eval);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) tw_rmtree(dir);
        code = test_result();
    }
    int worst = code;
    MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
}
