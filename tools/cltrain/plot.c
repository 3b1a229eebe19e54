#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/atomic_file.h"

#define W 640
#define H 400
#define L 60  /* margins */
#define R 60
#define T 40
#define B 50

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

/* One curve: field selects the value; y maps [lo, hi] onto the plot. */
static void curve(FILE *f, const plot_point *p, int n, int field, double xmax, double lo, double hi,
                  const char *color, const char *name)
{
    fprintf(f, "<path class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" d=\"", name, color);
    for (int i = 0; i < n; i++) {
        double v = field == 0 ? p[i].loss : field == 1 ? p[i].train_acc : p[i].test_acc;
        if (!isfinite(v)) v = hi;
        double x = L + (W - L - R) * (xmax > 0 ? p[i].epoch / xmax : 0);
        double y = T + (H - T - B) * (1 - (v - lo) / (hi - lo));
        fprintf(f, "%s%.1f,%.1f", i ? " L" : "M", x, y);
    }
    fprintf(f, "\"/>\n");
}

int plot_write_svg(const char *path, const plot_point *p, int n, const char *title)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        fprintf(stderr, "cltrain: --plot %s: out of memory\n", path);
        return 1;
    }
    double xmax = n ? p[n - 1].epoch : 1, lmax = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(p[i].loss) && p[i].loss > lmax) lmax = p[i].loss;
    lmax = lmax > 0 ? lmax * 1.05 : 1;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">", W / 2);
    xml_text(f, title);
    fprintf(f, "</text>\n<g stroke=\"#999\" fill=\"none\">\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n</g>\n", L,
            T, W - L - R, H - T - B);
    for (int i = 0; i <= 4; i++) { /* axis labels: loss left, accuracy right */
        double y = T + (H - T - B) * (1 - i / 4.0);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", L - 6, y + 4, lmax * i / 4.0);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\">%.2f</text>\n", W - R + 6, y + 4, i / 4.0);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">epoch (last %.4g)</text>\n", W / 2, H - 15, xmax);
    curve(f, p, n, 0, xmax, 0, lmax, "#1f77b4", "loss");
    curve(f, p, n, 1, xmax, 0, 1, "#ff7f0e", "train_acc");
    curve(f, p, n, 2, xmax, 0, 1, "#2ca02c", "test_acc");
    fprintf(f, "<g font-size=\"12\"><text x=\"%d\" y=\"%d\" fill=\"#1f77b4\">loss</text>"
               "<text x=\"%d\" y=\"%d\" fill=\"#ff7f0e\">train acc</text>"
               "<text x=\"%d\" y=\"%d\" fill=\"#2ca02c\">test acc</text></g>\n</svg>\n",
            L + 10, T + 16, L + 60, T + 16, L + 140, T + 16);
    int bad = fclose(f) != 0;
    if (bad || clt_write_file_atomic(path, text, len) != CLT_OK) {
        fprintf(stderr, "cltrain: --plot %s: %s\n", path, bad ? "out of memory" : clt_last_error());
        free(text);
        return 1;
    }
    free(text);
    return 0;
}
