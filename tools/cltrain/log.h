/* The library's log lines on stderr ("cltrain: ...", "cltrain: rank R:
 * ..." under mpirun): its notices and warnings, and its debug lines too
 * with CLTRAIN_LOG=debug. */
#ifndef CLT_CLI_LOG_H
#define CLT_CLI_LOG_H

/* Checks CLTRAIN_LOG (unset, empty, debug, info or warning); prints the
 * problem and returns 2 for any other value, else 0. */
int cli_log_check(void);
/* The hook and its user pointer for clt_device_set_log and the trainer
 * config (the pointer carries the lowest level printed). */
void cli_log(void *user, int level, const char *message);
void *cli_log_user(void);

#endif
