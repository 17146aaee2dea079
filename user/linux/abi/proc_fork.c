/*
 * Process creation and waiting: fork (copy-on-write), vfork, exit and
 * exit_group, getpid/getppid, wait4 and waitid with their options and
 * errors, reparenting of orphans: getppid in threads, after execve, of a
 * CLONE_PARENT child, and of an orphan, whose new parent (init, or a
 * PR_SET_CHILD_SUBREAPER ancestor) shows before the wait for its old one
 * returns and before the parent-death signal comes, racing or not.
 */
#include "abi.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

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


/* "name: what", for a check's name. */
static const char *msg_of(char *buf, size_t size, const char *name, const char *what)
{
	snprintf(buf, size, "%s: %s", name, what);
	return buf;
}

static long ppid(void)
{
	return syscall(SYS_getppid);
}

/* getppid in the handler of the parent-death signal (0: not come yet). */
static volatile long pdeath_ppid;

static void on_pdeath(int sig)
{
	(void)sig;
	pdeath_ppid = ppid();
}

/* A second thread's getppid, made once it reads a byte from thread_go. */
static int thread_go[2];
static volatile long thread_ppid;

static void *thread_getppid(void *arg)
{
	(void)arg;
	char c;
	read(thread_go[0], &c, 1);
	thread_ppid = ppid();
	return NULL;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * This program again in role "ppid": it writes to descriptor fd one byte,
 * bit 0 its first getppid is `want`, bit 1 its second is too.
 */
static void exec_ppid_check(int fd, long want)
{
	char f[16], w[24];
	snprintf(f, sizeof f, "%d", fd);
	snprintf(w, sizeof w, "%ld", want);
	char *argv[] = { "proc_fork", "ppid", f, w, NULL };
	char *envp[] = { NULL };
	execve(self_exe(), argv, envp);
}

/* Bits an orphan sends (orphan_round). */
enum {
	OLD_PARENT = 1,   /* getppid was its parent before that ended */
	NEW_PARENT = 2,   /* then the new parent: at once after the wait, or the first change seen */
	STAYS = 4,        /* and a thousand times more */
	PDEATH = 8,       /* the parent-death signal's handler saw the new parent */
	THREAD = 16,      /* so did a thread made before the parent ended */
	ALL_BITS = 31,
};

/*
 * The orphan: reads its parent (the kernel may answer from then on), tells
 * the parent it may end, then looks for `reaper` as its parent: after the
 * test's wait for the old parent returned (a byte on `go`), or (`race`)
 * calling getppid in a loop while the parent ends. Sends its bits on
 * `back`, then runs this program again, whose byte follows.
 */
static void orphan(long parent, long reaper, int race, int ready, int go, int back)
{
	char bits = ppid() == parent ? OLD_PARENT : 0;
	signal(SIGUSR1, on_pdeath);
	prctl(PR_SET_PDEATHSIG, SIGUSR1);
	SETUP(pipe(thread_go));
	pthread_t t;
	if (pthread_create(&t, NULL, thread_getppid, NULL) != 0)
		_exit(3);
	write(ready, "x", 1);
	uint64_t deadline = now_ms() + 20000;
	long v = parent;
	if (race) {
		for (unsigned long n = 0; (v = ppid()) == parent; n++)
			if (n % 256 == 0 && now_ms() > deadline)
				break;
	} else {
		char c;
		read(go, &c, 1);
		v = ppid();
	}
	bits |= v == reaper ? NEW_PARENT : 0;
	int same = 1;
	for (int i = 0; i < 1000; i++)
		same &= ppid() == reaper;
	bits |= same ? STAYS : 0;
	while (pdeath_ppid == 0 && now_ms() < deadline)
		usleep(1000);
	bits |= pdeath_ppid == reaper ? PDEATH : 0;
	write(thread_go[1], "x", 1);
	pthread_join(t, NULL);
	bits |= thread_ppid == reaper ? THREAD : 0;
	write(back, &bits, 1);
	exec_ppid_check(back, reaper);
	_exit(4);
}

/*
 * A child of the test forks the orphan and ends once the orphan has read
 * its parent; the test waits for it, then tells the orphan (whose new
 * parent is the test itself if `subreaper`, else init). Checks what the
 * orphan saw.
 */
static void orphan_round(const char *name, int subreaper, int race)
{
	long reaper = subreaper ? getpid() : 1;
	int ready[2], go[2], back[2];
	SETUP(pipe(ready));
	SETUP(pipe(go));
	SETUP(pipe(back));
	if (subreaper)
		SETUP(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
	pid_t pid = fork();
	if (pid == 0) {
		long parent = getpid();
		pid_t g = fork();
		if (g == 0)
			orphan(parent, reaper, race, ready[1], go[0], back[1]);
		char c;
		close(ready[1]);
		read(ready[0], &c, 1);
		_exit(g > 0 ? 0 : 1);
	}
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(back[1]);
	char msg[128];
	EXPECT_STATUS(msg_of(msg, sizeof msg, name, "the parent"), wait_status(pid), "exited 0");
	/* Racing, the orphan reads no go and may have ended already: a
	   write would then raise SIGPIPE. */
	if (!race)
		write(go[1], "x", 1);
	char bits = 0, exec_bits = 0;
	read(back[0], &bits, 1);
	read(back[0], &exec_bits, 1);
	EXPECT_EQ(msg_of(msg, sizeof msg, name, "what the orphan saw (bits)"), bits, ALL_BITS);
	EXPECT_EQ(msg_of(msg, sizeof msg, name, "after its execve, twice (bits)"), exec_bits, 3);
	if (subreaper) {
		int st;
		pid_t w = wait4(-1, &st, 0, NULL);
		EXPECT_TRUE(msg_of(msg, sizeof msg, name, "the subreaper reaps it"), w > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		SETUP(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0));
	}
	close(go[1]);
	close(back[0]);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "ppid") == 0) {
		long want = atol(argv[3]);
		/* The first of a new program's process goes to its supervisor
		   on Tessera, the second may be the kernel's. */
		char r = ppid() == want;
		r |= (ppid() == want) << 1;
		write(atoi(argv[2]), &r, 1);
		return 0;
	}
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

	section("getppid");
	(void)self_exe();
	SETUP(pipe(p));
	pid = fork();
	if (pid == 0) {
		SETUP(pipe(thread_go));
		pthread_t t;
		if (pthread_create(&t, NULL, thread_getppid, NULL) != 0)
			_exit(3);
		write(thread_go[1], "x", 1);
		pthread_join(t, NULL);
		_exit(thread_ppid == me && ppid() == me ? 0 : 1);
	}
	EXPECT_STATUS("a thread's getppid is its process's parent", wait_status(pid), "exited 0");
	vfork_value = 0;
	pid = vfork();
	if (pid == 0) {
		vfork_value = ppid() == me;
		_exit(0);
	}
	wait_status(pid);
	EXPECT_EQ("a vfork child's getppid is the parent", vfork_value, 1);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (ppid() != me)
			_exit(5);
		exec_ppid_check(p[1], me);
		_exit(6);
	}
	close(p[1]);
	r = 0;
	read(p[0], &r, 1);
	EXPECT_EQ("after execve, getppid is still the parent, twice (bits)", r, 3);
	EXPECT_STATUS("the child that ran execve", wait_status(pid), "exited 0");
	close(p[0]);

	SETUP(pipe(go));
	SETUP(pipe(back));
	pid = fork();
	if (pid == 0) {
		/* Forks as fork does, with its own parent as the child's. */
		long s = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
		if (s == 0) {
			char c, b = ppid() == me;
			read(go[0], &c, 1); /* until the test has reaped the cloner */
			b |= (ppid() == me) << 1;
			write(back[1], &b, 1);
			_exit(0);
		}
		_exit(s > 0 ? 0 : 1);
	}
	close(go[0]);
	close(back[1]);
	EXPECT_STATUS("the CLONE_PARENT cloner", wait_status(pid), "exited 0");
	write(go[1], "x", 1);
	r = 0;
	read(back[0], &r, 1);
	EXPECT_EQ("a CLONE_PARENT child's parent is its cloner's, before and after the cloner ends (bits)", r, 3);
	pid_t sib = wait4(-1, &st, 0, NULL);
	EXPECT_TRUE("the cloner's parent reaps it", sib > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(go[1]);
	close(back[0]);

	orphan_round("orphan of init, after the wait", 0, 0);
	orphan_round("orphan of init, racing", 0, 1);
	orphan_round("orphan of a subreaper, after the wait", 1, 0);
	orphan_round("orphan of a subreaper, racing", 1, 1);

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
