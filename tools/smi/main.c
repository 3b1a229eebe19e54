/* cltrain-smi: lists the OpenCL devices cltrain sees, nvidia-smi style. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/json.h"
#include "cltrain_diag.h"
#include "fields.h"

#define MAX_FIELDS 64

typedef struct options {
    enum { OUT_TABLE, OUT_LIST, OUT_CSV, OUT_JSON } mode;
    int fields[MAX_FIELDS];
    int n_fields;
    int csv_header, csv_units;
    int *select; /* -i */
    int n_select;
    double loop_seconds;
    long count; /* repetitions with -l; 0 = until interrupted */
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: cltrain-smi [options]\n"
            "Lists the OpenCL devices cltrain can use, with the indices --devices and\n"
            "CLTRAIN_DEVICES take.\n\n"
            "  (no option)             a table, one row per device\n"
            "  -L, --list-gpus         one line per device: GPU 0: <name> (<platform>, <bus id or UUID>)\n"
            "  --query-gpu=FIELDS, --query=FIELDS\n"
            "                          comma-separated fields (see --help-query), needs --format=csv;\n"
            "                          nvidia-smi's fields OpenCL cannot report print [N/A]\n"
            "  --format=csv[,noheader][,nounits]\n"
            "                          CSV output for --query\n"
            "  --json                  every field of every device as JSON\n"
            "  -i, --id=LIST           only these device indices (e.g. 0,2)\n"
            "  -l, --loop=SECONDS      repeat every SECONDS until interrupted\n"
            "  -c, --count=N           with -l: stop after N reports\n"
            "  --help-query            list the fields --query knows\n"
            "  -h, --help              this help\n"
            "  --version               cltrain version\n");
}

static int fail_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "cltrain-smi: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'cltrain-smi --help'.\n");
    return 2;
}

static int parse_fields(options *o, const char *list)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
        return fail_usage("--query: field list too long%s", "");
    o->n_fields = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        size_t l = strlen(tok);
        while (l && tok[l - 1] == ' ') tok[--l] = 0;
        int f = smi_field_find(tok);
        if (f < 0) return fail_usage("--query-gpu: unknown field \"%s\" (see --help-query)", tok);
        if (o->n_fields == MAX_FIELDS) return fail_usage("--query: too many fields%s", "");
        o->fields[o->n_fields++] = f;
    }
    if (o->n_fields == 0) return fail_usage("--query: no field given%s", "");
    return 0;
}

static int parse_format(options *o, const char *fmt)
{
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", fmt) >= (int)sizeof buf)
        return fail_usage("--format: value too long%s", "");
    int csv = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (!strcmp(tok, "csv")) csv = 1;
        else if (!strcmp(tok, "noheader")) o->csv_header = 0;
        else if (!strcmp(tok, "nounits")) o->csv_units = 0;
        else return fail_usage("--format: unknown format option \"%s\" (csv, noheader, nounits)", tok);
    }
    if (!csv) return fail_usage("--format=%s: only csv is supported", fmt);
    return 0;
}

static int parse_ids(options *o, const char *list)
{
    size_t len = strlen(list);
    o->select = calloc(len + 1, sizeof *o->select);
    if (!o->select) return fail_usage("out of memory%s", "");
    const char *p = list;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 1000000 || (*end && *end != ','))
            return fail_usage("-i: \"%s\" is not a list of device indices (e.g. 0,2)", list);
        for (int i = 0; i < o->n_select; i++)
            if (o->select[i] == v) return fail_usage("-i: device %s is listed twice", p);
        o->select[o->n_select++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (o->n_select == 0) return fail_usage("-i: empty device list%s", "");
    return 0;
}

