/* SPDX-License-Identifier: MIT */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "basic/error.h"

/* A library opened with dlopen() the first time it is needed, so that a
 * process that never uses it never relocates it (and what it links). One
 * `static struct dynlib` per library; dynlib_load() opens it once,
 * RTLD_NOW | RTLD_LOCAL, trying the sonames in order, fills every symbol's
 * slot, and remembers the outcome: later calls return it without retrying.
 * The handle stays open for the life of the process. */

struct dynlib_symbol {
	const char *name;
	void **slot; /* e.g. (void **)&lib.fn; POSIX lets void * hold a function */
};

struct dynlib {
	const char *what; /* "libcurl", "the PostgreSQL client library": messages */
	/* Optional, run once after every symbol is found (e.g. a library's
	 * global init); its failure is the load's. */
	int (*init)(struct error *err);
	/* private */
	pthread_mutex_t lock;
	bool done;
	void *handle;
	int code;
	char msg[256];
};

#define DYNLIB_INIT(what_, init_)                                                   \
	{                                                                           \
		.what = (what_), .init = (init_), .lock = PTHREAD_MUTEX_INITIALIZER \
	}

/* 0 when the library and all symbols (the table ends with { NULL }) are
 * there; else -ENOPKG (or init's error) with one line naming the library
 * and the soname or symbol missing, and every slot NULL. Thread-safe. */
int dynlib_load(struct dynlib *lib, const char *const sonames[],
		const struct dynlib_symbol symbols[], struct error *err);
