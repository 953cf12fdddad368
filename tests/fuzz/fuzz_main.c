/* SPDX-License-Identifier: MIT */
/* Replays a fuzz target's corpus when built without libFuzzer: every file in
 * the directories (or the files) given is fed to LLVMFuzzerTestOneInput.
 * Output is TAP, one test per file; a crash or failed property aborts. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path, size_t *n)
{
	char *data = NULL;
	size_t size;
	struct error err = { 0 };

	if (file_read_capped(AT_FDCWD, path, 16 << 20, &data, &size, &err) < 0) {
		printf("not ok %zu - %s: %s\n", ++*n, path, err.msg);
		return 1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)data, size);
	free(data);
	printf("ok %zu - %s\n", ++*n, path);
	return 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	size_t n = 0;
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && !S_ISDIR(st.st_mode)) {
			failed += replay_file(argv[i], &n);
			continue;
		}
		DIR *dir = opendir(argv[i]);
		if (!dir) {
			printf("not ok %zu - cannot open %s\n", ++n, argv[i]);
			failed++;
			continue;
		}
		char **names = NULL;
		size_t count = 0;
		struct dirent *de;
		while ((de = readdir(dir)))
			if (de->d_name[0] != '.') {
				names = realloc(names, (count + 1) * sizeof(char *));
				if (asprintf(&names[count++], "%s/%s", argv[i], de->d_name) < 0)
					abort();
			}
		closedir(dir);
		qsort(names, count, sizeof(char *), compare_names);
		for (size_t j = 0; j < count; j++) {
			failed += replay_file(names[j], &n);
			free(names[j]);
		}
		free(names);
	}
	printf("1..%zu\n# %zu passed, %d failed\n", n, n - (size_t)failed, failed);
	return failed ? 1 : 0;
}
