#include "stop.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* The stop signals are blocked in every thread (the mask is inherited:
 * stop_init runs before any starts) and taken by sigwait in watch(), so no
 * handler runs in the middle of the library or of a thread that frees the
 * trainer: the trainer is interrupted under a lock that stop_forward_to
 * takes too. Process-wide by nature, as signals are. */
static sigset_t stop_set;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static clt_trainer *forward; /* under mu */
static int armed, signals;   /* under mu: a run saves on a stop; stop signals taken */
static atomic_int requested;

/* The signal's own default: the process ends as killed by it. */
static void die_by(int sig)
{
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    signal(sig, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    _exit(128 + sig);
}

static void *watch(void *arg)
{
    (void)arg;
    for (;;) {
        int sig;
        if (sigwait(&stop_set, &sig) != 0) continue;
        pthread_mutex_lock(&mu);
        if (!armed || signals++) {
            pthread_mutex_unlock(&mu);
            die_by(sig);
        }
        atomic_store(&requested, sig);
        clt_trainer_interrupt(forward);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

int stop_init(void)
{
    struct sigaction old;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&stop_set, SIGHUP);
    signal(SIGPIPE, SIG_IGN);
    pthread_t th;
    if (pthread_sigmask(SIG_BLOCK, &stop_set, NULL) != 0 || pthread_create(&th, NULL, watch, NULL) != 0) {
        fprintf(stderr, "cltrain: cannot start the signal watcher\n");
        return 1;
    }
    pthread_detach(th);
    return 0;
}

void stop_arm(void)
{
    pthread_mutex_lock(&mu);
    armed = 1;
    pthread_mutex_unlock(&mu);
}

void stop_forward_to(clt_trainer *t)
{
    pthread_mutex_lock(&mu);
    forward = t;
    if (t && signals) clt_trainer_interrupt(t);
    pthread_mutex_unlock(&mu);
}

int stop_requested(void) { return atomic_load(&requested); }

int stop_check_output(FILE *f)
{
    errno = 0;
    if (fflush(f) == 0 && !ferror(f)) return 0;
    int err = errno ? errno : EIO, none = 0;
    if (err == EPIPE) atomic_compare_exchange_strong(&requested, &none, SIGPIPE);
    return err;
}

const char *stop_words(int sig)
{
    switch (sig) {
    case SIGINT: return "interrupted";
    case SIGTERM: return "terminated (SIGTERM)";
    case SIGHUP: return "stopped: the terminal closed (SIGHUP)";
    case SIGPIPE: return "stopped: standard output is closed (EPIPE)";
    default: return "stopped";
    }
}