static int parse_args(options *o, int argc, char **argv, int *exit_now)
{
    enum { OPT_QUERY = 256, OPT_FORMAT, OPT_JSON, OPT_HELP_QUERY, OPT_VERSION };
    static const struct option longs[] = {
        {"list-gpus", no_argument, NULL, 'L'},      {"query", required_argument, NULL, OPT_QUERY},
        {"query-gpu", required_argument, NULL, OPT_QUERY},
        {"format", required_argument, NULL, OPT_FORMAT}, {"json", no_argument, NULL, OPT_JSON},
        {"id", required_argument, NULL, 'i'},       {"loop", required_argument, NULL, 'l'},
        {"count", required_argument, NULL, 'c'},    {"help-query", no_argument, NULL, OPT_HELP_QUERY},
        {"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    int have_format = 0, rc;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":Li:l:c:h", longs, NULL);
        if (c == -1) break;
        switch (c) {
        case 'L': o->mode = OUT_LIST; break;
        case OPT_QUERY:
            if ((rc = parse_fields(o, optarg))) return rc;
            o->mode = OUT_CSV;
            break;
        case OPT_FORMAT:
            if ((rc = parse_format(o, optarg))) return rc;
            have_format = 1;
            break;
        case OPT_JSON: o->mode = OUT_JSON; break;
        case 'i':
            if ((rc = parse_ids(o, optarg))) return rc;
            break;
        case 'l': {
            char *end;
            errno = 0;
            o->loop_seconds = strtod(optarg, &end);
            if (end == optarg || *end || errno || !(o->loop_seconds > 0) || o->loop_seconds > 86400)
                return fail_usage("-l: \"%s\" is not a number of seconds in (0, 86400]", optarg);
            break;
        }
        case 'c': {
            char *end;
            errno = 0;
            o->count = strtol(optarg, &end, 10);
            if (end == optarg || *end || errno || o->count <= 0)
                return fail_usage("-c: \"%s\" is not a positive count", optarg);
            break;
        }
        case OPT_HELP_QUERY:
            for (int i = 0; i < smi_field_count; i++)
                printf("%-18s %s%s%s%s\n", smi_fields[i].name, smi_fields[i].help,
                       smi_fields[i].unit ? " [" : "", smi_fields[i].unit ? smi_fields[i].unit : "",
                       smi_fields[i].unit ? "]" : "");
            *exit_now = 1;
            return 0;
        case 'h': usage(stdout); *exit_now = 1; return 0;
        case OPT_VERSION: printf("cltrain-smi %s\n", clt_version(NULL, NULL, NULL)); *exit_now = 1; return 0;
        case ':': return fail_usage("option %s needs a value", argv[optind - 1]);
        default: return fail_usage("unknown option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc) return fail_usage("unexpected argument \"%s\"", argv[optind]);
    if (o->mode == OUT_CSV && !have_format) return fail_usage("--query needs --format=csv%s", "");
    if (o->mode != OUT_CSV && have_format) return fail_usage("--format needs --query%s", "");
    if (o->count && !o->loop_seconds) return fail_usage("-c needs -l%s", "");
    return 0;
}

/* ---- output ---- */

static void csv_cell(const char *s)
{
    if (strpbrk(s, ",\"\n")) {
        putchar('"');
        for (; *s; s++) {
            if (*s == '"') putchar('"');
            putchar(*s);
        }
        putchar('"');
    } else {
        fputs(s, stdout);
    }
}

/* Field f of device d (p: what opening it told). */
static int value(int f, const clt_device_info *d, const smi_probe *p, int with_unit, char *buf, size_t cap)
{
    return smi_field_needs_probe(f) ? smi_probe_value(f, p, buf, cap) : smi_field_value(f, d, with_unit, buf, cap);
}

/* Opens each device whose probe fields are asked for (the TF32 probe runs
 * at open); a device that does not open stays unknown: [N/A]. */
static void probe_devices(const clt_device_info *devs, smi_probe *probes, int n)
{
    for (int i = 0; i < n; i++) {
        clt_device *dev = NULL;
        if (clt_device_open(devs[i].index, &dev) != CLT_OK) continue;
        probes[i] = (smi_probe){1, clt_device_tf32(dev), clt_device_compute_capability(dev)};
        clt_device_destroy(dev);
    }
}

static void print_csv(const options *o, const clt_device_info *devs, const smi_probe *probes, int n)
{
    char buf[512];
    if (o->csv_header) {
        for (int j = 0; j < o->n_fields; j++) {
            const smi_field *f = &smi_fields[o->fields[j]];
            if (j) fputs(", ", stdout);
            if (o->csv_units && f->unit) {
                snprintf(buf, sizeof buf, "%s [%s]", f->name, f->unit);
                csv_cell(buf);
            } else {
                csv_cell(f->name);
            }
        }
        putchar('\n');
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < o->n_fields; j++) {
            if (j) fputs(", ", stdout);
            value(o->fields[j], &devs[i], &probes[i], o->csv_units, buf, sizeof buf);
            csv_cell(buf);
        }
        putchar('\n');
    }
}

static void print_list(const clt_device_info *devs, int n)
{
    for (int i = 0; i < n; i++) {
        const clt_device_info *d = &devs[i];
        const char *where = d->pci_bus_id[0] ? d->pci_bus_id : d->uuid[0] ? d->uuid : "N/A";
        printf("%s %d: %s (%s, %s)\n", d->type == CLT_DEVICE_CPU ? "CPU" : "GPU", d->index, d->name,
               d->platform, where);
    }
}

static void print_json(const clt_device_info *devs, const smi_probe *probes, int n, const char *loader,
                       const char *loader_ver)
{
    char buf[512];
    printf("{\"cltrain_version\": ");
    json_string(stdout, clt_version(NULL, NULL, NULL));
    printf(", \"icd_loader\": {\"name\": ");
    json_string(stdout, loader);
    printf(", \"version\": ");
    json_string(stdout, loader_ver);
    printf("}, \"devices\": [");
    for (int i = 0; i < n; i++) {
        printf("%s\n  {", i ? "," : "");
        for (int f = 0; f < smi_field_count; f++) {
            int known = value(f, &devs[i], &probes[i], 0, buf, sizeof buf);
            printf("%s", f ? ", " : "");
            json_string(stdout, smi_fields[f].name);
            printf(": ");
            if (!known) printf("null");
            else if (smi_fields[f].kind == FIELD_STR || smi_fields[f].kind == FIELD_PROBE) json_string(stdout, buf);
            else printf("%s", buf);
        }
        printf("}");
    }
    printf("%s]}\n", n ? "\n" : "");
}

enum { COLS = 8, CELL = 256, NAME_MAX_W = 40 };

static void rule(const int *w, char c)
{
    putchar('+');
    for (int j = 0; j < COLS; j++) {
        for (int k = 0; k < w[j] + 2; k++) putchar(c);
        putchar('+');
    }
    putchar('\n');
}

static void row(const int *w, char cells[][CELL])
{
    putchar('|');
    for (int j = 0; j < COLS; j++) printf(" %-*s |", w[j], cells[j]);
    putchar('\n');
}

/* Vendors' long names in their usual short form, so that a cell needs no
 * cutting; anything else is printed whole. */
static const char *short_name(const char *s)
{
    static const char *const known[][2] = {
        {"Portable Computing Language", "PoCL"}, {"Intel(R) Corporation", "Intel"},
        {"Intel(R) OpenCL", "Intel OpenCL"}, {"NVIDIA Corporation", "NVIDIA"},
        {"Advanced Micro Devices, Inc.", "AMD"}, {"AMD Accelerated Parallel Processing", "AMD APP"},
        {"AuthenticAMD", "AMD"}, {"GenuineIntel", "Intel"}, {"Oclgrind", "Oclgrind"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(s, known[i][0])) return known[i][1];
    return s;
}

/* A name longer than max: cut at the last word boundary that fits and
 * marked with "...", never in the middle of a word. */
static void fit(char *cell, int max)
{
    if ((int)strlen(cell) <= max) return;
    int end = max - 3;
    while (end > 0 && cell[end] != ' ' && cell[end] != '-') end--;
    if (end == 0) end = max - 3; /* one long word: nothing better to do */
    while (end > 0 && cell[end - 1] == ' ') end--;
    strcpy(cell + end, "...");
}

static int print_table(const clt_device_info *devs, int n, const char *loader, const char *loader_ver)
{
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%a %b %e %H:%M:%S %Y", localtime(&now));
    printf("%s\n", when);
    printf("cltrain-smi %s    ICD loader: %s %s\n", clt_version(NULL, NULL, NULL),
           loader[0] ? loader : "unknown", loader_ver[0] ? loader_ver : "");
    /* one line per platform, in index order */
    int last_platform = -1;
    for (int i = 0; i < n; i++) {
        if (devs[i].platform_index == last_platform) continue;
        last_platform = devs[i].platform_index;
        printf("Platform %d: %s (%s)\n", devs[i].platform_index, devs[i].platform,
               devs[i].platform_version);
    }
    static const char *head[COLS] = {"#", "Name", "Vendor / Platform", "Type", "Memory total / free",
                                     "CUs", "Clock", "Bus-Id"};
    char(*cells)[COLS][CELL] = calloc((size_t)n + 1, sizeof *cells);
    if (!cells) {
        fprintf(stderr, "cltrain-smi: out of memory for the table\n");
        return 1;
    }
    int w[COLS] = {0};
    for (int j = 0; j < COLS; j++) snprintf(cells[0][j], CELL, "%s", head[j]);
    for (int i = 0; i < n; i++) {
        const clt_device_info *d = &devs[i];
        char(*c)[CELL] = cells[i + 1];
        char total[32], freem[32];
        smi_field_value(smi_field_find("memory.total"), d, 1, total, sizeof total);
        smi_field_value(smi_field_find("memory.free"), d, 1, freem, sizeof freem);
        snprintf(c[0], CELL, "%d", d->index);
        snprintf(c[1], CELL, "%s", d->name);
        fit(c[1], NAME_MAX_W);
        snprintf(c[2], CELL, "%s / %s", short_name(d->vendor), short_name(d->platform));
        fit(c[2], NAME_MAX_W);
        snprintf(c[3], CELL, "%s", smi_type_name(d->type));
        snprintf(c[4], CELL, "%s / %s", total, freem);
        smi_field_value(smi_field_find("compute_units"), d, 0, c[5], CELL);
        smi_field_value(smi_field_find("clocks.max"), d, 1, c[6], CELL);
        smi_field_value(smi_field_find("pci.bus_id"), d, 0, c[7], CELL);
    }
    for (int i = 0; i <= n; i++)
        for (int j = 0; j < COLS; j++)
            if ((int)strlen(cells[i][j]) > w[j]) w[j] = (int)strlen(cells[i][j]);
    rule(w, '-');
    row(w, cells[0]);
    rule(w, '=');
    for (int i = 1; i <= n; i++) row(w, cells[i]);
    rule(w, '-');
    free(cells);
    return 0;
}

static int report(const options *o)
{
    int n;
    clt_status s = clt_device_count(&n);
    if (s != CLT_OK) {
        fprintf(stderr, "cltrain-smi: %s\n", clt_last_error());
        return 1;
    }
    for (int k = 0; k < o->n_select; k++) {
        if (o->select[k] >= n) {
            fprintf(stderr, "cltrain-smi: -i: device %d does not exist (%d device%s visible%s)\n",
                    o->select[k], n, n == 1 ? "" : "s", n ? "; see cltrain-smi -L" : "");
            return 1;
        }
    }
    clt_device_info *devs = calloc((size_t)(n ? n : 1), sizeof *devs);
    smi_probe *probes = calloc((size_t)(n ? n : 1), sizeof *probes);
    if (!devs || !probes) {
        fprintf(stderr, "cltrain-smi: out of memory\n");
        free(devs), free(probes);
        return 1;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        int want = o->n_select == 0;
        for (int k = 0; k < o->n_select; k++) want |= o->select[k] == i;
        if (!want) continue;
        if (clt_device_query(i, &devs[m]) != CLT_OK) {
            fprintf(stderr, "cltrain-smi: %s\n", clt_last_error());
            free(devs), free(probes);
            return 1;
        }
        m++;
    }
    int probe = o->mode == OUT_JSON;
    for (int j = 0; o->mode == OUT_CSV && j < o->n_fields; j++) probe |= smi_field_needs_probe(o->fields[j]);
    if (probe) probe_devices(devs, probes, m);
    char loader[128], loader_ver[128];
    int rc = 0;
    clt_icd_loader_info(loader, sizeof loader, loader_ver, sizeof loader_ver);
    if (n == 0 && o->mode != OUT_JSON && o->mode != OUT_CSV) {
        char why[2048];
        if (clt_no_device_reason(why, sizeof why) != CLT_OK) why[0] = 0;
        printf("No OpenCL devices found%s%s\n", why[0] ? ":\n" : ".", why);
        if (!why[0]) /* else the reason says what to mend */
            printf("Install a driver (on Debian, pocl-opencl-icd gives a CPU device).\n");
    } else {
        switch (o->mode) {
        case OUT_TABLE: rc = print_table(devs, m, loader, loader_ver); break;
        case OUT_LIST: print_list(devs, m); break;
        case OUT_CSV: print_csv(o, devs, probes, m); break;
        case OUT_JSON: print_json(devs, probes, m, loader, loader_ver); break;
        }
    }
    free(devs), free(probes);
    /* a listing lost to a full disk or a closed pipe is a failure (a loop
     * ends with it) */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int err = errno ? errno : EIO;
        if (err != EPIPE) fprintf(stderr, "cltrain-smi: writing to standard output failed: %s\n", strerror(err));
        return rc ? rc : err == EPIPE ? 141 : 1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    memset(&o, 0, sizeof o);
    o.csv_header = o.csv_units = 1;
    int exit_now = 0;
    signal(SIGPIPE, SIG_IGN); /* a closed output shows as a failed write (report) */
    int rc = parse_args(&o, argc, argv, &exit_now);
    if (rc || exit_now) {
        free(o.select);
        return rc;
    }
    for (long k = 0;; k++) {
        rc = report(&o);
        if (rc || !o.loop_seconds || (o.count && k + 1 >= o.count)) break;
        struct timespec ts = {(time_t)o.loop_seconds,
                              (long)((o.loop_seconds - (double)(time_t)o.loop_seconds) * 1e9)};
        nanosleep(&ts, NULL);
    }
    free(o.select);
    return rc;
}
