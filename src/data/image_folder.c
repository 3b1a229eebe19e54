/* Image folders as torchvision's ImageFolder reads them: ROOT/<class>/...
 * with .png, .jpg and .jpeg files (any depth, symbolic links followed),
 * class index = place of the class name in sorted order, files in sorted
 * order. Each file is read once here: decoded into the dataset's bytes
 * (eager), or, for a folder whose images would not fit in memory (the
 * decoding mode's rule, image_files.h), its header alone, the dataset
 * keeping the file list and decoding batch by batch (lazy). Either way the
 * same rule (image_files.c) unifies channels and sizes. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/dataset.h"
#include "data/image_files.h"

#define MAX_DEPTH 32
#define HEAD_BYTES ((size_t)64 << 10)

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

/* Up to `cap` first bytes of a file: enough for its header as a rule
 * (*whole set when that is the file). */
static clt_status read_head(const char *path, size_t cap, unsigned char *buf, size_t *n, int *whole)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO put in its place must not block */
    if (fd < 0) return clt_fail(errno == ENOENT ? CLT_ERR_NOT_FOUND : CLT_ERR_IO, "%s: %s", path, strerror(errno));
    size_t got = 0;
    ssize_t r = 1;
    while (got < cap && (r = read(fd, buf + got, cap - got)) > 0) got += (size_t)r;
    int err = errno;
    close(fd);
    if (r < 0) return clt_fail(CLT_ERR_IO, "%s: %s", path, strerror(err));
    *n = got, *whole = got < cap;
    return CLT_OK;
}

/* The image's size and channels from its header: its first 64 KiB, or the
 * whole file where metadata pushes the header further. */
static clt_status header_of(const char *path, unsigned char *head, int *w, int *h, int *c)
{
    size_t n = 0;
    int whole = 0;
    CLT_TRY(read_head(path, HEAD_BYTES, head, &n, &whole));
    if (clt_image_header(head, n, path, w, h, c) == CLT_OK) return CLT_OK;
    if (whole) return clt_image_header(head, n, path, w, h, c); /* sets the detail again */
    unsigned char *data;
    CLT_TRY(clt_read_file(path, CLT_MAX_IMAGE_FILE, &data, &n));
    clt_status s = clt_image_header(data, n, path, w, h, c);
    free(data);
    return s;
}

static clt_status mixed_sizes(const file_list *l, int w, int h, int64_t i, int iw, int ih)
{
    return clt_fail(CLT_ERR_FORMAT, "images of different sizes: %s is %dx%d, %s is %dx%d (give an image size to "
                    "resize them: --image-size S)", l->paths[0], w, h, l->paths[i], iw, ih);
}

/* A lazy dataset: the list and each image's header (sizes equal or made
 * so, the most channels any image has), read once; no pixel decoded. */
static clt_status build_lazy(file_list *l, int classes, int channels, int size, clt_dataset **out)
{
    unsigned char *head = malloc(HEAD_BYTES);
    if (!head) return clt_fail(CLT_ERR_NO_MEMORY, "image header buffer");
    int c = 0, h = 0, w = 0;
    clt_status s = CLT_OK;
    for (int64_t i = 0; i < l->n && s == CLT_OK; i++) {
        int iw, ih, ic;
        s = header_of(l->paths[i], head, &iw, &ih, &ic);
        if (s != CLT_OK) break;
        if (ic > c) c = ic;
        if (i == 0) w = iw, h = ih;
        else if (!size && (iw != w || ih != h)) s = mixed_sizes(l, w, h, i, iw, ih);
    }
    free(head);
    CLT_TRY(s);
    clt_image_files *f = calloc(1, sizeof *f);
    if (!f) return clt_fail(CLT_ERR_NO_MEMORY, "image list");
    f->channels = channels ? channels : c, f->height = size ? size : h, f->width = size ? size : w, f->size = size;
    s = clt_dataset_alloc_files(l->n, f->channels, f->height, f->width, classes, f, out);
    if (s != CLT_OK) return s; /* f freed */
    f->paths = l->paths, f->n = l->n; /* the dataset owns the paths now */
    l->paths = NULL, l->n = 0;
    memcpy((*out)->labels, l->labels, (size_t)f->n * sizeof *l->labels);
    return CLT_OK;
}

