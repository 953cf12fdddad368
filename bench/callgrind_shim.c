/* Profiling aid, never linked into airlock: valgrind 3.19 does not know
 * openat2(2) (ENOSYS) and refuses RLIMIT changes, so under callgrind a run
 * fails (receipts/N.json cannot be committed, the child stops at
 * 'rlimits') and the profile is of the failure path. Preloaded, this turns
 * openat2 into openat (its resolve flags dropped) and lets prlimit64 of
 * the process itself succeed without effect, so the run takes its normal
 * path. Adds ~15 K instructions to the start.
 *   cc -O2 -shared -fPIC -o callgrind_shim.so bench/callgrind_shim.c -ldl
 *   LD_PRELOAD=$PWD/callgrind_shim.so valgrind --tool=callgrind airlock run ... */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

long syscall(long n, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_openat2) {
		const struct open_how *how = (const struct open_how *)a[2];
		return openat((int)a[0], (const char *)a[1], (int)how->flags, (mode_t)how->mode);
	}
	if (n == SYS_prlimit64 && a[0] == 0 && a[3] == 0)
		return 0;
	static long (*real)(long, ...);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
