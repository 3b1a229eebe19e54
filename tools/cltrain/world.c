/* cli_world (world.h). */
#include "world.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if CLTRAIN_HAVE_MPI
#include <mpi.h>
#endif

/* The launchers' variables: Open MPI, MPICH's Hydra, any PMIx launcher. */
static int launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

/* The number of processes the launcher started (Open MPI, MPICH's Hydra), as text; NULL if it says none. */
static const char *launch_size(void)
{
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    return n ? n : getenv("PMI_SIZE");
}

int cli_launch_rank(void)
{
    const char *n = launch_size(), *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMI_RANK");
    if (!r) r = getenv("PMIX_RANK");
    char *end;
    long rank = r ? strtol(r, &end, 10) : -1;
    if (!r || *end || rank < 0 || rank > INT_MAX || (n && atoi(n) <= 1)) return -1;
    return (int)rank;
}

#if CLTRAIN_HAVE_MPI
static const MPI_Comm world_comm = MPI_COMM_WORLD; /* only its address is passed on */

int cli_world_open(cli_world *w, int *argc, char ***argv)
{
    *w = (cli_world){1, 0, 1, 0, NULL};
    if (!launched()) return 0;
    int level = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &level) != MPI_SUCCESS) {
        fprintf(stderr, "cltrain: MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &w->size);
    MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
    if (level < MPI_THREAD_SERIALIZED) {
        fprintf(stderr, "cltrain: rank %d: this MPI gives thread level %d, cltrain needs MPI_THREAD_SERIALIZED\n",
                w->rank, level);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &w->local_size);
    MPI_Comm_rank(local, &w->local_rank);
    MPI_Comm_free(&local);
    w->comm = (void *)&world_comm; /* the trainer only reads it */
    return 0;
}

void cli_world_close(cli_world *w, int rc)
{
    if (!w->comm) return;
    if (rc > 128 && rc < 160 && w->size > 1) {
        /* A stop by a signal (129 SIGHUP ... 143 SIGTERM): every process
         * stopped after the same step, and process 0 saved. mpirun, which
         * sent it, is ending the job: MPI_Finalize would wait for it until
         * its SIGKILL (one second by default). */
        fflush(NULL);
        _exit(rc);
    }
    if (rc != 0 && w->size > 1) MPI_Abort(MPI_COMM_WORLD, rc);
    MPI_Finalize();
    w->comm = NULL;
}

static int reduce(const cli_world *w, int v, MPI_Op op)
{
    if (!w->comm || w->size == 1) return v;
    int m = v;
    MPI_Allreduce(&v, &m, 1, MPI_INT, op, MPI_COMM_WORLD);
    return m;
}

int cli_world_max(const cli_world *w, int v) { return reduce(w, v, MPI_MAX); }

double cli_world_allreduce_seconds(const cli_world *w, size_t floats, int reps)
{
    if (!w->comm || w->size == 1 || floats == 0 || floats > INT_MAX) return 0;
    float *buf = calloc(floats, sizeof *buf);
    int ok = buf != NULL, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        free(buf);
        return 0;
    }
    double best = 0;
    for (int r = -3; r < reps; r++) { /* 3 warm-ups */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)floats, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0, slowest = t;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0 && (best == 0 || slowest < best)) best = slowest;
    }
    free(buf);
    return best;
}

void cli_world_barrier(const cli_world *w)
{
    if (w->comm && w->size > 1) MPI_Barrier(MPI_COMM_WORLD);
}
int cli_world_sum(const cli_world *w, int v) { return reduce(w, v, MPI_SUM); }
#else
int cli_world_open(cli_world *w, int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    *w = (cli_world){1, 0, 1, 0, NULL};
    const char *n = launch_size();
    if (launched() && n && atoi(n) > 1) {
        fprintf(stderr, "cltrain: started by mpirun with %s processes, but this cltrain was built without MPI: "
                "install libopenmpi-dev (tools/setup does) and rebuild\n", n);
        return 1;
    }
    return 0;
}

void cli_world_close(cli_world *w, int rc)
{
    (void)w;
    (void)rc;
}

int cli_world_max(const cli_world *w, int v)
{
    (void)w;
    return v;
}

int cli_world_sum(const cli_world *w, int v)
{
    (void)w;
    return v;
}

double cli_world_allreduce_seconds(const cli_world *w, size_t floats, int reps)
{
    (void)w;
    (void)floats;
    (void)reps;
    return 0;
}

void cli_world_barrier(const cli_world *w) { (void)w; }
#endif

int cli_world_devices(const cli_world *w, int *devs, int *n)
{
    if (w->size == 1 || w->local_size == 1) return 0;
    /* A launcher that binds devices per process (Slurm's --gpus-per-task
     * sets these) already gave each process its own. */
    static const char *const bound[] = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                        "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK"};
    for (size_t i = 0; i < sizeof bound / sizeof bound[0]; i++)
        if (getenv(bound[i])) return 0;
    int kept = 0, visible = *n;
    for (int i = w->local_rank; i < visible; i += w->local_size) devs[kept++] = devs[i];
    *n = kept;
    if (kept) return 0;
    fprintf(stderr, "cltrain: rank %d: no device for local rank %d of %d processes on this machine (%d device%s "
            "visible): start at most %d process%s per machine, name the devices (--devices), or bind one per "
            "process (CUDA_VISIBLE_DEVICES and the like)\n", w->rank,
            w->local_rank, w->local_size, visible, visible == 1 ? "" : "s", visible, visible == 1 ? "" : "es");
    return 1;
}
