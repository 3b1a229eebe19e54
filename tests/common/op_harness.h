/* The harness of the op tests (tests/ops): a test file holds its checks and
 * a table of named tests; OP_HARNESS_MAIN(table) opens the devices (exit 77,
 * meson's skip, when there is none), runs the tests named on the command
 * line (all without arguments; --list names them), reports each with its
 * failures and time, and exits 0 or 1.
 *
 * The model-shaped cases come from the builtin models' op list
 * (nn/model_ops.h), the one that the benchmarks time. */
#ifndef CLT_TESTS_OP_HARNESS_H
#define CLT_TESTS_OP_HARNESS_H

#include <string.h>

#include "check.h"
#include "nn/model_ops.h"

typedef struct op_env {
    clt_device *dev;  /* device 0 */
    clt_device *dev1; /* device 1, NULL when there is one device */
    int n_devices;
} op_env;

typedef struct op_test {
    const char *name;
    void (*run)(const op_env *env);
} op_test;

/* Runs the tests; *failures is the test's CHECK counter. */
int op_harness_run(int argc, char **argv, const op_test *tests, int n_tests, const int *failures);

#define OP_HARNESS_MAIN(table)                                                                  \
    int main(int argc, char **argv)                                                             \
    {                                                                                           \
        return op_harness_run(argc, argv, table, (int)(sizeof table / sizeof table[0]), &test_failures); \
    }

/* The op cases of `kind` of the builtin models lenet, lenet-max and
 * resnet18 (1x28x28 inputs) at `batch`, in a new array (free() it); exits
 * when the list cannot be built. Returns their count. */
int op_model_cases(clt_op_kind kind, int batch, clt_op_case **out);

/* CHECKs that got matches ref: max_rel_err (check.h) below tol; `what`
 * names the comparison in the failure. Returns the error. */
static inline double op_check_close(const float *ref, const float *got, size_t n, double tol, const char *what)
{
    double e = max_rel_err(ref, got, n);
    CHECK(e < tol, "%s: rel err %g (tolerance %g)", what, e, tol);
    return e;
}

/* CHECKs that a call (named `what`) returned `want` and that
 * clt_last_error() holds each non-NULL needle. */
static inline void op_expect_err(clt_status got, clt_status want, const char *what, const char *needle1,
                                 const char *needle2)
{
    const char *e = clt_last_error();
    CHECK(got == want && (!needle1 || strstr(e, needle1)) && (!needle2 || strstr(e, needle2)),
          "%s: %s \"%s\" (expected %s naming \"%s\" and \"%s\")", what, clt_status_name(got), e,
          clt_status_name(want), needle1 ? needle1 : "", needle2 ? needle2 : "");
}

#endif
