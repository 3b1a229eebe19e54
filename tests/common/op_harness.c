/* The op tests' harness (op_harness.h). */
#include "op_harness.h"

#include <string.h>
#include <time.h>

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Index of the test named `name`, or -1. */
static int find(const op_test *tests, int n_tests, const char *name)
{
    for (int i = 0; i < n_tests; i++)
        if (strcmp(tests[i].name, name) == 0) return i;
    return -1;
}

static void run_one(const op_test *t, const op_env *env, const int *failures)
{
    int before = *failures;
    double t0 = seconds();
    t->run(env);
    int failed = *failures - before;
    if (failed) fprintf(stderr, "test %s: %d check(s) failed (%.2f s)\n", t->name, failed, seconds() - t0);
    else fprintf(stderr, "test %s: ok (%.2f s)\n", t->name, seconds() - t0);
}

int op_harness_run(int argc, char **argv, const op_test *tests, int n_tests, const int *failures)
{
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < n_tests; i++) printf("%s\n", tests[i].name);
        return 0;
    }
    for (int a = 1; a < argc; a++)
        if (find(tests, n_tests, argv[a]) < 0) {
            fprintf(stderr, "%s: no test named \"%s\" (--list names them)\n", argv[0], argv[a]);
            return 2;
        }
    op_env env = {NULL, NULL, test_need_devices(1)};
    REQUIRE_OK(clt_device_open(0, &env.dev));
    if (env.n_devices > 1) REQUIRE_OK(clt_device_open(1, &env.dev1));
    if (argc > 1)
        for (int a = 1; a < argc; a++) run_one(&tests[find(tests, n_tests, argv[a])], &env, failures);
    else
        for (int i = 0; i < n_tests; i++) run_one(&tests[i], &env, failures);
    clt_device_destroy(env.dev1);
    clt_device_destroy(env.dev);
    if (*failures) fprintf(stderr, "%d check(s) failed\n", *failures);
    return *failures ? 1 : 0;
}

int op_model_cases(clt_op_kind kind, int batch, clt_op_case **out)
{
    static const char *const models[] = {"lenet", "lenet-max", "resnet18"};
    clt_op_cases all;
    REQUIRE_OK(clt_op_cases_build(models, 3, 1, 28, 28, batch, &all));
    clt_op_case *mine = calloc((size_t)all.count, sizeof *mine);
    if (!mine) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    int n = 0;
    for (int i = 0; i < all.count; i++)
        if (all.cases[i].kind == kind) mine[n++] = all.cases[i];
    clt_op_cases_free(&all);
    *out = mine;
    return n;
}
