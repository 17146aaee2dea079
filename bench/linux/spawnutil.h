/*
 * The three ways a Linux program starts another one, each ending with the
 * parent reaping the child: the operation Tender's process creation and
 * deletion is compared against.
 */
#ifndef TESSERA_SPAWNUTIL_H
#define TESSERA_SPAWNUTIL_H

#include "bench.h"
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

static inline void reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		errno = ECHILD;
		die("child failed");
	}
}

static inline void fork_exec_wait(const char *path, char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		execve(path, argv, environ);
		_exit(127);
	}
	reap(pid);
}

static inline void vfork_exec_wait(const char *path, char *const argv[])
{
	pid_t pid = vfork();
	if (pid < 0)
		die("vfork");
	if (pid == 0) {
		execve(path, argv, environ);
		_exit(127);
	}
	reap(pid);
}

static inline void posix_spawn_wait(const char *path, char *const argv[])
{
	pid_t pid;
	int err = posix_spawn(&pid, path, NULL, NULL, argv, environ);
	if (err != 0) {
		errno = err;
		die("posix_spawn");
	}
	reap(pid);
}

#endif
