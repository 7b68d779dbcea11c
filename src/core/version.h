/* version.h - shootout's version, reported by `shootout version`, in JSON
 * results and in the broker's $SYS tree. */
#ifndef SHOOTOUT_VERSION_H
#define SHOOTOUT_VERSION_H

#define SHOOTOUT_VERSION "0.1.0"

#endif
