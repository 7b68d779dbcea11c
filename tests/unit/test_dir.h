/* test_dir.h - scratch directories and their files, for the unit tests and
 * fuzz targets that give a module a data directory of its own (plog). */
#ifndef SHOOTOUT_TEST_DIR_H
#define SHOOTOUT_TEST_DIR_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Deletes every file in dir (not subdirectories). 0, or -1 if dir cannot
 * be read. */
static inline int empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    return 0;
}

/* The whole file at path, malloc'ed, its length in *len; NULL if it
 * cannot be read. */
static inline uint8_t *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = n >= 0 ? malloc(n ? (size_t)n : 1) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = p ? (size_t)n : 0;
    return p;
}

/* Writes len bytes to path, replacing it. 0 or -1. */
static inline int write_whole(const char *path, const uint8_t *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = fwrite(p, 1, len, f) == len ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

#endif
