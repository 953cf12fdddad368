/* SPDX-License-Identifier: MIT */
#include "basic/dynlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Under lib->lock, once: the outcome in lib->code and lib->msg. */
static int dynlib_open(struct dynlib *lib, const char *const sonames[],
		       const struct dynlib_symbol symbols[])
{
	char names[128] = "";
	const char *why = "no soname given";
	const char *soname = NULL;
	void *h = NULL;

	for (size_t i = 0; sonames[i] && !h; i++) {
		h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			soname = sonames[i];
		else {
			why = dlerror();
			size_t k = strlen(names);
			snprintf(names + k, sizeof(names) - k, "%s%s", i ? " or " : "", sonames[i]);
		}
	}
	if (!h) {
		snprintf(lib->msg, sizeof(lib->msg), "%s (%s) cannot be loaded: %s",
			 lib->what ? lib->what : "a library", names, why ? why : "unknown error");
		return -ENOPKG;
	}
	for (size_t i = 0; symbols[i].name; i++) {
		*symbols[i].slot = dlsym(h, symbols[i].name);
		if (*symbols[i].slot)
			continue;
		snprintf(lib->msg, sizeof(lib->msg), "%s (%s) has no %s",
			 lib->what ? lib->what : "a library", soname, symbols[i].name);
		for (size_t j = 0; j <= i; j++)
			*symbols[j].slot = NULL;
		dlclose(h);
		return -ENOPKG;
	}
	if (lib->init) {
		struct error e = { 0 };
		int r = lib->init(&e);
		if (r < 0) {
			snprintf(lib->msg, sizeof(lib->msg), "%s (%s): %.160s",
				 lib->what ? lib->what : "a library", soname,
				 e.code ? e.msg : "its initialisation failed");
			/* Left open: a half-initialised library is not
			 * closed under what it may have started. */
			for (size_t j = 0; symbols[j].name; j++)
				*symbols[j].slot = NULL;
			return r;
		}
	}
	lib->handle = h;
	return 0;
}

int dynlib_load(struct dynlib *lib, const char *const sonames[],
		const struct dynlib_symbol symbols[], struct error *err)
{
	pthread_mutex_lock(&lib->lock);
	if (!lib->done) {
		lib->code = -dynlib_open(lib, sonames, symbols);
		lib->done = true;
	}
	int code = lib->code;
	pthread_mutex_unlock(&lib->lock);
	if (code)
		return error_set(err, code, "%s", lib->msg);
	return 0;
}
