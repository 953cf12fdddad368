/* SPDX-License-Identifier: MIT */
#pragma once

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Acquire and arm cleanup on one line:
 *	cleanup_close int fd = open(...);
 * Hand ownership over with TAKE_PTR()/TAKE_FD(). A function uses these or
 * `goto out_*` undo labels, never both. */
#define cleanup_with(fn) __attribute__((cleanup(fn)))
#define cleanup_free	 cleanup_with(freep)
#define cleanup_close	 cleanup_with(closep)
#define cleanup_fclose	 cleanup_with(fclosep)
#define cleanup_strv	 cleanup_with(strv_freep)
#define cleanup_closedir cleanup_with(closedirp)

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void *take_ptr_(void *pp)
{
	void **p = pp, *v = *p;

	*p = NULL;
	return v;
}
#define TAKE_PTR(p) (0 ? (p) : take_ptr_(&(p)))

static inline int take_fd_(int *fd)
{
	int v = *fd;

	*fd = -1;
	return v;
}
#define TAKE_FD(fd) take_fd_(&(fd))

/* Declares `static inline void fn##p(type **p)` calling fn(*p); fn accepts NULL.
 * NOLINTBEGIN(bugprone-macro-parentheses): type is a type, not an expression. */
#define DEFINE_CLEANUP_FUNC(type, fn)      \
	static inline void fn##p(type **p) \
	{                                  \
		fn(*p);                    \
	}
/* NOLINTEND(bugprone-macro-parentheses) */
