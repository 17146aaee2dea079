/*
 * Process creation and waiting: fork (copy-on-write), vfork, exit and
 * exit_group, getpid/getppid, wait4 and waitid with their options and
 * errors, reparenting of orphans.
 */
#include "abi.h"

#include <sys/resource.h>

static int cow_value = 1;
static volatile int vfork_value;

static int child_exit(void *arg)
{
	return (int)(long)arg;
}

/* Its write end, which the blocked child must not hold itself. */
static int pipe_w = -1;

static int block_on_pipe(void *arg)
{
	int fd = (int)(long)arg;
	char c;
	close(pipe_w);
	return read(fd, &c, 1) == 0 ? 0 : 1;
}

int main(void)
{
	abi_init();
	pid_t me = getpid();

	section("fork");
	int rel[2];
	SETUP(pipe(rel));
	pid_t pid = fork();
	if (pid == 0) {
		/* Relations only the child can see, sent as one byte of bits. */
		cow_value = 2;
		char bits = (getppid() == me) | (getpid() != me) << 1 | (cow_value == 2) << 2;
		write(rel[1], &bits, 1);
		_exit(7);
	}
	EXPECT_TRUE("fork returns a pid in the parent", pid > 0);
	char bits = 0;
	read(rel[0], &bits, 1);
	EXPECT_TRUE("child's getppid is the parent", bits & 1);
	EXPECT_TRUE("child's getpid differs", bits & 2);
	EXPECT_TRUE("child sees its own write", bits & 4);
	int st;
	struct rusage ru;
	EXPECT_TRUE("wait4 returns the child's pid", wait4(pid, &st, 0, &ru) == pid);
	EXPECT_STATUS("child status", st, "exited 7");
	EXPECT_EQ("parent's copy unchanged (copy-on-write)", cow_value, 1);
	EXPECT_TRUE("rusage times are not negative", ru.ru_utime.tv_sec >= 0 && ru.ru_stime.tv_usec >= 0);
	EXPECT_TRUE("getpid is stable", getpid() == me);

	section("exit status");
	EXPECT_STATUS("exit(259)", in_child(child_exit, (void *)259), "exited 3");
	EXPECT_STATUS("exit(-1)", in_child(child_exit, (void *)-1L), "exited 255");
	pid = fork();
	if (pid == 0)
		syscall(SYS_exit, 5);
	EXPECT_STATUS("SYS_exit of the only thread", wait_status(pid), "exited 5");
	pid = fork();
	if (pid == 0)
		syscall(SYS_exit_group, 6);
	EXPECT_STATUS("SYS_exit_group", wait_status(pid), "exited 6");

	section("wait4");
	EXPECT_ERR("wait4 without children", wait4(-1, &st, 0, NULL), ECHILD);
	EXPECT_ERR("wait4 WNOHANG without children", wait4(-1, &st, WNOHANG, NULL), ECHILD);
	EXPECT_ERR("wait4 for a pid that is not a child", wait4(1, &st, 0, NULL), ECHILD);
	int p[2];
	SETUP(pipe(p));
	pipe_w = p[1];
	pid = spawn_fn(block_on_pipe, (void *)(long)p[0]);
	close(p[0]);
	EXPECT_EQ("wait4 WNOHANG while the child runs", wait4(pid, &st, WNOHANG, NULL), 0);
	EXPECT_ERR("wait4 with WEXITED (a waitid flag)", wait4(pid, &st, WEXITED, NULL), EINVAL);
	EXPECT_ERR("wait4 with unknown options", wait4(pid, &st, 0x10000, NULL), EINVAL);
	close(p[1]);
	EXPECT_TRUE("wait4(-1) reaps it", wait4(-1, &st, 0, NULL) == pid);
	EXPECT_STATUS("status", st, "exited 0");
	pid = spawn_fn(child_exit, (void *)3);
	/* The child is reaped even though its status cannot be stored. */
	EXPECT_ERR("wait4 to a bad status pointer", syscall(SYS_wait4, pid, BAD_PTR, 0, NULL), EFAULT);
	EXPECT_ERR("then the child is gone", wait4(pid, &st, 0, NULL), ECHILD);
	pid = spawn_fn(child_exit, (void *)3);
	EXPECT_TRUE("wait4 with a NULL status", wait4(pid, NULL, 0, NULL) == pid);
	pid_t a = spawn_fn(child_exit, (void *)1), b = spawn_fn(child_exit, (void *)2);
	int sum = 0, n = 0;
	pid_t w;
	while ((w = wait4(-1, &st, 0, NULL)) > 0) {
		n++;
		sum += WEXITSTATUS(st) + (w == a ? 10 : w == b ? 20 : 100);
	}
	EXPECT_EQ("wait4(-1) twice reaps both (sum of codes and pids)", sum, 33);
	EXPECT_EQ("reaped", n, 2);

	section("waitid");
	siginfo_t si;
	pid = spawn_fn(child_exit, (void *)9);
	memset(&si, 0xff, sizeof si);
	EXPECT_OK("waitid P_PID WEXITED|WNOWAIT", waitid(P_PID, pid, &si, WEXITED | WNOWAIT));
	EXPECT_TRUE("si_pid is the child", si.si_pid == pid);
	memset(&si, 0xff, sizeof si);
	EXPECT_OK("waitid P_PID WEXITED again", waitid(P_PID, pid, &si, WEXITED));
	EXPECT_STR("si_signo", signame(si.si_signo), "SIGCHLD");
	EXPECT_EQ("si_code (CLD_EXITED)", si.si_code, CLD_EXITED);
	EXPECT_EQ("si_status", si.si_status, 9);
	EXPECT_EQ("si_uid", si.si_uid, 0);
	EXPECT_EQ("si_errno", si.si_errno, 0);
	EXPECT_ERR("waitid: it is gone", waitid(P_PID, pid, &si, WEXITED), ECHILD);
	EXPECT_ERR("waitid without WEXITED/WSTOPPED/WCONTINUED", waitid(P_ALL, 0, &si, 0), EINVAL);
	EXPECT_ERR("waitid with a bad idtype", syscall(SYS_waitid, 42, 0, &si, WEXITED, NULL), EINVAL);
	SETUP(pipe(p));
	pipe_w = p[1];
	pid = spawn_fn(block_on_pipe, (void *)(long)p[0]);
	close(p[0]);
	memset(&si, 0xff, sizeof si);
	EXPECT_EQ("waitid WNOHANG while the child runs", waitid(P_ALL, 0, &si, WEXITED | WNOHANG), 0);
	/* Nothing to report: Linux stores zeros rather than leaving the buffer. */
	EXPECT_EQ("si_pid is zeroed", si.si_pid, 0);
	EXPECT_EQ("si_signo is zeroed", si.si_signo, 0);
	kill(pid, SIGKILL);
	EXPECT_OK("waitid P_PGID of our group", waitid(P_PGID, getpgrp(), &si, WEXITED));
	EXPECT_EQ("si_code (CLD_KILLED)", si.si_code, CLD_KILLED);
	EXPECT_STR("si_status", signame(si.si_status), "SIGKILL");
	close(p[1]);
	/* Linux stores the (empty) siginfo even when it reports ECHILD. */
	EXPECT_ERR("waitid to a bad siginfo pointer without children",
		   syscall(SYS_waitid, P_ALL, 0, BAD_PTR, WEXITED, NULL), EFAULT);
	pid = spawn_fn(child_exit, (void *)4);
	EXPECT_ERR("waitid to a bad siginfo pointer with a zombie",
		   syscall(SYS_waitid, P_PID, pid, BAD_PTR, WEXITED, NULL), EFAULT);
	EXPECT_ERR("the zombie was reaped anyway", waitid(P_PID, pid, &si, WEXITED), ECHILD);

	section("vfork");
	vfork_value = 0;
	pid = vfork();
	if (pid == 0) {
		/* The parent is suspended and shares this memory until we exit. */
		vfork_value = 42;
		_exit(3);
	}
	EXPECT_EQ("parent sees the vfork child's write", vfork_value, 42);
	EXPECT_STATUS("vfork child", wait_status(pid), "exited 3");
	pid = vfork();
	if (pid == 0) {
		char *argv[] = { "true", NULL };
		execve("/nonexistent/program", argv, argv + 1);
		_exit(44);
	}
	EXPECT_STATUS("vfork child after a failed execve", wait_status(pid), "exited 44");

	section("orphans");
	int go[2], back[2];
	SETUP(pipe(go));
	SETUP(pipe(back));
	pid = fork();
	if (pid == 0) {
		pid_t g = fork();
		if (g == 0) {
			char c;
			read(go[0], &c, 1); /* until the parent has reaped our parent */
			char r = getppid() == 1;
			write(back[1], &r, 1);
			_exit(0);
		}
		_exit(0);
	}
	wait_status(pid);
	write(go[1], "x", 1);
	char r = 0;
	read(back[0], &r, 1);
	EXPECT_TRUE("an orphan's parent becomes pid 1", r == 1);

	section("exit closes descriptors");
	SETUP(pipe(p));
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		_exit(0);
	}
	close(p[1]);
	char c;
	EXPECT_EQ("read after the only writer exited: EOF", read(p[0], &c, 1), 0);
	wait_status(pid);
	close(p[0]);
	return abi_done();
}