/* Samples 0..done of a one-channel dataset made three-channel (grey copied
 * into R, G and B, as the rule takes a grey image into RGB): a colour
 * image came after grey ones. */
static clt_status widen(clt_dataset **ds, int64_t done)
{
    clt_dataset *old = *ds, *rgb;
    CLT_TRY(clt_dataset_alloc(old->n, 3, old->height, old->width, old->classes, 1, &rgb));
    size_t plane = (size_t)old->height * (size_t)old->width;
    for (int64_t i = 0; i < done; i++)
        for (int c = 0; c < 3; c++)
            memcpy((uint8_t *)rgb->pixels + ((size_t)i * 3 + (size_t)c) * plane, (uint8_t *)old->pixels + (size_t)i * plane,
                   plane);
    memcpy(rgb->labels, old->labels, (size_t)done * sizeof *old->labels);
    clt_dataset_destroy(old);
    *ds = rgb;
    return CLT_OK;
}

/* Every image decoded into its place, each file read once: the first one
 * fixes the size (unless size), a colour image after grey ones widens
 * those (unless channels). */
static clt_status build_eager(const file_list *l, int classes, int channels, int size, clt_dataset **out)
{
    clt_dataset *ds = NULL;
    clt_status s = CLT_OK;
    for (int64_t i = 0; i < l->n && s == CLT_OK; i++) {
        clt_image im;
        s = clt_image_decode_file(l->paths[i], &im);
        if (s == CLT_OK && !ds)
            s = clt_dataset_alloc(l->n, channels ? channels : im.channels, size ? size : im.height,
                                  size ? size : im.width, classes, 1, &ds);
        if (s == CLT_OK && !size && (im.width != ds->width || im.height != ds->height))
            s = mixed_sizes(l, ds->width, ds->height, i, im.width, im.height);
        if (s == CLT_OK && !channels && im.channels > ds->channels) s = widen(&ds, i);
        if (s == CLT_OK) {
            size_t sample = clt_dataset_sample_size(ds);
            clt_image_to_chw(&im, size, ds->channels, ds->height, ds->width, (uint8_t *)ds->pixels + (size_t)i * sample);
            ds->labels[i] = l->labels[i];
        }
        free(im.pixels);
    }
    if (s != CLT_OK) {
        clt_dataset_destroy(ds);
        return s;
    }
    *out = ds;
    return CLT_OK;
}

/* Eager, or lazy where the decoded images would not fit (the decoding
 * mode's rule): the size from the first image's header unless given, the
 * channels at most 3. */
static clt_status build(file_list *l, int classes, int channels, int size, int mode, clt_dataset **out)
{
    int w = size, h = size, c = channels ? channels : 3, first_c;
    if (!size && mode == CLT_DECODE_AUTO) {
        unsigned char *head = malloc(HEAD_BYTES);
        if (!head) return clt_fail(CLT_ERR_NO_MEMORY, "image header buffer");
        clt_status s = header_of(l->paths[0], head, &w, &h, &first_c);
        free(head);
        CLT_TRY(s);
    }
    int lazy = clt_image_lazy(mode, (uint64_t)l->n * (uint64_t)c * (uint64_t)h * (uint64_t)w);
    return lazy ? build_lazy(l, classes, channels, size, out) : build_eager(l, classes, channels, size, out);
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
    int mode;
    CLT_TRY(clt_image_decode_mode(&mode));
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
    if (s == CLT_OK) s = build(&l, n_classes, channels, size, mode, out);
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
