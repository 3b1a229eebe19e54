/* A test's own directory under $TMPDIR (or /tmp), and its removal with the
 * plain files in it (a cache directory: program binaries, tuning files). */
#ifndef CLT_TESTS_COMMON_TMPDIR_H
#define CLT_TESTS_COMMON_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* dir (cap bytes) = a new directory named after tag; 0 on failure (reported). */
static inline int tmpdir_make(char *dir, size_t cap, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    if (mkdtemp(dir)) return 1;
    perror("mkdtemp");
    return 0;
}

/* Removes the files in dir and dir itself: 1 when it is gone. */
static inline int tmpdir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4200];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && snprintf(path, sizeof path, "%s/%s", dir, e->d_name) > 0) unlink(path);
    if (d) closedir(d);
    return rmdir(dir) == 0;
}

#endif
