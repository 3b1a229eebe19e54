/* Training curves as a self-contained SVG file. */
#ifndef CLT_CLI_PLOT_H
#define CLT_CLI_PLOT_H

/* One point per epoch. */
typedef struct plot_point {
    double epoch, loss, train_acc, test_acc;
} plot_point;

/* Writes loss (left axis) and train/test accuracy (right axis, 0..1) curves,
 * one <path> per curve, atomically (temporary file and rename). Returns 0,
 * or 1 after printing a message naming the file. */
int plot_write_svg(const char *path, const plot_point *points, int n, const char *title);

#endif
