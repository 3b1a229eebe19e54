#include "plot.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"

#define W 780
#define H 480
#define L 70  /* panel left edge */
#define PR 560 /* panel right edge; the legend lives to its right */
#define LOSS_T 44
#define LOSS_B 224
#define ACC_T 254
#define ACC_B 414
#define FEW_EPOCHS 30

/* Grows *buf to hold n + 1 elements of size sz. */
static int grow(void *buf, int64_t n, int64_t *cap, size_t sz)
{
    if (n < *cap) return 0;
    int64_t want = *cap ? *cap * 2 : 64;
    void *p = realloc(*(void **)buf, (size_t)want * sz);
    if (!p) {
        fprintf(stderr, "cltrain: --plot: out of memory\n");
        return 1;
    }
    *(void **)buf = p;
    *cap = want;
    return 0;
}

int plot_add_epoch(plot_data *d, plot_point p)
{
    int64_t cap = d->cap_epochs;
    if (grow(&d->epochs, d->n_epochs, &cap, sizeof *d->epochs)) return 1;
    d->cap_epochs = (int)cap;
    d->epochs[d->n_epochs++] = p;
    return 0;
}

int plot_add_step(plot_data *d, double loss)
{
    if (grow(&d->step_loss, d->n_steps, &d->cap_steps, sizeof *d->step_loss)) return 1;
    d->step_loss[d->n_steps++] = (float)loss;
    return 0;
}

