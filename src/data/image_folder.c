/* Image folders as torchvision's ImageFolder reads them: ROOT/<class>/...
 * with .png, .jpg and .jpeg files (any depth, symbolic links followed),
 * class index = place of the class name in sorted order, files in sorted
 * order. Every image is decoded here, once, into the dataset's bytes:
 * channel count unified (grey copied into RGB, RGB to grey by ITU-R 601
 * luma as Pillow computes it), sizes equal or made so (--image-size:
 * shorter side to S, bilinear, then the centre S x S). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/dataset.h"
#include "data/image_decode.h"

#define MAX_DEPTH 32
#define MAX_IMAGE_BYTES ((size_t)1 << 30)

typedef struct file_list {
    char **paths;
    int32_t *labels;
    int64_t n, cap, skipped;
} file_list;

int clt_image_named(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    char ext[8] = {0};
    for (size_t i = 0; dot[1 + i]; i++) {
        if (i + 1 >= sizeof ext) return 0;
        ext[i] = (char)tolower((unsigned char)dot[1 + i]);
    }
    return !strcmp(ext, "png") || !strcmp(ext, "jpg") || !strcmp(ext, "jpeg");
}

static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names in dir (no "." or ".."), sorted; NULL on failure (detail set). */
static char **names_in(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        clt_fail(CLT_ERR_IO, "%s: cannot list it", dir);
        return NULL;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n == cap) {
            char **more = realloc(names, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *names);
            if (!more) break;
            names = more;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    if (e) { /* stopped early: out of memory */
        for (int i = 0; i < n; i++) free(names[i]);
        free(names);
        clt_fail(CLT_ERR_NO_MEMORY, "%s: listing", dir);
        return NULL;
    }
    if (!names && !(names = calloc(1, sizeof *names))) { /* an empty folder: an empty list, not NULL */
        clt_fail(CLT_ERR_NO_MEMORY, "%s: listing", dir);
        return NULL;
    }
    /* after the NULL check: qsort's argument is declared non-null */
    qsort(names, (size_t)n, sizeof *names, by_string);
    *count = n;
    return names;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

static clt_status add_file(file_list *l, const char *path, int32_t label)
{
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 256;
        char **p = realloc(l->paths, (size_t)cap * sizeof *p);
        if (p) l->paths = p;
        int32_t *lb = p ? realloc(l->labels, (size_t)cap * sizeof *lb) : NULL;
        if (lb) l->labels = lb;
        if (!p || !lb) return clt_fail(CLT_ERR_NO_MEMORY, "image list");
        l->cap = cap;
    }
    if (!(l->paths[l->n] = strdup(path))) return clt_fail(CLT_ERR_NO_MEMORY, "image list");
    l->labels[l->n++] = label;
    return CLT_OK;
}

/* dir and every folder below it (links followed) into dirs. */
static clt_status folders(const char *dir, int depth, char ***dirs, int64_t *n, int64_t *cap)
{
    if (depth > MAX_DEPTH) return clt_fail(CLT_ERR_FORMAT, "%s: folders nested over %d deep (a link loop?)", dir, MAX_DEPTH);
    if (*n == *cap) {
        char **more = realloc(*dirs, (size_t)(*cap = *cap ? 2 * *cap : 16) * sizeof **dirs);
        if (!more) return clt_fail(CLT_ERR_NO_MEMORY, "folder list");
        *dirs = more;
    }
    if (!((*dirs)[*n] = strdup(dir))) return clt_fail(CLT_ERR_NO_MEMORY, "folder list");
    (*n)++;
    int k;
    char **names = names_in(dir, &k);
    if (!names) return CLT_ERR_IO;
    clt_status s = CLT_OK;
    for (int i = 0; i < k && s == CLT_OK; i++) {
        char path[4096];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) < (int)sizeof path && stat(path, &st) == 0 &&
            S_ISDIR(st.st_mode))
            s = folders(path, depth + 1, dirs, n, cap);
    }
    free_names(names, k);
    return s;
}

/* The class folder's images in torchvision's order, sorted(os.walk(...)):
 * the folders by path, each folder's files by name. */
static clt_status walk(const char *dir, int32_t label, file_list *l)
{
    char **dirs = NULL;
    int64_t n = 0, cap = 0;
    clt_status s = folders(dir, 0, &dirs, &n, &cap);
    if (s == CLT_OK) qsort(dirs, (size_t)n, sizeof *dirs, by_string);
    for (int64_t d = 0; d < n && s == CLT_OK; d++) {
        int k;
        char **names = names_in(dirs[d], &k);
        if (!names) {
            s = CLT_ERR_IO;
            break;
        }
        for (int i = 0; i < k && s == CLT_OK; i++) {
            char path[4096];
            struct stat st;
            if (snprintf(path, sizeof path, "%s/%s", dirs[d], names[i]) >= (int)sizeof path) {
                s = clt_fail(CLT_ERR_INVALID_ARG, "%s/%s: path too long", dirs[d], names[i]);
                break;
            }
            if (stat(path, &st) != 0 || S_ISDIR(st.st_mode)) continue; /* a dangling link; a folder */
            if (S_ISREG(st.st_mode) && clt_image_named(names[i])) s = add_file(l, path, label);
            else l->skipped++;
        }
        free_names(names, k);
    }
    for (int64_t d = 0; d < n; d++) free(dirs[d]);
    free(dirs);
    return s;
}

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

