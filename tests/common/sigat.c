/* A signal at a chosen moment, for tests, preloaded into a process
 * (LD_PRELOAD): when the process renames a file onto a path that ends
 * with SIGAT_RENAME (an atomic save putting a checkpoint in place), it
 * first sends itself SIGAT_SIGNAL (a number; default SIGTERM) and waits
 * 0.3 s for it to be taken, once
 * (SIGAT_COUNT=N: the N-th such rename, default the first). So a test
 * puts a stop exactly inside a save, without a timing race and without a
 * test hook in the product. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*rename_fn)(const char *, const char *);

/* Process-wide by nature: a preloaded library has no other place for it. */
static atomic_int seen;

int rename(const char *from, const char *to)
{
    const char *end = getenv("SIGAT_RENAME"), *sig = getenv("SIGAT_SIGNAL"), *count = getenv("SIGAT_COUNT");
    size_t n = end ? strlen(end) : 0, len = strlen(to);
    if (n && len >= n && !strcmp(to + len - n, end)) {
        int k = atomic_fetch_add(&seen, 1) + 1;
        /* to the process, as kill(1) sends it (raise() would aim at this
         * thread alone), then a pause in which the process takes it: the
         * signal lands inside the rename, not some time after */
        if (k == (count ? atoi(count) : 1)) {
            kill(getpid(), sig ? atoi(sig) : SIGTERM);
            nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
        }
    }
    rename_fn real = NULL;
    void *sym = dlsym(RTLD_NEXT, "rename");
    if (!sym) return -1;
    memcpy(&real, &sym, sizeof real); /* POSIX's way from an object pointer to a function's */
    return real(from, to);
}