void plot_free(plot_data *d)
{
    free(d->epochs);
    free(d->step_loss);
    memset(d, 0, sizeof *d);
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* The 1-2-5 value at or above raw. */
static double nice_step(double raw)
{
    double p = pow(10, floor(log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* An axis: [lo, hi] widened to whole ticks of a 1-2-5 step. */
typedef struct axis {
    double lo, hi, step;
    int decimals;
} axis;

static axis nice_axis(double lo, double hi, int ticks)
{
    if (!(hi > lo)) hi = lo + 1;
    axis a;
    a.step = nice_step((hi - lo) / ticks);
    a.lo = floor(lo / a.step + 1e-9) * a.step;
    a.hi = ceil(hi / a.step - 1e-9) * a.step;
    a.decimals = a.step >= 1 ? 0 : (int)ceil(-log10(a.step) - 1e-9);
    return a;
}

static double map(const axis *a, double v, double top, double bottom)
{
    if (!isfinite(v) || v > a->hi) v = a->hi; /* a diverged value pins to the top */
    if (v < a->lo) v = a->lo;
    return bottom - (bottom - top) * (v - a->lo) / (a->hi - a->lo);
}

/* Horizontal grid lines with labels left of a panel, and its axis title. */
static void y_ticks(FILE *f, const axis *a, double top, double bottom, const char *cls, const char *title)
{
    for (double v = a->lo; v <= a->hi + a->step * 1e-6; v += a->step) {
        double y = map(a, v, top, bottom);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", L, y, PR, y);
        fprintf(f, "<text class=\"%s\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", cls, L - 6, y + 4,
                a->decimals, fabs(v) < a->step * 1e-6 ? 0.0 : v);
    }
    fprintf(f, "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">%s</text>\n",
            (top + bottom) / 2, (top + bottom) / 2, title);
    fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"none\" stroke=\"#888\"/>\n", L, top,
            PR - L, bottom - top);
}

static double x_of(const axis *x, double v)
{
    return L + (PR - L) * (v - x->lo) / (x->hi - x->lo);
}

/* One per-epoch curve with a marker per point. */
static void curve(FILE *f, const plot_data *d, const axis *x, double unit, const axis *y, double top, double bottom,
                  size_t field, const char *color, const char *cls)
{
    /* NaN: no value that epoch (no test set): the line breaks there */
    fprintf(f, "<path class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" d=\"", cls, color);
    for (int i = 0, drawn = 0; i < d->n_epochs; i++) {
        double v = *(const double *)((const char *)&d->epochs[i] + field);
        if (isnan(v)) {
            drawn = 0;
            continue;
        }
        fprintf(f, "%s%.1f,%.1f", drawn++ ? " L" : " M", x_of(x, d->epochs[i].step / unit), map(y, v, top, bottom));
    }
    fprintf(f, "\"/>\n");
    for (int i = 0; i < d->n_epochs; i++) {
        double v = *(const double *)((const char *)&d->epochs[i] + field);
        if (isnan(v)) continue;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x_of(x, d->epochs[i].step / unit),
                map(y, v, top, bottom), color);
    }
}

/* The per-step loss as an exponential moving average over about 2% of the
 * steps (at least 1): the raw values are noise at this scale. */
static double *smoothed(const plot_data *d)
{
    double *s = malloc((size_t)(d->n_steps ? d->n_steps : 1) * sizeof *s);
    if (!s) return NULL;
    double window = d->n_steps / 50.0 > 1 ? d->n_steps / 50.0 : 1, alpha = 2 / (window + 1), ema = NAN;
    for (int64_t i = 0; i < d->n_steps; i++) {
        double v = d->step_loss[i];
        ema = !isfinite(ema) ? v : isfinite(v) ? ema + alpha * (v - ema) : ema;
        s[i] = ema;
    }
    return s;
}

static void legend(FILE *f)
{
    static const struct {
        const char *color, *name;
    } items[] = {{"#1f77b4", "loss per epoch"}, {"#9ecae1", "loss per step (smoothed)"},
                 {"#ff7f0e", "train accuracy"}, {"#2ca02c", "test accuracy"}};
    for (int i = 0; i < 4; i++) {
        int y = LOSS_T + 10 + 20 * i;
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>"
                   "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>\n",
                PR + 12, y, PR + 34, y, items[i].color, PR + 40, y + 4, items[i].name);
    }
}

static void draw(FILE *f, const plot_data *d, const double *smooth)
{
    int64_t last_step = d->n_epochs ? (int64_t)d->epochs[d->n_epochs - 1].step : 0;
    if (d->first_step + d->n_steps > last_step) last_step = d->first_step + d->n_steps;
    int by_epoch = d->steps_per_epoch > 0 && last_step >= d->steps_per_epoch;
    double unit = by_epoch ? (double)d->steps_per_epoch : 1;
    axis x = nice_axis(0, (double)last_step / unit, 8);
    if (by_epoch && x.step < 1) x = (axis){0, ceil((double)last_step / unit - 1e-9), 1, 0};
    int show_steps = smooth != NULL; /* plot_write_svg smooths only what is shown */
    double lmax = 0, amin = 1, amax = 0;
    for (int i = 0; i < d->n_epochs; i++) {
        const plot_point *p = &d->epochs[i];
        if (isfinite(p->loss) && p->loss > lmax) lmax = p->loss;
        amin = fmin(amin, fmin(p->train_acc, p->test_acc));
        amax = fmax(amax, fmax(p->train_acc, p->test_acc));
    }
    for (int64_t i = 0; show_steps && i < d->n_steps; i++)
        if (isfinite(smooth[i]) && smooth[i] > lmax) lmax = smooth[i];
    axis ly = nice_axis(0, lmax > 0 ? lmax : 1, 5);
    axis ay = nice_axis(amin < amax ? amin : amin - 0.05, amax > amin ? amax : amin + 0.05, 4);
    if (ay.lo < 0) ay.lo = 0;
    if (ay.hi > 1) ay.hi = 1;
    fprintf(f, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"14\">", (L + PR) / 2);
    xml_text(f, d->title ? d->title : "");
    fprintf(f, "</text>\n");
    y_ticks(f, &ly, LOSS_T, LOSS_B, "ytick-loss", "loss");
    y_ticks(f, &ay, ACC_T, ACC_B, "ytick-acc", "accuracy");
    for (double v = x.lo; v <= x.hi + x.step * 1e-6; v += x.step) { /* shared x ticks, labelled below */
        double px = x_of(&x, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\"/>"
                   "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\"/>\n",
                px, LOSS_B, px, LOSS_B + 5, px, ACC_B, px, ACC_B + 5);
        fprintf(f, "<text class=\"xtick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.*f</text>\n", px, ACC_B + 18,
                x.decimals, v);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", (L + PR) / 2, ACC_B + 40,
            by_epoch ? "epoch" : "step");
    if (show_steps) {
        fprintf(f, "<polyline class=\"step_loss\" fill=\"none\" stroke=\"#9ecae1\" stroke-width=\"1.2\" points=\"");
        for (int64_t i = 0; i < d->n_steps; i++)
            fprintf(f, "%s%.1f,%.1f", i ? " " : "", x_of(&x, (double)(d->first_step + i + 1) / unit),
                    map(&ly, smooth[i], LOSS_T, LOSS_B));
        fprintf(f, "\"/>\n");
    }
    curve(f, d, &x, unit, &ly, LOSS_T, LOSS_B, offsetof(plot_point, loss), "#1f77b4", "loss");
    curve(f, d, &x, unit, &ay, ACC_T, ACC_B, offsetof(plot_point, train_acc), "#ff7f0e", "train_acc");
    curve(f, d, &x, unit, &ay, ACC_T, ACC_B, offsetof(plot_point, test_acc), "#2ca02c", "test_acc");
    legend(f);
}

int plot_write_svg(const char *path, const plot_data *d)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    /* the step curve is drawn under few epochs only: smooth it only then */
    int steps_shown = d->n_epochs <= FEW_EPOCHS && d->n_steps > 1;
    double *smooth = steps_shown ? smoothed(d) : NULL;
    if (!f || (steps_shown && !smooth)) {
        if (f) fclose(f);
        free(text);
        free(smooth);
        fprintf(stderr, "cltrain: --plot %s: out of memory\n", path);
        return 1;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    draw(f, d, smooth);
    fprintf(f, "</svg>\n");
    free(smooth);
    int bad = fclose(f) != 0;
    if (bad || clt_write_file_atomic(path, text, len) != CLT_OK) {
        fprintf(stderr, "cltrain: --plot %s: %s\n", path, bad ? "out of memory" : clt_last_error());
        free(text);
        return 1;
    }
    free(text);
    return 0;
}
