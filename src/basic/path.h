/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

/* Lexical checks on absolute, normalized paths (no "//", "." or ".."). */

/* path equals dir or lies below it; every path is under "/". */
bool path_is_under(const char *path, const char *dir);
/* dir + "/" + name, or NULL when out of memory. */
char *path_join(const char *dir, const char *name);
/* The directory part of an absolute path: "/a/b" -> "/a", "/a" -> "/". */
char *path_dirname(const char *path);
