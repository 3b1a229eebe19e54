/* Bounded memory on hostile .npz files: an entry's .npy header is read and
 * shown to the caller's filter before its data is inflated, and inflation
 * stops at the size the header declares. Zip bombs of 256 MiB (about
 * 250 KB on disk) are read in a child whose address space is capped at
 * what it already uses plus 64 MiB. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/error.h"
#include "io/npz.h"
#include "zipbuild.h"

#define BOMB ((uint64_t)256 << 20)

/* Expects one float32 entry "w" of shape (10,). */
static clt_status expect_w10(void *ctx, const char *path, const clt_npz_entry *e, int *skip)
{
    (void)ctx;
    (void)skip;
    if (e->data || e->bytes) return clt_fail(CLT_ERR_INTERNAL, "filter saw data");
    if (strcmp(e->name, "w") != 0 || e->is_bytes || e->ndim != 1 || e->shape[0] != 10) {
        char have[200];
        return clt_fail(CLT_ERR_FORMAT, "%s: entry \"%s\" has shape %s, expected (10,)", path, e->name,
                        clt_npz_shape_str(e->ndim, e->shape, have, sizeof have));
    }
    return CLT_OK;
}

static clt_status skip_all(void *ctx, const char *path, const clt_npz_entry *e, int *skip)
{
    (void)ctx;
    (void)path;
    (void)e;
    *skip = 1;
    return CLT_OK;
}

typedef struct bomb {
    const char *what, *needle;
    int filtered;
    uint8_t *zip;
    size_t size;
} bomb;

/* Virtual memory in use now, in bytes. */
static rlim_t vm_now(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
}

static void run_capped(bomb *b, int n)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    (void)b;
    (void)n;
    fprintf(stderr, "note: address-space cap check skipped under a sanitizer\n");
#else
    pid_t pid = fork();
    if (pid == 0) {
        rlim_t cap = vm_now() + ((rlim_t)64 << 20);
        struct rlimit lim = {cap, cap};
        setrlimit(RLIMIT_AS, &lim);
        int ok = 1;
        for (int i = 0; i < n; i++) {
            clt_npz *z = NULL;
            clt_status s = clt_npz_read_memory_filtered(b[i].zip, b[i].size, "bomb.npz",
                                                        b[i].filtered ? expect_w10 : NULL, NULL, &z);
            if (s != CLT_ERR_FORMAT || !strstr(clt_last_error(), b[i].needle)) {
                fprintf(stderr, "child: %s: %s: %s\n", b[i].what, clt_status_name(s), clt_last_error());
                ok = 0;
            }
            clt_npz_destroy(z);
        }
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "zip bombs under a capped address space");
#endif
}

int main(void)
{
    size_t n10, nbig;
    float ten[10] = {0};
    uint8_t *w10 = zb_npy_f32(1, (int64_t[]){10}, ten, &n10);
    /* A header declaring 256 MiB, its data all zeros. */
    uint8_t *big = zb_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 1024), }", 0, NULL, 0, &nbig);
    zb_entry e_big = {.name = "w.npy", .data = big, .n = nbig, .method = 8, .zeros = BOMB};
    /* The header declares (10,); the directory declares 256 MiB more. */
    zb_entry e_dir = {.name = "w.npy", .data = w10, .n = n10, .method = 8, .zeros = BOMB};
    /* Header and directory agree on (10,); the stream goes on for 256 MiB. */
    zb_entry e_stream = e_dir;
    e_stream.usize_delta = -(int64_t)BOMB;
    bomb b[] = {
        {"header of the wrong shape", "has shape (65536, 1024), expected (10,)", 1, NULL, 0},
        {"directory beyond the header", "needs 40 bytes of data, the entry holds", 0, NULL, 0},
        {"stream beyond the header", "more than the declared", 0, NULL, 0},
    };
    b[0].zip = zb_build(&e_big, 1, NULL, &b[0].size);
    b[1].zip = zb_build(&e_dir, 1, NULL, &b[1].size);
    b[2].zip = zb_build(&e_stream, 1, NULL, &b[2].size);
    for (int i = 0; i < 3; i++)
        CHECK(b[i].size < (2u << 20), "%s: %zu bytes is no bomb", b[i].what, b[i].size);
    run_capped(b, 3);

    /* The same refusals in this process, with their words. */
    clt_npz *z = (clt_npz *)1;
    CHECK_FAIL(clt_npz_read_memory_filtered(b[0].zip, b[0].size, "bomb.npz", expect_w10, NULL, &z), CLT_ERR_FORMAT,
               "bomb.npz", "entry \"w\"", "(65536, 1024)");
    CHECK(z == NULL, "*out set on failure");

    /* A good file passes the filter; a skipping filter leaves data unread. */
    zb_entry good = {.name = "w.npy", .data = w10, .n = n10, .method = 8};
    size_t gn;
    uint8_t *g = zb_build(&good, 1, NULL, &gn);
    CHECK_OK(clt_npz_read_memory_filtered(g, gn, "good.npz", expect_w10, NULL, &z));
    const clt_npz_entry *e = clt_npz_get(z, "w");
    CHECK(e && e->data && e->numel == 10 && e->data[9] == 0.0f, "filtered entry read");
    clt_npz_destroy(z);
    CHECK_OK(clt_npz_read_memory_filtered(b[0].zip, b[0].size, "bomb.npz", skip_all, NULL, &z));
    e = clt_npz_get(z, "w");
    CHECK(e && !e->data && !e->bytes && e->numel == (int64_t)(BOMB / 4), "skipped entry listed without data");
    clt_npz_destroy(z);

    for (int i = 0; i < 3; i++) free(b[i].zip);
    free(g);
    free(big);
    free(w10);
    return test_result();
}
