/*
 * Process groups and sessions: setpgid/getpgid/getpgrp, setsid/getsid and
 * their errors, signals and waits addressed to a group, and the SIGHUP +
 * SIGCONT a stopped process gets when its group becomes orphaned.
 * (abi_init made this program a session and group leader.)
 */
#include "abi.h"

static int wait_pipe(void *arg)
{
	int *p = arg;
	char c;
	close(p[1]);
	read(p[0], &c, 1);
	return 0;
}

static int child_groups(void *arg)
{
	pid_t parent_group = (pid_t)(long)arg;
	EXPECT_TRUE("a child starts in its parent's group", getpgrp() == parent_group);
	EXPECT_TRUE("and its session", getsid(0) == parent_group);
	EXPECT_OK("setpgid(0, 0): a group of its own", setpgid(0, 0));
	EXPECT_TRUE("getpgrp is now its pid", getpgrp() == getpid());
	EXPECT_OK("back into the parent's group", setpgid(0, parent_group));
	EXPECT_TRUE("getpgid(0) is the parent's group again", getpgid(0) == parent_group);
	EXPECT_TRUE("setsid returns the new session id, its pid", setsid() == getpid());
	EXPECT_TRUE("getsid(0)", getsid(0) == getpid());
	EXPECT_TRUE("getpgrp", getpgrp() == getpid());
	EXPECT_ERR("setsid again, now a group leader", setsid(), EPERM);
	EXPECT_ERR("setpgid into a group of another session", setpgid(0, parent_group), EPERM);
	EXPECT_ERR("setpgid of a session leader", setpgid(0, 0), EPERM);
	return 0;
}

static int exec_wait(void *arg)
{
	int *p = arg;
	close(p[1]);
	dup2(p[0], 0);
	char *argv[] = { "x", "wait-stdin", NULL };
	execve(self_exe(), argv, argv + 2);
	return 127;
}

static int orphan_pipe[2];

static void on_hup(int s)
{
	(void)s;
	write(orphan_pipe[1], "H", 1);
}

static int orphaned_group(void *arg)
{
	(void)arg;
	/* This process (the middle one) stays in the test's group. */
	pid_t d = fork();
	if (d == 0) {
		setpgid(0, 0);
		signal(SIGHUP, on_hup);
		raise(SIGSTOP);
		write(orphan_pipe[1], "C", 1);
		_exit(0);
	}
	int st;
	waitpid(d, &st, WUNTRACED);
	/* Exiting orphans d's group, which has a stopped member. */
	return WIFSTOPPED(st) ? 0 : 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1) { /* the role "wait-stdin" */
		char c;
		read(0, &c, 1);
		return 0;
	}
	abi_init();
	pid_t me = getpid();

	section("this process");
	EXPECT_TRUE("getsid(0) is our pid (a session leader)", getsid(0) == me);
	EXPECT_TRUE("getpgrp is our pid", getpgrp() == me);
	EXPECT_TRUE("getpgid(0) is getpgrp", getpgid(0) == me);
	EXPECT_ERR("setsid as a session leader", setsid(), EPERM);
	EXPECT_ERR("getpgid of no process", getpgid(0x7fffffff), ESRCH);
	EXPECT_ERR("getsid of no process", getsid(0x7fffffff), ESRCH);
	EXPECT_ERR("setpgid with a negative group", setpgid(0, -1), EINVAL);
	EXPECT_ERR("setpgid of a process not our child", setpgid(1, 1), ESRCH);

	section("a child's groups and sessions");
	EXPECT_STATUS("child", in_child(child_groups, (void *)(long)me), "exited 0");

	section("setpgid of a child");
	int p[2];
	SETUP(pipe(p));
	pid_t c = spawn_fn(wait_pipe, p);
	close(p[0]);
	EXPECT_OK("setpgid(child, child)", setpgid(c, c));
	EXPECT_TRUE("getpgid(child)", getpgid(c) == c);
	EXPECT_ERR("setpgid(child, group of no process)", setpgid(c, 0x7ffffff0), EPERM);
	EXPECT_OK("setpgid(child, our group)", setpgid(c, me));
	EXPECT_TRUE("getsid(child) is our session", getsid(c) == me);
	close(p[1]);
	wait_status(c);
	int ready[2];
	SETUP(pipe(p));
	SETUP(pipe2(ready, O_CLOEXEC));
	c = fork();
	if (c == 0) {
		close(ready[0]);
		exec_wait(p);
	}
	close(ready[1]);
	char ch;
	read(ready[0], &ch, 1); /* EOF once the child's exec closed its end */
	close(ready[0]);
	EXPECT_ERR("setpgid of a child after its execve", setpgid(c, c), EACCES);
	close(p[0]);
	close(p[1]);
	EXPECT_STATUS("child", wait_status(c), "exited 0");

	section("signals and waits by group");
	SETUP(pipe(p));
	pid_t a = spawn_fn(wait_pipe, p);
	setpgid(a, a);
	pid_t b = spawn_fn(wait_pipe, p);
	setpgid(b, a);
	pid_t same = spawn_fn(wait_pipe, p);
	close(p[0]);
	int st;
	EXPECT_EQ("waitpid(-group) WNOHANG while they run", waitpid(-a, &st, WNOHANG), 0);
	EXPECT_OK("kill(-group, SIGTERM)", kill(-a, SIGTERM));
	int killed = 0;
	for (int i = 0; i < 2; i++) {
		pid_t w = waitpid(-a, &st, 0);
		killed += (w == a || w == b) && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM;
	}
	EXPECT_EQ("members killed by SIGTERM", killed, 2);
	EXPECT_ERR("waitpid(-group) once the group is empty", waitpid(-a, &st, 0), ECHILD);
	EXPECT_ERR("kill of an empty group", kill(-a, 0), ESRCH);
	/* kill(0): our own group, ourselves included. */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	EXPECT_OK("kill(0, SIGUSR1)", kill(0, SIGUSR1));
	EXPECT_TRUE("waitpid(0) waits for our group", waitpid(0, &st, 0) == same);
	EXPECT_STATUS("the child in our group", st, "killed by SIGUSR1");
	sigpending(&set);
	EXPECT_TRUE("and the signal is pending here", sigismember(&set, SIGUSR1));
	signal(SIGUSR1, SIG_IGN);
	sigprocmask(SIG_SETMASK, &old, NULL);
	signal(SIGUSR1, SIG_DFL);
	close(p[1]);
	EXPECT_ERR("kill of no process", kill(0x7fffffff, 0), ESRCH);
	EXPECT_ERR("kill with a bad signal", kill(me, 65), EINVAL);

	section("orphaned process group");
	SETUP(pipe(orphan_pipe));
	EXPECT_STATUS("the middle process", in_child(orphaned_group, NULL), "exited 0");
	close(orphan_pipe[1]);
	char got[4] = { 0 };
	for (int i = 0; i < 3 && read(orphan_pipe[0], got + i, 1) == 1; i++)
		;
	EXPECT_STR("the stopped orphan got SIGHUP, then SIGCONT", got, "HC");
	return abi_done();
}
