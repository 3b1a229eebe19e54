/* cltrain bench ops: one op case (nn/model_ops.h) on a device, through the
 * raw launchers: its buffers, its passes, their timing and their work. */
#ifndef CLT_CLI_BENCH_CASE_H
#define CLT_CLI_BENCH_CASE_H

#include "nn/model_ops.h"
#include "runtime/device.h"

typedef struct bench_case bench_case;

/* The passes of a case's kind: "forward", "backward-data", ...; NULL-ended. */
const char *const *bench_case_passes(clt_op_kind kind);
/* "20x26x26 -> 20x13x13 k2"-style shape per sample. */
void bench_case_shape(const clt_op_case *c, char *buf, size_t cap);
/* Work of one call of pass `pass` on dev: FLOPs for compute ops, else
 * bytes that must move (one of them is 0). */
void bench_case_work(const clt_device *dev, const clt_op_case *c, int pass, double *flop, double *bytes);
/* The FLOPs of the products of a convolution pass that `kernel` (its
 * description) says runs winograd F(m x m, 3x3): (m + 2)^2 per tile and
 * channel pair, x 2; 0 for any other algorithm. */
double bench_case_own_flop(const clt_op_case *c, const char *kernel);

/* Buffers for the case on dev, filled with uniform values. */
clt_status bench_case_create(clt_device *dev, const clt_op_case *c, bench_case **out);
void bench_case_destroy(bench_case *b);
/* What runs pass `pass` of a convolution or dense case (the algorithm and
 * its kernel configuration, as the timed raw launcher chose it); "" for
 * other ops. */
void bench_case_kernel(bench_case *b, int pass, char *buf, size_t cap);
/* Rounds the timed calls of bench_case_time are split into: three, or one
 * per call when there are fewer. */
#define BENCH_ROUNDS 3
static inline int bench_rounds(int calls) { return calls < BENCH_ROUNDS ? calls : BENCH_ROUNDS; }

/* One warm-up call (first-use builds), one probe call, then `repeat` calls
 * (0: as many as fit in about budget_s seconds, 3..max_calls) in up to
 * BENCH_ROUNDS rounds, each enqueued back to back and drained: seconds per
 * call, the mean of the fastest round. */
clt_status bench_case_time(bench_case *b, int pass, int64_t repeat, double budget_s, int max_calls, double *sec,
                           int *calls);

#endif
