/* The row-bias broadcast and the bias gradient's column sums that the dense
 * layer runs around its GEMMs (src/ops/dense.c). */

/* y[r, j] = b[j] for an (rows, cols) matrix; total = rows * cols. */
__kernel void dense_bias_rows(__global const float *b, __global float *y, const int cols,
                              const int total)
{
    int i = get_global_id(0);
    if (i < total) y[i] = b[i % cols];
}

/* db[j] = sum over r of dy[r, j], rows in order (deterministic). Adjacent
 * work-items read adjacent columns, so each row is read coalesced. */
__kernel void dense_bias_cols_sum(__global const float *dy, __global float *db, const int rows,
                                  const int cols)
{
    int j = get_global_id(0);
    if (j >= cols) return;
    float sum = 0.0f;
    for (int r = 0; r < rows; r++) sum += dy[(size_t)r * cols + j];
    db[j] = sum;
}
