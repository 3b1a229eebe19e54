/* Training curves as a self-contained SVG file. */
#ifndef CLT_CLI_PLOT_H
#define CLT_CLI_PLOT_H

#include <stdint.h>

/* One point per epoch; step counts optimizer steps since the run began. */
typedef struct plot_point {
    double step, loss, train_acc, test_acc;
} plot_point;

/* What the plot shows, gathered during the run. */
typedef struct plot_data {
    const char *title;
    int64_t steps_per_epoch;
    plot_point *epochs;
    int n_epochs, cap_epochs;
    int64_t first_step;  /* the step before step_loss[0] (a resumed run starts later) */
    float *step_loss;    /* mean loss of each step */
    int64_t n_steps, cap_steps;
} plot_data;

/* Appends a point (returns 1 on out of memory, after printing a message). */
int plot_add_epoch(plot_data *d, plot_point p);
int plot_add_step(plot_data *d, double loss);
void plot_free(plot_data *d);

/* Two panels over one x axis (epochs, or steps when the run is shorter than
 * an epoch): the loss above, per epoch (<path class="loss">) over the
 * smoothed per-step loss (<polyline class="step_loss">) when there are few
 * epochs; train and test accuracy below (<path class="train_acc">,
 * <path class="test_acc">). Ticks fall on whole epochs and on 1-2-5 values;
 * tick labels have class xtick, ytick-loss, ytick-acc. The legend sits
 * right of the panels. Written atomically; returns 0, or 1 after printing
 * a message naming the file. */
int plot_write_svg(const char *path, const plot_data *d);

#endif
