/* test_dir.h - emptying a scratch directory, for the unit tests and fuzz
 * targets that give a module a data directory of its own (plog). */
#ifndef SHOOTOUT_TEST_DIR_H
#define SHOOTOUT_TEST_DIR_H

#include <dirent.h>
#include <stdio.h>
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

#endif
