/* The floor for a run that leaves a durable record: posix_spawn() the
 * command, wait, then one O_APPEND write of a ~1 KiB line to a file and one
 * fdatasync of it. `airlock run --sandbox=none -- true` is reported against
 * this (bench/durable.sh): its one durable write is the ledger's append.
 *   append_floor FILE CMD [ARG...]   (APPEND_FLOOR_BYTES: the line's size,
 *                                     default 1024) */
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	pid_t pid;
	int status;
	const char *bytes = getenv("APPEND_FLOOR_BYTES");
	size_t n = bytes ? (size_t)atol(bytes) : 1024;
	static char line[1 << 16];

	if (argc < 3 || n == 0 || n > sizeof(line) ||
	    posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ) != 0)
		return 127;
	waitpid(pid, &status, 0);
	memset(line, 'x', n - 1);
	line[n - 1] = '\n';
	int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, n) != (ssize_t)n || fdatasync(fd) < 0)
		return 125;
	close(fd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