static clt_status decode_file(const char *path, clt_image *im)
{
    unsigned char *data;
    size_t n;
    CLT_TRY(clt_read_file(path, MAX_IMAGE_BYTES, &data, &n));
    clt_status s = clt_image_decode(data, n, path, im);
    free(data);
    return s;
}

/* Every listed image into one dataset of `classes`: the headers first
 * (channel count, sizes), then each image decoded into its place. */
static clt_status build(const file_list *l, int classes, int channels, int size, clt_dataset **out)
{
    int c = 0, h = 0, w = 0;
    for (int64_t i = 0; i < l->n; i++) {
        unsigned char *data;
        size_t n;
        int iw, ih, ic;
        CLT_TRY(clt_read_file(l->paths[i], MAX_IMAGE_BYTES, &data, &n));
        clt_status s = clt_image_header(data, n, l->paths[i], &iw, &ih, &ic);
        free(data);
        CLT_TRY(s);
        if (ic > c) c = ic;
        if (i == 0) w = iw, h = ih;
        else if (!size && (iw != w || ih != h))
            return clt_fail(CLT_ERR_FORMAT, "images of different sizes: %s is %dx%d, %s is %dx%d (give an image size "
                            "to resize them: --image-size S)", l->paths[0], w, h, l->paths[i], iw, ih);
    }
    if (channels) c = channels;
    if (size) w = h = size;
    clt_dataset *ds;
    CLT_TRY(clt_dataset_alloc(l->n, c, h, w, classes, 1, &ds));
    size_t plane = (size_t)h * (size_t)w;
    for (int64_t i = 0; i < l->n; i++) {
        clt_image im;
        clt_status s = decode_file(l->paths[i], &im);
        if (s == CLT_OK && !size && (im.width != w || im.height != h))
            s = clt_fail(CLT_ERR_FORMAT, "%s: %dx%d now, %dx%d a moment ago (changed while read)", l->paths[i],
                         im.width, im.height, w, h);
        if (s != CLT_OK) {
            free(im.pixels);
            clt_dataset_destroy(ds);
            return s;
        }
        uint8_t *to = (uint8_t *)ds->pixels + (size_t)i * plane * (size_t)c;
        sampling g = sampling_of(&im, size);
        for (int ch = 0; ch < c; ch++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) to[(size_t)ch * plane + (size_t)y * (size_t)w + (size_t)x] = pixel(&im, &g, c, ch, x, y);
        ds->labels[i] = l->labels[i];
        free(im.pixels);
    }
    *out = ds;
    return CLT_OK;
}

static void free_list(file_list *l)
{
    for (int64_t i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    free(l->labels);
}

clt_status clt_image_folder_dataset(const char *root, int channels, int size, int64_t limit, clt_dataset **out)
{
    *out = NULL;
    if (!clt_image_supported()) {
        clt_image im;
        return clt_image_decode(NULL, 0, root, &im); /* the detail says what is missing */
    }
    if (channels != 0 && channels != 1 && channels != 3)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: %d channels (1 or 3)", root, channels);
    if (size < 0 || size > 65535) return clt_fail(CLT_ERR_INVALID_ARG, "%s: image size %d", root, size);
    int n_names;
    char **names = names_in(root, &n_names);
    if (!names) return CLT_ERR_IO;
    file_list l = {0};
    char **classes = malloc((size_t)(n_names ? n_names : 1) * sizeof *classes);
    int n_classes = 0;
    clt_status s = classes ? CLT_OK : clt_fail(CLT_ERR_NO_MEMORY, "class names");
    for (int i = 0; i < n_names && s == CLT_OK; i++) {
        char path[4096];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", root, names[i]) >= (int)sizeof path || stat(path, &st) != 0 ||
            !S_ISDIR(st.st_mode)) {
            l.skipped += 1;
            continue;
        }
        int64_t before = l.n;
        s = walk(path, n_classes, &l);
        if (s == CLT_OK && l.n == before)
            s = clt_fail(CLT_ERR_FORMAT, "%s: class folder holds no .png, .jpg or .jpeg file", path);
        if (s == CLT_OK) classes[n_classes++] = names[i], names[i] = NULL;
    }
    if (s == CLT_OK && n_classes == 0)
        s = clt_fail(CLT_ERR_FORMAT, "%s: no class folders (ROOT/<class>/*.png|jpg|jpeg)", root);
    if (s == CLT_OK && limit > 0 && limit < l.n) {
        for (int64_t i = limit; i < l.n; i++) free(l.paths[i]);
        l.n = limit;
    }
    if (s == CLT_OK) s = build(&l, n_classes, channels, size, out);
    if (s == CLT_OK) {
        (*out)->class_names = classes, (*out)->n_class_names = n_classes;
        (*out)->skipped_files = l.skipped;
        classes = NULL;
    }
    free_names(classes, classes ? n_classes : 0);
    free_names(names, n_names);
    free_list(&l);
    return s;
}
