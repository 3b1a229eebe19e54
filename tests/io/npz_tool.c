/* Helper of test_npz_numpy.py: cltrain's side of the NumPy interop test.
 *   npz_tool dump FILE             every entry as JSON (floats as their bits)
 *   npz_tool write FILE stored|deflate   a fixed set of arrays (the script knows them)
 *   npz_tool net-save FILE SEED    lenet on device 0, initialised, saved
 *   npz_tool net-load FILE OUT     lenet loaded from FILE, saved again to OUT
 * Failures print "error: CLT_ERR_X: detail" and exit 1; the net commands
 * exit 77 when there is no OpenCL device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltrain.h"

static int fail(clt_status s)
{
    fprintf(stderr, "error: %s: %s\n", clt_status_name(s), clt_last_error());
    return 1;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static int dump(const char *path)
{
    clt_npz *z;
    clt_status s = clt_npz_read(path, &z);
    if (s != CLT_OK) return fail(s);
    printf("{\"entries\": [");
    for (int i = 0; i < clt_npz_count(z); i++) {
        clt_npz_entry e;
        if ((s = clt_npz_entry_at(z, i, &e)) != CLT_OK) return fail(s);
        printf("%s\n{\"name\": ", i ? "," : "");
        json_string(e.name);
        printf(", \"dtype\": ");
        json_string(e.dtype);
        printf(", \"is_bytes\": %d, \"numel\": %lld, \"shape\": [", e.is_bytes, (long long)e.numel);
        for (int d = 0; d < e.ndim; d++) printf("%s%lld", d ? ", " : "", (long long)e.shape[d]);
        printf("], \"hex\": \"");
        for (size_t k = 0; k < e.nbytes && e.is_bytes; k++) printf("%02x", e.bytes[k]);
        printf("\", \"bits\": [");
        for (int64_t k = 0; k < e.numel && !e.is_bytes; k++) {
            uint32_t b;
            memcpy(&b, &e.data[k], 4);
            printf("%s%u", k ? "," : "", b);
        }
        printf("]}");
    }
    printf("]}\n");
    clt_npz_destroy(z);
    return 0;
}

static float *fill(int64_t n, int kind)
{
    float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        switch (kind) {
        case 0: v[i] = (float)i * 0.5f - 1.25f; break;
        case 1: v[i] = (float)i * 0.25f + 1.0f; break;
        case 2: v[i] = (float)(i % 17) - 8.0f; break;
        case 3: v[i] = (float)i * 0.125f; break;
        case 4: v[i] = (float)(i + 1); break;
        default: v[i] = (float)((i * 7919) % 1000) * 0.125f - 60.0f; break;
        }
    }
    return v;
}

static int write_fixed(const char *path, const char *mode)
{
    int compress = strcmp(mode, "deflate") == 0;
    if (!compress && strcmp(mode, "stored") != 0) {
        fprintf(stderr, "mode must be stored or deflate\n");
        return 2;
    }
    static const struct {
        const char *name;
        int ndim;
        int64_t shape[6];
        int kind;
    } arrays[] = {
        {"vec", 1, {7}, 0},
        {"mat", 2, {3, 4}, 1},
        {"t4", 4, {2, 3, 4, 5}, 2},
        {"t6", 6, {1, 2, 1, 3, 1, 2}, 3},
        {"empty", 2, {0, 3}, 0},
        {"momentum/0.weight", 2, {2, 2}, 4},
        {"big", 2, {300, 100}, 5},
    };
    clt_npz_writer *w;
    clt_status s = clt_npz_writer_create(path, compress, &w);
    if (s != CLT_OK) return fail(s);
    float scalar = 3.5f, one = -2.25f;
    uint32_t bits[8] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                        0x7fc00001u, 0x00000001u, 0x7f7fffffu, 0x3f800001u};
    float special[8];
    memcpy(special, bits, sizeof bits);
    int64_t s1[1] = {1}, s8[1] = {8};
    if (s == CLT_OK) s = clt_npz_writer_add_f32(w, "scalar", 0, NULL, &scalar);
    if (s == CLT_OK) s = clt_npz_writer_add_f32(w, "one", 1, s1, &one);
    if (s == CLT_OK) s = clt_npz_writer_add_f32(w, "special", 1, s8, special);
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0] && s == CLT_OK; i++) {
        int64_t n = 1;
        for (int d = 0; d < arrays[i].ndim; d++) n *= arrays[i].shape[d];
        float *v = fill(n, arrays[i].kind);
        s = clt_npz_writer_add_f32(w, arrays[i].name, arrays[i].ndim, arrays[i].shape, v);
        free(v);
    }
    const char *json = "{\"format\": \"cltrain\", \"epoch\": 3}";
    uint8_t raw[256];
    for (int i = 0; i < 256; i++) raw[i] = (uint8_t)i;
    if (s == CLT_OK) s = clt_npz_writer_add_bytes(w, "__cltrain__", json, strlen(json));
    if (s == CLT_OK) s = clt_npz_writer_add_bytes(w, "raw", raw, sizeof raw);
    if (s == CLT_OK) s = clt_npz_writer_commit(w);
    clt_npz_writer_destroy(w);
    return s == CLT_OK ? 0 : fail(s);
}

static int open_lenet(clt_device **dev, clt_net **net)
{
    int count = 0;
    if (clt_device_count(&count) != CLT_OK || count < 1) {
        fprintf(stderr, "skip: no OpenCL device\n");
        exit(77);
    }
    clt_status s = clt_device_open(0, dev);
    if (s == CLT_OK) s = clt_net_create(*dev, "lenet", 1, 28, 28, net);
    if (s != CLT_OK) exit(fail(s));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "dump") == 0) return dump(argv[2]);
    if (argc == 4 && strcmp(argv[1], "write") == 0) return write_fixed(argv[2], argv[3]);
    if (argc == 4 && (strcmp(argv[1], "net-save") == 0 || strcmp(argv[1], "net-load") == 0)) {
        clt_device *dev;
        clt_net *net;
        open_lenet(&dev, &net);
        clt_status s;
        if (strcmp(argv[1], "net-save") == 0) {
            s = clt_net_init(net, strtoull(argv[3], NULL, 10), CLT_INIT_XAVIER);
            if (s == CLT_OK) s = clt_net_save_npz(net, argv[2]);
        } else {
            s = clt_net_load_npz(net, argv[2]);
            if (s == CLT_OK) s = clt_net_save_npz(net, argv[3]);
        }
        clt_net_destroy(net);
        clt_device_destroy(dev);
        return s == CLT_OK ? 0 : fail(s);
    }
    fprintf(stderr, "usage: npz_tool dump FILE | write FILE stored|deflate | net-save FILE SEED | "
                    "net-load FILE OUT\n");
    return 2;
}
