/* The geometry rule that makes a decoded image a sample, the one place
 * both an eager folder load and a lazy dataset's batches go through (so the
 * two give the same bytes), and the file list a lazy dataset keeps. */
#include "data/image_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/error.h"

/* Bilinear sample of channel c at (x, y) in source pixel units, edges clamped. */
static uint8_t bilinear(const clt_image *im, int c, double x, double y)
{
    if (x < 0) x = 0;
    if (y < 0) y = 0;
    if (x > im->width - 1) x = im->width - 1;
    if (y > im->height - 1) y = im->height - 1;
    int x0 = (int)x, y0 = (int)y, x1 = x0 + 1 < im->width ? x0 + 1 : x0, y1 = y0 + 1 < im->height ? y0 + 1 : y0;
    double fx = x - x0, fy = y - y0;
    const uint8_t *p = im->pixels;
    int ch = im->channels, w = im->width;
    double top = p[(y0 * w + x0) * ch + c] * (1 - fx) + p[(y0 * w + x1) * ch + c] * fx;
    double bottom = p[(y1 * w + x0) * ch + c] * (1 - fx) + p[(y1 * w + x1) * ch + c] * fx;
    double v = top * (1 - fy) + bottom * fy;
    return (uint8_t)(v + 0.5);
}

/* Where an image's pixels come from: the image itself, or (size > 0) its
 * shorter side resized to size (the longer one as int(size * long /
 * short)) and the centre size x size taken. Worked out once per image. */
typedef struct sampling {
    int size, left, top;
    double sx, sy;
} sampling;

static sampling sampling_of(const clt_image *im, int size)
{
    sampling g = {size, 0, 0, 1, 1};
    if (size <= 0) return g;
    int short_w = im->width <= im->height;
    int64_t rw = short_w ? size : (int64_t)size * im->width / im->height;
    int64_t rh = short_w ? (int64_t)size * im->height / im->width : size;
    g.left = (int)((rw - size + 1) / 2), g.top = (int)((rh - size + 1) / 2);
    g.sx = (double)im->width / (double)rw, g.sy = (double)im->height / (double)rh;
    return g;
}

/* Channel c of the image's pixel (x, y) as sampled. */
static uint8_t sample_at(const clt_image *im, const sampling *g, int c, int x, int y)
{
    if (g->size <= 0) return im->pixels[((size_t)y * (size_t)im->width + (size_t)x) * (size_t)im->channels + (size_t)c];
    return bilinear(im, c, (x + g->left + 0.5) * g->sx - 0.5, (y + g->top + 0.5) * g->sy - 0.5);
}

/* Pixel (x, y) channel c as the dataset takes it, with `channels`
 * channels: grey copied into R, G and B; RGB made grey by Pillow's luma. */
static uint8_t pixel(const clt_image *im, const sampling *g, int channels, int c, int x, int y)
{
    if (channels == im->channels) return sample_at(im, g, c, x, y);
    if (im->channels == 1) return sample_at(im, g, 0, x, y);
    uint8_t r = sample_at(im, g, 0, x, y), gr = sample_at(im, g, 1, x, y), b = sample_at(im, g, 2, x, y);
    return (uint8_t)((r * 19595 + gr * 38470 + b * 7471 + 0x8000) >> 16);
}

void clt_image_to_chw(const clt_image *im, int size, int channels, int height, int width, uint8_t *to)
{
    size_t plane = (size_t)height * (size_t)width;
    sampling g = sampling_of(im, size);
    for (int ch = 0; ch < channels; ch++)
        for (int y = 0; y < height; y++)
            for (int x = 0; x < width; x++)
                to[(size_t)ch * plane + (size_t)y * (size_t)width + (size_t)x] = pixel(im, &g, channels, ch, x, y);
}

clt_status clt_image_decode_file(const char *path, clt_image *im)
{
    unsigned char *data;
    size_t n;
    memset(im, 0, sizeof *im);
    CLT_TRY(clt_read_file(path, CLT_MAX_IMAGE_FILE, &data, &n));
    clt_status s = clt_image_decode(data, n, path, im);
    free(data);
    return s;
}

clt_status clt_image_files_read(const clt_image_files *f, int64_t i, uint8_t *to)
{
    const char *path = f->paths[i];
    clt_image im;
    clt_status s = clt_image_decode_file(path, &im);
    if (s != CLT_OK) return clt_fail_context(s, "image %lld of a folder decoded as it is read", (long long)i);
    if (!f->size && (im.width != f->width || im.height != f->height))
        s = clt_fail(CLT_ERR_FORMAT, "%s: %dx%d now, %dx%d when the dataset was made (changed since)", path, im.width,
                     im.height, f->width, f->height);
    else
        clt_image_to_chw(&im, f->size, f->channels, f->height, f->width, to);
    free(im.pixels);
    return s;
}

clt_status clt_image_files_subset(const clt_image_files *f, const uint8_t *keep, int want, int64_t n,
                                  clt_image_files **out)
{
    clt_image_files *g = calloc(1, sizeof *g);
    if (!g || !(g->paths = calloc((size_t)(n > 0 ? n : 1), sizeof *g->paths))) {
        free(g);
        return clt_fail(CLT_ERR_NO_MEMORY, "image list of %lld files", (long long)n);
    }
    g->channels = f->channels, g->height = f->height, g->width = f->width, g->size = f->size;
    for (int64_t i = 0; i < f->n && g->n < n; i++) {
        if (keep[i] != want) continue;
        if (!(g->paths[g->n] = strdup(f->paths[i]))) {
            clt_image_files_destroy(g);
            return clt_fail(CLT_ERR_NO_MEMORY, "image list of %lld files", (long long)n);
        }
        g->n++;
    }
    *out = g;
    return CLT_OK;
}

void clt_image_files_destroy(clt_image_files *f)
{
    if (!f) return;
    for (int64_t i = 0; i < f->n; i++) free(f->paths[i]);
    free(f->paths);
    free(f);
}

/* Bytes of memory available now: MemAvailable (what the kernel can give
 * without swapping), else the free pages; 0 when neither is known. */
static uint64_t available_memory(void)
{
    FILE *m = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (m && fgets(line, sizeof line, m))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    if (m) fclose(m);
    if (kb) return (uint64_t)kb * 1024;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

clt_status clt_image_decode_mode(int *mode)
{
    const char *v = getenv("CLTRAIN_DATA_DECODE");
    if (!v || !v[0] || !strcmp(v, "auto")) *mode = CLT_DECODE_AUTO;
    else if (!strcmp(v, "eager")) *mode = CLT_DECODE_EAGER;
    else if (!strcmp(v, "lazy")) *mode = CLT_DECODE_LAZY;
    else return clt_fail(CLT_ERR_INVALID_ARG, "CLTRAIN_DATA_DECODE=%s: not a decoding mode (eager, lazy or auto)", v);
    return CLT_OK;
}

int clt_image_lazy(int mode, uint64_t decoded_bytes)
{
    if (mode != CLT_DECODE_AUTO) return mode == CLT_DECODE_LAZY;
    uint64_t avail = available_memory();
    return avail && decoded_bytes > avail / 2;
}
