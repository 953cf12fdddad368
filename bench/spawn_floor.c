/* The floor for any wrapper: posix_spawn() the command and wait. airlock's
 * overhead is reported against bare `true` and against this. */
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv)
{
	pid_t pid;
	int status;

	if (argc < 2 || posix_spawnp(&pid, argv[1], NULL, NULL, argv + 1, environ) != 0)
		return 127;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
