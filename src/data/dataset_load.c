/* Finding a dataset by name or directory: every place looked at is
 * recorded, so a missing dataset's message says where it was sought and how
 * to get it. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/config.h"
#include "core/error.h"
#include "data/dataset.h"
#include "data/cifar.h"

#define PATH_CAP 4096

typedef struct named_dataset {
    const char *name;
    const char *system_dir;
    const char *install; /* how to get it, for the not-found message */
} named_dataset;

static const named_dataset NAMED[] = {
    {"fashion-mnist", "/usr/share/datasets/fashion-mnist",
     "install it with `apt-get install dataset-fashion-mnist` (or run tools/setup)"},
    {"mnist", "/usr/share/datasets/mnist",
     "MNIST has no Debian package: put its four files in /usr/share/datasets/mnist"},
};

static const char *const FILES[2][2] = {
    {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
    {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"},
};

/* The list of places looked at, for the message. */
typedef struct search_log {
    char text[3072];
    size_t len;
} search_log;

static void log_add(search_log *log, const char *fmt, ...) CLT_PRINTF(2, 3);
static void log_add(search_log *log, const char *fmt, ...)
{
    if (log->len >= sizeof log->text - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(log->text + log->len, sizeof log->text - log->len, fmt, ap);
    va_end(ap);
    if (w > 0) log->len += (size_t)w;
    if (log->len > sizeof log->text - 1) log->len = sizeof log->text - 1;
}

/* NULL when path is a directory, else why not. */
static const char *dir_problem(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return errno == ENOENT ? "does not exist" : strerror(errno);
    return S_ISDIR(st.st_mode) ? NULL : "not a directory";
}

/* Whether dir/name exists, as a regular file (want_regular) or as anything. */
static int exists(const char *dir, const char *name, int want_regular, char *out)
{
    struct stat st;
    return snprintf(out, PATH_CAP, "%s/%s", dir, name) < PATH_CAP && stat(out, &st) == 0 &&
           (!want_regular || S_ISREG(st.st_mode));
}

/* dir/base, else dir/base.gz, as a regular file; else whichever exists as
 * something else (a FIFO, say), for the reader to refuse by its kind rather
 * than call it missing; 0 when neither exists. */
static int find_file(const char *dir, const char *base, char *out)
{
    char gz[PATH_CAP];
    snprintf(gz, sizeof gz, "%s.gz", base);
    for (int regular = 1; regular >= 0; regular--)
        if (exists(dir, base, regular, out) || exists(dir, gz, regular, out)) return 1;
    return 0;
}

/* 1 when dir holds both files of the split (paths in images/labels);
 * otherwise logs why not. */
static int try_dir(const char *dir, const char *why, clt_subset split, char *images, char *labels,
                   search_log *log)
{
    const char *const *names = FILES[split];
    log_add(log, "\n  %s%s%s: ", dir, why ? " " : "", why ? why : "");
    const char *problem = dir_problem(dir);
    if (problem) {
        log_add(log, "%s", problem);
        return 0;
    }
    int have_images = find_file(dir, names[0], images);
    int have_labels = find_file(dir, names[1], labels);
    if (have_images && have_labels) return 1;
    if (!have_images && !have_labels)
        log_add(log, "no %s[.gz] and no %s[.gz]", names[0], names[1]);
    else
        log_add(log, "no %s[.gz]", have_images ? names[1] : names[0]);
    return 0;
}

static clt_status not_found(const char *what, const char *note, clt_subset split,
                            const search_log *log, const char *install)
{
    return clt_fail(CLT_ERR_NOT_FOUND,
                    "%s (%s split) not found%s; looked in:%s\n"
                    "To fix: %s%sset CLTRAIN_DATA to, or pass, a directory holding "
                    "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
                    "t10k-images-idx3-ubyte[.gz] and t10k-labels-idx1-ubyte[.gz] (or CIFAR-10's or "
                    "CIFAR-100's binary files).",
                    what, split == CLT_SUBSET_TRAIN ? "train" : "test", note, log->text,
                    install ? install : "", install ? "; or " : "");
}

static clt_status load_named(const named_dataset *nd, clt_subset split, int64_t limit,
                             clt_dataset **out)
{
    char images[PATH_CAP], labels[PATH_CAP], sub[PATH_CAP];
    search_log log = {{0}, 0};
    const char *env = getenv("CLTRAIN_DATA");
    if (env && env[0]) {
        const char *problem = dir_problem(env);
        if (!problem) {
            char why[64];
            snprintf(why, sizeof why, "($CLTRAIN_DATA/%s)", nd->name);
            if (snprintf(sub, sizeof sub, "%s/%s", env, nd->name) < PATH_CAP &&
                try_dir(sub, why, split, images, labels, &log))
                return clt_dataset_from_idx(images, labels, 10, limit, out);
            if (try_dir(env, "($CLTRAIN_DATA)", split, images, labels, &log))
                return clt_dataset_from_idx(images, labels, 10, limit, out);
        } else { /* a typo must not pass for the system's copy */
            return clt_fail(CLT_ERR_NOT_FOUND, "CLTRAIN_DATA=%s: %s: unset it, or set it to the directory holding "
                            "the datasets", env, problem);
        }
    } else {
        log_add(&log, "\n  $CLTRAIN_DATA: not set");
    }
    if (try_dir(nd->system_dir, NULL, split, images, labels, &log))
        return clt_dataset_from_idx(images, labels, 10, limit, out);
    char what[64];
    snprintf(what, sizeof what, "dataset %s", nd->name);
    return not_found(what, "", split, &log, nd->install);
}

void clt_load_options_default(clt_load_options *opt)
{
    if (opt) memset(opt, 0, sizeof *opt);
}

/* A directory of NumPy files: train.npz and test.npz, or the .npy
 * quartet. 0 when dir holds neither. */
static int numpy_dir(const char *dir, clt_subset split, const clt_load_options *opt, clt_dataset **out,
                     clt_status *s)
{
    char path[PATH_CAP], labels[PATH_CAP];
    const char *which = split == CLT_SUBSET_TRAIN ? "train" : "test";
    if (exists(dir, "train.npz", 1, path)) {
        char name[16];
        snprintf(name, sizeof name, "%s.npz", which);
        /* no test.npz: no test split, unless the folder is given as one (any_split) */
        if (exists(dir, name, 1, path) || (opt->any_split && exists(dir, "train.npz", 1, path)))
            *s = clt_npz_dataset(path, split, opt->layout, opt->limit, 1, out);
        else
            *s = CLT_OK;
        return 1;
    }
    if (exists(dir, "train_images.npy", 1, path)) {
        char im[32], lb[32];
        snprintf(im, sizeof im, "%s_images.npy", which);
        snprintf(lb, sizeof lb, "%s_labels.npy", which);
        int have = exists(dir, im, 1, path), have_labels = exists(dir, lb, 1, labels);
        if (!have && !have_labels && opt->any_split) { /* a folder of one split given as the test set */
            have = exists(dir, "train_images.npy", 1, path);
            have_labels = exists(dir, "train_labels.npy", 1, labels);
            snprintf(im, sizeof im, "train_images.npy");
            snprintf(lb, sizeof lb, "train_labels.npy");
        }
        *s = have && have_labels ? clt_dataset_from_npy(path, labels, opt->layout, opt->limit, out)
             : have || have_labels ? clt_fail(CLT_ERR_NOT_FOUND, "%s: has %s but not %s", dir, have ? im : lb,
                                              have ? lb : im)
                                   : CLT_OK;
        return 1;
    }
    return 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether a subfolder of dir (depth 0), or dir itself below that, holds a
 * .png, .jpg or .jpeg file, looking three levels down at most. */
static int holds_image(const char *dir, int depth)
{
    DIR *d = depth < 4 ? opendir(dir) : NULL;
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    char path[PATH_CAP];
    while (!found && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !exists(dir, e->d_name, 0, path)) continue;
        found = is_dir(path) ? holds_image(path, depth + 1) : depth > 0 && clt_image_named(e->d_name);
    }
    closedir(d);
    return found;
}

/* A folder of class folders of images, or one with train and test (or
 * val) such folders. 0 when dir has no subfolder. */
static int image_dir(const char *dir, clt_subset split, const clt_load_options *opt, clt_dataset **out,
                     clt_status *s)
{
    char train[PATH_CAP], test[PATH_CAP];
    const char *root;
    if (exists(dir, "train", 0, train) && is_dir(train)) {
        int has_test = (exists(dir, "test", 0, test) && is_dir(test)) || (exists(dir, "val", 0, test) && is_dir(test));
        /* the test split; a folder of train alone given as the test set (any_split): that */
        root = split == CLT_SUBSET_TRAIN ? train : has_test ? test : opt->any_split ? train : NULL;
    } else if (holds_image(dir, 0)) {
        root = split == CLT_SUBSET_TRAIN || opt->any_split ? dir : NULL;
    } else {
        return 0;
    }
    *s = root ? clt_image_folder_dataset(root, opt->channels, opt->image_size, opt->limit, out) : CLT_OK;
    return 1;
}


clt_status clt_dataset_load_with(const char *name_or_dir, clt_subset split, const clt_load_options *opt,
                                 clt_dataset **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_load: out is NULL");
    *out = NULL;
    clt_load_options defaults;
    clt_load_options_default(&defaults);
    if (!opt) opt = &defaults;
    CLT_TRY(clt_config_check_reserved(opt->reserved, sizeof opt->reserved, "clt_dataset_load_with"));
    if (split != CLT_SUBSET_TRAIN && split != CLT_SUBSET_TEST)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_load: invalid split %d", (int)split);
    int64_t limit = opt->limit;
    if (limit < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_load: limit must be >= 0 (got %lld)",
                        (long long)limit);
    const char *dir = name_or_dir, *env = getenv("CLTRAIN_DATA");
    int from_env = !dir && env && env[0];
    if (!dir) dir = from_env ? env : NAMED[0].name;
    for (size_t i = 0; i < sizeof NAMED / sizeof NAMED[0]; i++)
        if (strcmp(dir, NAMED[i].name) == 0) return load_named(&NAMED[i], split, limit, out);
    if (strlen(dir) >= PATH_CAP - 64)
        return clt_fail(CLT_ERR_INVALID_ARG, "dataset directory path too long (%zu bytes)", strlen(dir));
    size_t len = strlen(dir);
    if (len > 4 && !strcmp(dir + len - 4, ".npz")) { /* an .npz file given as the data */
        struct stat st;
        if (stat(dir, &st) != 0 || S_ISDIR(st.st_mode)) return clt_fail(CLT_ERR_NOT_FOUND, "%s: no such file", dir);
        return clt_npz_dataset(dir, split, opt->layout, limit, opt->any_split, out);
    }
    if (clt_cifar_kind(dir)) return clt_dataset_from_cifar(dir, split, !opt->coarse, limit, out);
    clt_status s;
    if (numpy_dir(dir, split, opt, out, &s)) return s;
    char images[PATH_CAP], labels[PATH_CAP];
    search_log log = {{0}, 0};
    if (try_dir(dir, NULL, split, images, labels, &log))
        return clt_dataset_from_idx(images, labels, 10, limit, out);
    if (image_dir(dir, split, opt, out, &s)) return s;
    char what[PATH_CAP + 64];
    snprintf(what, sizeof what, "dataset directory %s%s", dir, from_env ? " (from $CLTRAIN_DATA)" : "");
    return not_found(what, from_env ? "" : " (and not a dataset name: fashion-mnist, mnist)", split, &log,
                     "for Fashion-MNIST, `apt-get install dataset-fashion-mnist` (or run "
                     "tools/setup) and load \"fashion-mnist\"");
}

clt_status clt_dataset_load(const char *name_or_dir, clt_subset split, int64_t limit, clt_dataset **out)
{
    clt_load_options opt;
    clt_load_options_default(&opt);
    opt.limit = limit;
    CLT_TRY(clt_dataset_load_with(name_or_dir, split, &opt, out));
    if (!*out)
        return clt_fail(CLT_ERR_NOT_FOUND, "%s holds no test split (clt_dataset_load_with says so with a NULL "
                        "dataset)", name_or_dir ? name_or_dir : "the data");
    return CLT_OK;
}
