/* This process's place in an MPI launch (mpirun -np N cltrain train ...):
 * found from the launcher's environment, MPI initialised only then. */
#ifndef CLT_CLI_WORLD_H
#define CLT_CLI_WORLD_H

#include <stddef.h>

typedef struct cli_world {
    int size, rank;              /* 1, 0 outside mpirun */
    int local_size, local_rank;  /* processes on this machine, this one among them */
    void *comm;                  /* the MPI_Comm of the run (NULL alone) */
} cli_world;

/* This process's rank from the launcher's environment (before or without
 * MPI_Init), or -1 when no launcher started more than one process. */
int cli_launch_rank(void);
/* Initialises MPI (MPI_THREAD_SERIALIZED) when mpirun or mpiexec started
 * this process; 0, or the exit code after a message (launched by mpirun in
 * a build without MPI, a thread level too low). */
int cli_world_open(cli_world *w, int *argc, char ***argv);
/* MPI_Finalize after a run every process ended with rc 0; a stop by a
 * signal (rc 129..159, every process stopped at the same step) leaves at
 * once without it (mpirun is ending the job and would not answer); any
 * other rc ends every process (MPI_Abort) so none waits. */
void cli_world_close(cli_world *w, int rc);
/* The largest of every process's value, and their sum (the same on each). */
int cli_world_max(const cli_world *w, int v);
int cli_world_sum(const cli_world *w, int v);
/* Seconds of one MPI_Allreduce (sum) of `floats` floats over the
 * processes: the best of `reps` after warm-ups (0 alone or without MPI). */
double cli_world_allreduce_seconds(const cli_world *w, size_t floats, int reps);
/* Waits for every process. */
void cli_world_barrier(const cli_world *w);

/* Under mpirun without --devices or CLTRAIN_DEVICES: the local rank's
 * share of the default devices (every local_size-th from local_rank), so
 * one process per GPU and one process per machine both just work. 0, or
 * 1 after a message when this process gets none. */
int cli_world_devices(const cli_world *w, int *devs, int *n);

#endif
