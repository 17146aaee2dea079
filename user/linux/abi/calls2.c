/*
 * Small calls of issue 18, second round: prctl's no-new-privs, THP,
 * dumpable, securebits and child-subreaper options and the 16-byte
 * name; sched_setattr and sched_getattr (SCHED_DEADLINE's parameters,
 * struct sizes); close_range; futimesat; set_robust_list and
 * get_robust_list; ioprio_get and ioprio_set; readahead; sync_file_range;
 * membarrier; fcntl's F_SETOWN, F_GETOWN, F_SETOWN_EX, F_GETOWN_EX,
 * F_SETSIG, F_GETSIG. Each with its errors, and hostile arguments (bad
 * pointers, unused pids, out-of-range values). Run as root; the
 * unprivileged checks run in a child that becomes uid 1000.
 */
#include "abi.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <time.h>

#define BAD ((void *)8)

struct sched_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
};

#define SCHED_DEADLINE 6

/* A pid no process has: above the highest pid Linux and Tessera give. */
#define UNUSED_PID 4194304

static long sched_setattr(pid_t pid, struct sched_attr *a, unsigned flags)
{
	return syscall(SYS_sched_setattr, pid, a, flags);
}

static long sched_getattr(pid_t pid, void *a, unsigned size, unsigned flags)
{
	return syscall(SYS_sched_getattr, pid, a, size, flags);
}

static long ioprio_get(int which, int who)
{
	return syscall(SYS_ioprio_get, which, who);
}

static long ioprio_set(int which, int who, int prio)
{
	return syscall(SYS_ioprio_set, which, who, prio);
}

#define IOPRIO(class, level) ((class) << 13 | (level))
#define WHO_PROCESS 1
#define WHO_PGRP 2
#define WHO_USER 3

static int status_has(const char *line)
{
	char text[4096];
	if (read_text("/proc/self/status", text, sizeof text) != 0)
		return 0;
	return strstr(text, line) != NULL;
}

/* ------------------------------------------------------------- prctl */

static int nnp_child(void *arg)
{
	(void)arg;
	EXPECT_EQ("the child's PR_GET_NO_NEW_PRIVS", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1);
	EXPECT_TRUE("its /proc/self/status says NoNewPrivs 1", status_has("NoNewPrivs:\t1\n"));
	EXPECT_EQ("the child's PR_GET_THP_DISABLE", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), 1);
	return 0;
}

static int nnp_exec(void *arg)
{
	(void)arg;
	/* The new program reports the flag through its exit status. */
	char *argv[] = { "sh", "-c", "grep -q 'NoNewPrivs:.1' /proc/self/status", NULL };
	char *envp[] = { "PATH=/bin", NULL };
	execve("/bin/sh", argv, envp);
	return 99;
}

static void prctl_options(void)
{
	section("prctl: no new privileges, THP, dumpable, securebits");
	EXPECT_EQ("PR_GET_NO_NEW_PRIVS at first", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0);
	EXPECT_TRUE("/proc/self/status says NoNewPrivs 0", status_has("NoNewPrivs:\t0\n"));
	EXPECT_ERR("PR_GET_NO_NEW_PRIVS with an argument", prctl(PR_GET_NO_NEW_PRIVS, 1, 0, 0, 0), EINVAL);
	EXPECT_ERR("PR_SET_NO_NEW_PRIVS 0", prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0), EINVAL);
	EXPECT_ERR("PR_SET_NO_NEW_PRIVS 2", prctl(PR_SET_NO_NEW_PRIVS, 2, 0, 0, 0), EINVAL);
	EXPECT_ERR("PR_SET_NO_NEW_PRIVS 1 with arg3", prctl(PR_SET_NO_NEW_PRIVS, 1, 1, 0, 0), EINVAL);
	EXPECT_ERR("PR_SET_NO_NEW_PRIVS 1 with arg5", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 1), EINVAL);
	/* prctl has five arguments: a sixth register is not looked at. */
	EXPECT_EQ("PR_GET_NO_NEW_PRIVS, junk in a sixth", syscall(SYS_prctl, PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L, -1L), 0);
	EXPECT_EQ("PR_GET_THP_DISABLE at first", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), 0);
	EXPECT_ERR("PR_GET_THP_DISABLE with an argument", prctl(PR_GET_THP_DISABLE, 1, 1, 0, 0), EINVAL);
	EXPECT_ERR("PR_SET_THP_DISABLE with arg3", prctl(PR_SET_THP_DISABLE, 0, 1, 0, 0), EINVAL);
	EXPECT_OK("PR_SET_THP_DISABLE 7", prctl(PR_SET_THP_DISABLE, 7, 0, 0, 0));
	EXPECT_EQ("PR_GET_THP_DISABLE now", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), 1);
	EXPECT_OK("PR_SET_NO_NEW_PRIVS 1", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	EXPECT_EQ("PR_GET_NO_NEW_PRIVS now", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1);
	EXPECT_TRUE("/proc/self/status says NoNewPrivs 1", status_has("NoNewPrivs:\t1\n"));
	EXPECT_OK("PR_SET_NO_NEW_PRIVS 1 again", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	EXPECT_STATUS("a forked child has both", in_child(nnp_child, NULL), "exited 0");
	EXPECT_STATUS("a program it execs has no new privileges", in_child(nnp_exec, NULL), "exited 0");

	EXPECT_ERR("PR_SET_DUMPABLE 2", prctl(PR_SET_DUMPABLE, 2, 0, 0, 0), EINVAL);
	EXPECT_ERR("PR_SET_DUMPABLE -1", prctl(PR_SET_DUMPABLE, -1L, 0, 0, 0), EINVAL);
	EXPECT_OK("PR_SET_DUMPABLE 1", prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
	EXPECT_EQ("PR_GET_SECUREBITS", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0), 0);
	EXPECT_ERR("PR_SET_SECUREBITS of an unknown bit", prctl(PR_SET_SECUREBITS, 1 << 20, 0, 0, 0), EPERM);
	EXPECT_OK("PR_SET_SECUREBITS 0 as root", prctl(PR_SET_SECUREBITS, 0, 0, 0, 0));
	EXPECT_ERR("prctl option 999", prctl(999, 1, 0, 0, 0), EINVAL);
}

static int not_root_securebits(void *arg)
{
	(void)arg;
	SETUP(syscall(SYS_setuid, 1000));
	EXPECT_ERR("PR_SET_SECUREBITS without CAP_SETPCAP", prctl(PR_SET_SECUREBITS, 0, 0, 0, 0), EPERM);
	EXPECT_ERR("PR_CAPBSET_DROP without CAP_SETPCAP", prctl(PR_CAPBSET_DROP, 1, 0, 0, 0), EPERM);
	return 0;
}

static void prctl_name(void)
{
	section("prctl: the name");
	char buf[32];
	EXPECT_OK("PR_SET_NAME of 12 bytes", prctl(PR_SET_NAME, "calls2_short", 0, 0, 0));
	memset(buf, 'x', sizeof buf);
	EXPECT_OK("PR_GET_NAME", prctl(PR_GET_NAME, buf, 0, 0, 0));
	EXPECT_STR("the name", buf, "calls2_short");
	EXPECT_OK("PR_SET_NAME of 20 bytes", prctl(PR_SET_NAME, "calls2_long_name_xyz", 0, 0, 0));
	memset(buf, 'x', sizeof buf);
	EXPECT_OK("PR_GET_NAME", prctl(PR_GET_NAME, buf, 0, 0, 0));
	EXPECT_STR("its first 15 bytes", buf, "calls2_long_nam");
	EXPECT_EQ("byte 16 untouched", buf[16], 'x');
	char path[64], text[64];
	snprintf(path, sizeof path, "/proc/self/task/%ld/comm", syscall(SYS_gettid));
	EXPECT_EQ("the thread's comm can be read", read_text(path, text, sizeof text), 0);
	EXPECT_STR("and holds it", text, "calls2_long_nam\n");
	EXPECT_EQ("/proc/self/comm can be read", read_text("/proc/self/comm", text, sizeof text), 0);
	EXPECT_STR("and holds it", text, "calls2_long_nam\n");
	EXPECT_EQ("a thread that is not there", read_text("/proc/self/task/4194304/comm", text, sizeof text), -1);
	EXPECT_ERR("PR_SET_NAME from a bad pointer", prctl(PR_SET_NAME, BAD, 0, 0, 0), EFAULT);
	EXPECT_ERR("PR_GET_NAME to a bad pointer", prctl(PR_GET_NAME, BAD, 0, 0, 0), EFAULT);
	EXPECT_OK("PR_SET_NAME back", prctl(PR_SET_NAME, "calls2", 0, 0, 0));
}

/* The subreaper's grandchild: waits until its parent is gone, then says
 * through its exit status whether the subreaper adopted it. */
static int orphan(int fd, pid_t reaper)
{
	char c;
	if (read(fd, &c, 1) != 1)
		return 3;
	return getppid() == reaper ? 0 : 1;
}

static int middle(void *arg)
{
	int *fds = arg;
	pid_t reaper = getppid();
	int v = -1;
	prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0);
	pid_t g = fork();
	if (g == 0) {
		close(fds[1]);
		_exit(orphan(fds[0], reaper));
	}
	/* The flag is not inherited. */
	return g > 0 && v == 0 ? 0 : 1;
}

static volatile sig_atomic_t chld_count;
static void on_chld(int s)
{
	(void)s;
	chld_count++;
}

static void subreaper(void)
{
	section("prctl: child subreaper");
	int v = -1;
	EXPECT_OK("PR_GET_CHILD_SUBREAPER", prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0));
	EXPECT_EQ("at first", v, 0);
	EXPECT_ERR("PR_GET_CHILD_SUBREAPER to a bad pointer", prctl(PR_GET_CHILD_SUBREAPER, BAD, 0, 0, 0), EFAULT);
	EXPECT_OK("PR_SET_CHILD_SUBREAPER 1", prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
	EXPECT_OK("PR_GET_CHILD_SUBREAPER", prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0));
	EXPECT_EQ("now", v, 1);

	struct sigaction sa = { .sa_handler = on_chld };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	chld_count = 0;
	int fds[2];
	SETUP(pipe(fds));
	pid_t m = spawn_fn(middle, fds);
	EXPECT_STATUS("the middle child (not a subreaper itself)", wait_status(m), "exited 0");
	close(fds[0]);
	SETUP(write(fds[1], "g", 1));
	close(fds[1]);
	int st = -1;
	pid_t got;
	do
		got = wait(&st);
	while (got == -1 && errno == EINTR);
	EXPECT_TRUE("wait() finds the orphaned grandchild", got > 0 && got != m);
	EXPECT_STATUS("which saw the subreaper as its parent", st, "exited 0");
	EXPECT_EQ("SIGCHLD from both", chld_count, 2);
	EXPECT_ERR("no child left", wait(NULL), ECHILD);
	signal(SIGCHLD, SIG_DFL);

	EXPECT_OK("PR_SET_CHILD_SUBREAPER 0", prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0));
	SETUP(pipe(fds));
	m = spawn_fn(middle, fds);
	EXPECT_STATUS("the middle child again", wait_status(m), "exited 0");
	close(fds[0]);
	SETUP(write(fds[1], "g", 1));
	close(fds[1]);
	EXPECT_ERR("the orphan went to init: no child to wait for", wait(NULL), ECHILD);
}

/* ------------------------------------------------------------- sched_*attr */

static int deadline_unprivileged(void *arg)
{
	(void)arg;
	SETUP(syscall(SYS_setuid, 1000));
	struct sched_attr a = { .size = 48, .policy = SCHED_DEADLINE, .runtime = 10000000,
				.deadline = 30000000, .period = 30000000 };
	EXPECT_ERR("SCHED_DEADLINE without privilege", sched_setattr(0, &a, 0), EPERM);
	struct sched_attr b = { .size = 48, .policy = SCHED_OTHER, .nice = 3 };
	EXPECT_OK("nice 3 through sched_setattr", sched_setattr(0, &b, 0));
	b.nice = 2;
	EXPECT_ERR("nice back down to 2", sched_setattr(0, &b, 0), EPERM);
	EXPECT_ERR("sched_setattr of pid 1", sched_setattr(1, &b, 0), EPERM);
	EXPECT_EQ("getpriority says nice 3", syscall(SYS_getpriority, 0, 0), 17);
	return 0;
}

static void sched_attrs(void)
{
	section("sched_setattr, sched_getattr");
	struct sched_attr a = { .size = sizeof a, .policy = SCHED_DEADLINE, .runtime = 10000000,
				.deadline = 30000000, .period = 30000000 };
	struct sched_attr g;
	EXPECT_ERR("sched_getattr of a pid not there", sched_getattr(UNUSED_PID, &g, sizeof g, 0), ESRCH);
	EXPECT_ERR("sched_getattr to NULL", sched_getattr(0, NULL, sizeof g, 0), EINVAL);
	EXPECT_ERR("sched_getattr of 47 bytes", sched_getattr(0, &g, 47, 0), EINVAL);
	EXPECT_ERR("sched_getattr of 4097 bytes", sched_getattr(0, &g, 4097, 0), EINVAL);
	EXPECT_ERR("sched_getattr with flags", sched_getattr(0, &g, sizeof g, 1000), EINVAL);
	EXPECT_ERR("sched_getattr of pid -1", sched_getattr(-1, &g, sizeof g, 0), EINVAL);
	EXPECT_ERR("sched_getattr to a bad pointer", sched_getattr(0, BAD, sizeof g, 0), EFAULT);
	memset(&g, 0xff, sizeof g);
	EXPECT_OK("sched_getattr at first", sched_getattr(0, &g, 48, 0));
	EXPECT_EQ("size", g.size, 48);
	EXPECT_EQ("policy", g.policy, SCHED_OTHER);
	EXPECT_EQ("flags", g.flags, 0);
	EXPECT_EQ("nice", g.nice, 0);
	EXPECT_EQ("the bytes past 48 untouched", g.util_min, 0xffffffff);

	EXPECT_ERR("sched_setattr of a pid not there", sched_setattr(UNUSED_PID, &a, 0), ESRCH);
	EXPECT_ERR("sched_setattr from NULL", sched_setattr(0, NULL, 0), EINVAL);
	EXPECT_ERR("sched_setattr with flags", sched_setattr(0, &a, 1000), EINVAL);
	EXPECT_ERR("sched_setattr of pid -1", sched_setattr(-1, &a, 0), EINVAL);
	EXPECT_ERR("sched_setattr from a bad pointer", sched_setattr(0, BAD, 0), EFAULT);
	struct sched_attr s = a;
	s.size = 47;
	EXPECT_ERR("a size of 47", sched_setattr(0, &s, 0), E2BIG);
	EXPECT_EQ("the size Linux knows written back", s.size, 56);
	s.size = 8192;
	EXPECT_ERR("a size of 8192", sched_setattr(0, &s, 0), E2BIG);
	static unsigned char big[128];
	memcpy(big, &a, sizeof a);
	((struct sched_attr *)big)->size = 128;
	big[100] = 1;
	EXPECT_ERR("a longer struct with something in its tail", sched_setattr(0, (void *)big, 0), E2BIG);
	s = a;
	s.policy = 99;
	EXPECT_ERR("policy 99", sched_setattr(0, &s, 0), EINVAL);
	s.policy = -1;
	EXPECT_ERR("policy -1", sched_setattr(0, &s, 0), EINVAL);
	s = a;
	s.flags = 0x80;
	EXPECT_ERR("an unknown flag", sched_setattr(0, &s, 0), EINVAL);
	s = a;
	s.runtime = 100;
	EXPECT_ERR("a runtime under 1 us", sched_setattr(0, &s, 0), EINVAL);
	s = a;
	s.runtime = 40000000;
	EXPECT_ERR("a runtime past the deadline", sched_setattr(0, &s, 0), EINVAL);
	s = a;
	s.period = 20000000;
	EXPECT_ERR("a period before the deadline", sched_setattr(0, &s, 0), EINVAL);
	s = a;
	s.deadline = 0;
	EXPECT_ERR("no deadline", sched_setattr(0, &s, 0), EINVAL);
	s = a;
	s.policy = SCHED_FIFO;
	s.priority = 0;
	EXPECT_ERR("SCHED_FIFO at priority 0", sched_setattr(0, &s, 0), EINVAL);
	s.priority = 100;
	EXPECT_ERR("SCHED_FIFO at priority 100", sched_setattr(0, &s, 0), EINVAL);

	EXPECT_OK("SCHED_DEADLINE 10 ms in 30 ms", sched_setattr(0, &a, 0));
	memset(&g, 0, sizeof g);
	EXPECT_OK("sched_getattr", sched_getattr(0, &g, 48, 0));
	EXPECT_EQ("policy", g.policy, SCHED_DEADLINE);
	EXPECT_EQ("runtime", g.runtime, 10000000);
	EXPECT_EQ("deadline", g.deadline, 30000000);
	EXPECT_EQ("period", g.period, 30000000);
	EXPECT_EQ("sched_getscheduler", syscall(SYS_sched_getscheduler, 0), SCHED_DEADLINE);

	s = (struct sched_attr){ .size = 0, .policy = SCHED_FIFO, .priority = 5, .flags = 1 };
	EXPECT_OK("size 0 (the first version) with SCHED_FIFO 5 and RESET_ON_FORK", sched_setattr(0, &s, 0));
	EXPECT_OK("sched_getattr", sched_getattr(0, &g, 48, 0));
	EXPECT_EQ("policy", g.policy, SCHED_FIFO);
	EXPECT_EQ("priority", g.priority, 5);
	EXPECT_EQ("flags", g.flags, 1);
	EXPECT_EQ("runtime", g.runtime, 0);
	s = (struct sched_attr){ .size = 48, .flags = 0x08 | 0x10 };
	EXPECT_OK("KEEP_POLICY and KEEP_PARAMS", sched_setattr(0, &s, 0));
	EXPECT_EQ("sched_getscheduler", syscall(SYS_sched_getscheduler, 0), SCHED_FIFO | SCHED_RESET_ON_FORK);
	EXPECT_OK("sched_getattr", sched_getattr(0, &g, 48, 0));
	EXPECT_EQ("priority kept", g.priority, 5);
	s = (struct sched_attr){ .size = 48, .policy = SCHED_OTHER, .nice = -40 };
	EXPECT_OK("SCHED_OTHER at nice -40", sched_setattr(0, &s, 0));
	EXPECT_OK("sched_getattr", sched_getattr(0, &g, 48, 0));
	EXPECT_EQ("nice (clamped)", g.nice, -20);
	EXPECT_EQ("priority", g.priority, 0);
	s.nice = 0;
	EXPECT_OK("nice 0", sched_setattr(0, &s, 0));
	EXPECT_STATUS("without privilege", in_child(deadline_unprivileged, NULL), "exited 0");
}

/* ------------------------------------------------------------- close_range */

static int fd_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

static void close_ranges(void)
{
	section("close_range");
	int p[2];
	SETUP(pipe(p));
	int a = open("/", O_RDONLY);
	SETUP(a);
	SETUP(dup2(a, 100));
	SETUP(dup2(a, 101));
	SETUP(dup2(p[0], 102));
	EXPECT_ERR("first after last", syscall(SYS_close_range, 5, 4, 0), EINVAL);
	EXPECT_ERR("an unknown flag", syscall(SYS_close_range, 3, ~0U, 1), EINVAL);
	EXPECT_ERR("every flag", syscall(SYS_close_range, 3, ~0U, ~0U), EINVAL);
	EXPECT_OK("nothing there: ~0 to ~0", syscall(SYS_close_range, ~0U, ~0U, 0));
	EXPECT_OK("CLOSE_RANGE_CLOEXEC on 100..102", syscall(SYS_close_range, 100, 102, 4));
	EXPECT_EQ("100 is close-on-exec", fcntl(100, F_GETFD), FD_CLOEXEC);
	EXPECT_EQ("102 (a pipe) is close-on-exec", fcntl(102, F_GETFD), FD_CLOEXEC);
	EXPECT_EQ("the pipe's other number is not", fcntl(p[0], F_GETFD), 0);
	SETUP(write(p[1], "ab", 2));
	char c = 0;
	EXPECT_EQ("102 still reads", read(102, &c, 1), 1);
	EXPECT_OK("CLOSE_RANGE_UNSHARE on 101 to ~0", syscall(SYS_close_range, 101, ~0U, 2));
	EXPECT_TRUE("100 open", fd_open(100));
	EXPECT_TRUE("101 closed", !fd_open(101));
	EXPECT_TRUE("102 closed", !fd_open(102));
	EXPECT_EQ("the pipe reads through its first number", read(p[0], &c, 1), 1);
	EXPECT_OK("close_range(a, 100, 0)", syscall(SYS_close_range, a, 100, 0));
	EXPECT_TRUE("a closed", !fd_open(a));
	EXPECT_TRUE("100 closed", !fd_open(100));
	EXPECT_TRUE("the pipe's ends before a kept", fd_open(p[0]) && fd_open(p[1]));
	close(p[0]);
	close(p[1]);
}

/* ------------------------------------------------------------- futimesat */

static void futimesat_calls(void)
{
	section("futimesat");
	int fd = open("futimes.file", O_CREAT | O_WRONLY, 0644);
	SETUP(fd);
	close(fd);
	int dir = open(".", O_RDONLY | O_DIRECTORY);
	SETUP(dir);
	struct timeval tv[2] = { { 1000000000, 5 }, { 1100000000, 999999 } };
	EXPECT_OK("futimesat relative to a directory", syscall(SYS_futimesat, dir, "futimes.file", tv));
	struct stat st;
	SETUP(stat("futimes.file", &st));
	EXPECT_EQ("atime", st.st_atime, 1000000000);
	EXPECT_EQ("atime's ns", st.st_atim.tv_nsec, 5000);
	EXPECT_EQ("mtime", st.st_mtime, 1100000000);
	EXPECT_EQ("mtime's ns", st.st_mtim.tv_nsec, 999999000);
	tv[0].tv_usec = 1000000;
	EXPECT_ERR("a microsecond count of a second", syscall(SYS_futimesat, dir, "futimes.file", tv), EINVAL);
	tv[0].tv_usec = -1;
	EXPECT_ERR("a negative one", syscall(SYS_futimesat, dir, "futimes.file", tv), EINVAL);
	EXPECT_ERR("times from a bad pointer", syscall(SYS_futimesat, dir, "futimes.file", BAD), EFAULT);
	EXPECT_ERR("a path from a bad pointer", syscall(SYS_futimesat, dir, BAD, NULL), EFAULT);
	EXPECT_ERR("a name not there", syscall(SYS_futimesat, dir, "no.such.file", NULL), ENOENT);
	EXPECT_ERR("a bad directory descriptor", syscall(SYS_futimesat, 999, "futimes.file", NULL), EBADF);
	EXPECT_OK("AT_FDCWD, times now", syscall(SYS_futimesat, AT_FDCWD, "futimes.file", NULL));
	SETUP(stat("futimes.file", &st));
	EXPECT_TRUE("mtime moved", st.st_mtime > 1100000000);
	close(dir);
	unlink("futimes.file");
}

/* ------------------------------------------------------------- robust lists */

static int robust_unprivileged(void *arg)
{
	(void)arg;
	SETUP(syscall(SYS_setuid, 1000));
	void *head;
	size_t len;
	EXPECT_ERR("get_robust_list of pid 1 as uid 1000", syscall(SYS_get_robust_list, 1, &head, &len), EPERM);
	EXPECT_OK("of itself", syscall(SYS_get_robust_list, 0, &head, &len));
	return 0;
}

static int robust_child(void *arg)
{
	void *head = (void *)1;
	size_t len = 0;
	(void)arg;
	EXPECT_OK("the forked child's get_robust_list", syscall(SYS_get_robust_list, 0, &head, &len));
	EXPECT_TRUE("it has none (fork does not pass it on)", head == NULL);
	return 0;
}

static void robust_lists(void)
{
	section("set_robust_list, get_robust_list");
	static struct { void *next; long offset; void *pending; } my_head = { &my_head, 0, NULL };
	void *head = NULL;
	size_t len = 0;
	EXPECT_ERR("set_robust_list of 23 bytes", syscall(SYS_set_robust_list, &my_head, 23), EINVAL);
	EXPECT_ERR("of 0 bytes", syscall(SYS_set_robust_list, &my_head, 0), EINVAL);
	EXPECT_OK("get_robust_list", syscall(SYS_get_robust_list, 0, &head, &len));
	EXPECT_EQ("the length", len, 24);
	void *musl_head = head;
	EXPECT_OK("set_robust_list of 24 bytes", syscall(SYS_set_robust_list, &my_head, 24));
	EXPECT_OK("get_robust_list", syscall(SYS_get_robust_list, 0, &head, &len));
	EXPECT_TRUE("the new head", head == (void *)&my_head);
	EXPECT_OK("of its own pid", syscall(SYS_get_robust_list, getpid(), &head, &len));
	EXPECT_TRUE("the same head", head == (void *)&my_head);
	EXPECT_STATUS("fork", in_child(robust_child, &my_head), "exited 0");
	EXPECT_ERR("the head to a bad pointer", syscall(SYS_get_robust_list, 0, BAD, &len), EFAULT);
	EXPECT_ERR("the length to a bad pointer", syscall(SYS_get_robust_list, 0, &head, BAD), EFAULT);
	EXPECT_ERR("the head to NULL", syscall(SYS_get_robust_list, 0, NULL, &len), EFAULT);
	EXPECT_ERR("a pid not there", syscall(SYS_get_robust_list, UNUSED_PID, &head, &len), ESRCH);
	EXPECT_OK("of pid 1 as root", syscall(SYS_get_robust_list, 1, &head, &len));
	EXPECT_STATUS("as uid 1000", in_child(robust_unprivileged, NULL), "exited 0");
	EXPECT_OK("set_robust_list of NULL", syscall(SYS_set_robust_list, NULL, 24));
	EXPECT_OK("get_robust_list", syscall(SYS_get_robust_list, 0, &head, &len));
	EXPECT_TRUE("none", head == NULL);
	SETUP(syscall(SYS_set_robust_list, musl_head, 24));
}

/* ------------------------------------------------------------- ioprio */

static int ioprio_child(void *arg)
{
	(void)arg;
	EXPECT_EQ("the forked child's", ioprio_get(WHO_PROCESS, 0), IOPRIO(2, 7));
	return 0;
}

static int ioprio_unprivileged(void *arg)
{
	pid_t parent = *(pid_t *)arg;
	SETUP(syscall(SYS_setuid, 1000));
	EXPECT_ERR("the real-time class without privilege", ioprio_set(WHO_PROCESS, 0, IOPRIO(1, 0)), EPERM);
	EXPECT_ERR("the real-time class at level 8 (the class first)", ioprio_set(WHO_PROCESS, 0, IOPRIO(1, 8)), EPERM);
	EXPECT_OK("idle on itself", ioprio_set(WHO_PROCESS, 0, IOPRIO(3, 0)));
	EXPECT_ERR("best effort on root's process", ioprio_set(WHO_PROCESS, parent, IOPRIO(2, 1)), EPERM);
	EXPECT_EQ("ioprio_get of root's process is allowed", ioprio_get(WHO_PROCESS, parent), IOPRIO(2, 7));
	return 0;
}

static void ioprios(void)
{
	section("ioprio_get, ioprio_set");
	long first = ioprio_get(WHO_PROCESS, 0);
	EXPECT_TRUE("ioprio_get at first: best effort level 4 or none", first == IOPRIO(2, 4) || first == 0);
	EXPECT_ERR("which 0", ioprio_get(0, 0), EINVAL);
	EXPECT_ERR("which 4", ioprio_get(4, 0), EINVAL);
	EXPECT_ERR("a pid not there", ioprio_get(WHO_PROCESS, UNUSED_PID), ESRCH);
	EXPECT_ERR("ioprio_set of class 4", ioprio_set(WHO_PROCESS, 0, IOPRIO(4, 0)), EINVAL);
	/* Linux 6.1 reads the level from the value's low three bits. */
	EXPECT_OK("best effort \"level 8\"", ioprio_set(WHO_PROCESS, 0, IOPRIO(2, 8)));
	EXPECT_EQ("read back as set", ioprio_get(WHO_PROCESS, 0), IOPRIO(2, 8));
	EXPECT_OK("real time \"level 9\"", ioprio_set(WHO_PROCESS, 0, IOPRIO(1, 9)));
	EXPECT_EQ("read back as set", ioprio_get(WHO_PROCESS, 0), IOPRIO(1, 9));
	EXPECT_OK("class none, \"level 8\" (a level of 0)", ioprio_set(WHO_PROCESS, 0, IOPRIO(0, 8)));
	EXPECT_OK("class none", ioprio_set(WHO_PROCESS, 0, IOPRIO(0, 0)));
	EXPECT_EQ("read back as none", ioprio_get(WHO_PROCESS, 0), 0);
	EXPECT_ERR("class none, level 1", ioprio_set(WHO_PROCESS, 0, IOPRIO(0, 1)), EINVAL);
	EXPECT_ERR("which 0 (the value first)", ioprio_set(0, 0, IOPRIO(2, 1)), EINVAL);
	EXPECT_ERR("a pid not there", ioprio_set(WHO_PROCESS, UNUSED_PID, IOPRIO(2, 1)), ESRCH);
	for (int level = 0; level < 8; level += 7) {
		char name[64];
		snprintf(name, sizeof name, "best effort level %d", level);
		EXPECT_OK(name, ioprio_set(WHO_PROCESS, 0, IOPRIO(2, level)));
		EXPECT_EQ("read back", ioprio_get(WHO_PROCESS, 0), IOPRIO(2, level));
	}
	EXPECT_OK("real time level 3 as root", ioprio_set(WHO_PROCESS, getpid(), IOPRIO(1, 3)));
	EXPECT_EQ("read back", ioprio_get(WHO_PROCESS, 0), IOPRIO(1, 3));
	EXPECT_OK("idle", ioprio_set(WHO_PROCESS, 0, IOPRIO(3, 0)));
	EXPECT_EQ("read back", ioprio_get(WHO_PROCESS, 0), IOPRIO(3, 0));
	EXPECT_OK("best effort 7 for the process group", ioprio_set(WHO_PGRP, 0, IOPRIO(2, 7)));
	EXPECT_EQ("read back by process", ioprio_get(WHO_PROCESS, 0), IOPRIO(2, 7));
	EXPECT_EQ("read back by group", ioprio_get(WHO_PGRP, 0), IOPRIO(2, 7));
	EXPECT_ERR("a group not there", ioprio_get(WHO_PGRP, UNUSED_PID), ESRCH);
	EXPECT_STATUS("fork passes it on", in_child(ioprio_child, NULL), "exited 0");
	pid_t me = getpid();
	EXPECT_STATUS("as uid 1000", in_child(ioprio_unprivileged, &me), "exited 0");
}

/* ------------------------------------------------------------- hints */

static void hints(void)
{
	section("readahead, sync_file_range");
	int fd = open("hint.file", O_CREAT | O_RDWR | O_TRUNC, 0644);
	SETUP(fd);
	SETUP(write(fd, "0123456789", 10));
	int wo = open("hint.file", O_WRONLY);
	SETUP(wo);
	int path = open("hint.file", O_PATH);
	SETUP(path);
	int dir = open(".", O_RDONLY | O_DIRECTORY);
	SETUP(dir);
	int p[2];
	SETUP(pipe(p));
	EXPECT_OK("readahead of a file", syscall(SYS_readahead, fd, 0, 4096));
	EXPECT_OK("past its end", syscall(SYS_readahead, fd, 1 << 20, 4096));
	EXPECT_ERR("of a write-only descriptor", syscall(SYS_readahead, wo, 0, 4096), EBADF);
	EXPECT_ERR("of an O_PATH descriptor", syscall(SYS_readahead, path, 0, 4096), EBADF);
	EXPECT_ERR("of a pipe", syscall(SYS_readahead, p[0], 0, 4096), EINVAL);
	EXPECT_ERR("of a directory", syscall(SYS_readahead, dir, 0, 4096), EINVAL);
	EXPECT_ERR("of a closed number", syscall(SYS_readahead, 999, 0, 4096), EBADF);

	EXPECT_OK("sync_file_range, every flag", syscall(SYS_sync_file_range, fd, 0, 10, 7));
	EXPECT_OK("no flags, length 0", syscall(SYS_sync_file_range, fd, 0, 0, 0));
	EXPECT_OK("of a write-only descriptor", syscall(SYS_sync_file_range, wo, 0, 10, 2));
	EXPECT_OK("of a directory", syscall(SYS_sync_file_range, dir, 0, 0, 2));
	EXPECT_ERR("an unknown flag", syscall(SYS_sync_file_range, fd, 0, 10, 8), EINVAL);
	EXPECT_ERR("a negative offset", syscall(SYS_sync_file_range, fd, -1L, 10L, 0), EINVAL);
	EXPECT_ERR("a negative length", syscall(SYS_sync_file_range, fd, 0L, -10L, 0), EINVAL);
	EXPECT_OK("an offset of 2^32 - 1", syscall(SYS_sync_file_range, fd, 0xffffffffL, 10L, 0));
	EXPECT_ERR("an end past 2^63", syscall(SYS_sync_file_range, fd, 1L << 62, 3L << 61, 0), EINVAL);
	EXPECT_ERR("a pipe", syscall(SYS_sync_file_range, p[1], 0, 10, 0), ESPIPE);
	EXPECT_ERR("a closed number (before the flags)", syscall(SYS_sync_file_range, 999, 0, 10, 8), EBADF);
	EXPECT_ERR("an O_PATH descriptor", syscall(SYS_sync_file_range, path, 0, 10, 0), EBADF);
	char buf[11] = { 0 };
	EXPECT_EQ("the bytes are there", pread(fd, buf, 10, 0), 10);
	EXPECT_STR("as written", buf, "0123456789");
	close(fd);
	close(wo);
	close(path);
	close(dir);
	close(p[0]);
	close(p[1]);
	unlink("hint.file");
}

static int membarrier_child(void *arg)
{
	(void)arg;
	EXPECT_OK("a forked child keeps the registration", syscall(SYS_membarrier, 8, 0, 0));
	EXPECT_ERR("but not RSEQ's", syscall(SYS_membarrier, 128, 0, 0), EPERM);
	return 0;
}

static void membarriers(void)
{
	section("membarrier");
	long q = syscall(SYS_membarrier, 0, 0, 0);
	EXPECT_EQ("MEMBARRIER_CMD_QUERY", q, 0x1ff);
	EXPECT_ERR("QUERY with a flag", syscall(SYS_membarrier, 0, 1, 0), EINVAL);
	EXPECT_ERR("command -1", syscall(SYS_membarrier, -1, 0, 0), EINVAL);
	EXPECT_ERR("command 3 (two at once)", syscall(SYS_membarrier, 3, 0, 0), EINVAL);
	EXPECT_ERR("command 512", syscall(SYS_membarrier, 512, 0, 0), EINVAL);
	EXPECT_OK("GLOBAL", syscall(SYS_membarrier, 1, 0, 0));
	EXPECT_OK("GLOBAL_EXPEDITED unregistered", syscall(SYS_membarrier, 2, 0, 0));
	EXPECT_ERR("PRIVATE_EXPEDITED unregistered", syscall(SYS_membarrier, 8, 0, 0), EPERM);
	EXPECT_ERR("PRIVATE_EXPEDITED_SYNC_CORE unregistered", syscall(SYS_membarrier, 32, 0, 0), EPERM);
	EXPECT_ERR("PRIVATE_EXPEDITED_RSEQ unregistered", syscall(SYS_membarrier, 128, 0, 0), EPERM);
	EXPECT_ERR("PRIVATE_EXPEDITED with the CPU flag", syscall(SYS_membarrier, 8, 1, 0), EINVAL);
	EXPECT_OK("REGISTER_PRIVATE_EXPEDITED", syscall(SYS_membarrier, 16, 0, 0));
	EXPECT_OK("PRIVATE_EXPEDITED", syscall(SYS_membarrier, 8, 0, 0));
	EXPECT_ERR("SYNC_CORE still unregistered", syscall(SYS_membarrier, 32, 0, 0), EPERM);
	EXPECT_OK("REGISTER_PRIVATE_EXPEDITED_SYNC_CORE", syscall(SYS_membarrier, 64, 0, 0));
	EXPECT_OK("PRIVATE_EXPEDITED_SYNC_CORE", syscall(SYS_membarrier, 32, 0, 0));
	EXPECT_OK("REGISTER_GLOBAL_EXPEDITED", syscall(SYS_membarrier, 4, 0, 0));
	EXPECT_OK("GLOBAL_EXPEDITED", syscall(SYS_membarrier, 2, 0, 0));
	EXPECT_STATUS("fork", in_child(membarrier_child, NULL), "exited 0");
}

/* ------------------------------------------------------------- fcntl owner */

struct owner_ex {
	int type;
	pid_t pid;
};

static void owners(void)
{
	section("fcntl: F_SETOWN, F_GETOWN, F_SETOWN_EX, F_GETOWN_EX, F_SETSIG, F_GETSIG");
	int p[2];
	SETUP(pipe(p));
	pid_t me = getpid(), pgrp = getpgrp();
	struct owner_ex ex = { -1, -1 };
	EXPECT_EQ("F_GETOWN at first", fcntl(p[0], F_GETOWN), 0);
	EXPECT_OK("F_GETOWN_EX at first", fcntl(p[0], F_GETOWN_EX, &ex));
	EXPECT_EQ("type F_OWNER_TID", ex.type, F_OWNER_TID);
	EXPECT_EQ("pid 0", ex.pid, 0);
	EXPECT_EQ("F_GETSIG at first", fcntl(p[0], F_GETSIG), 0);
	EXPECT_OK("F_SETOWN to itself", fcntl(p[0], F_SETOWN, me));
	EXPECT_TRUE("F_GETOWN reads it", fcntl(p[0], F_GETOWN) == me);
	EXPECT_OK("F_GETOWN_EX", fcntl(p[0], F_GETOWN_EX, &ex));
	EXPECT_TRUE("type F_OWNER_PID, its pid", ex.type == F_OWNER_PID && ex.pid == me);
	EXPECT_OK("F_SETOWN to its group", fcntl(p[0], F_SETOWN, -pgrp));
	EXPECT_TRUE("F_GETOWN reads it negative", fcntl(p[0], F_GETOWN) == -pgrp);
	EXPECT_OK("F_GETOWN_EX", fcntl(p[0], F_GETOWN_EX, &ex));
	EXPECT_TRUE("type F_OWNER_PGRP, the group", ex.type == F_OWNER_PGRP && ex.pid == pgrp);
	int dup_fd = dup(p[0]);
	EXPECT_TRUE("a dup shares the owner", fcntl(dup_fd, F_GETOWN) == -pgrp);
	close(dup_fd);
	EXPECT_TRUE("the other end has none", fcntl(p[1], F_GETOWN) == 0);
	EXPECT_ERR("F_SETOWN to a pid not there", fcntl(p[0], F_SETOWN, UNUSED_PID), ESRCH);
	EXPECT_ERR("F_SETOWN to INT_MIN", fcntl(p[0], F_SETOWN, (int)0x80000000), EINVAL);
	ex = (struct owner_ex){ F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
	EXPECT_OK("F_SETOWN_EX to its thread", fcntl(p[0], F_SETOWN_EX, &ex));
	ex = (struct owner_ex){ -1, -1 };
	EXPECT_OK("F_GETOWN_EX", fcntl(p[0], F_GETOWN_EX, &ex));
	EXPECT_TRUE("type F_OWNER_TID, its tid", ex.type == F_OWNER_TID && ex.pid == me);
	ex = (struct owner_ex){ 3, me };
	EXPECT_ERR("F_SETOWN_EX of type 3", fcntl(p[0], F_SETOWN_EX, &ex), EINVAL);
	ex = (struct owner_ex){ F_OWNER_PID, UNUSED_PID };
	EXPECT_ERR("F_SETOWN_EX to a pid not there", fcntl(p[0], F_SETOWN_EX, &ex), ESRCH);
	ex = (struct owner_ex){ F_OWNER_PGRP, -5 };
	EXPECT_ERR("F_SETOWN_EX to pid -5", fcntl(p[0], F_SETOWN_EX, &ex), ESRCH);
	EXPECT_ERR("F_SETOWN_EX from a bad pointer", fcntl(p[0], F_SETOWN_EX, BAD), EFAULT);
	EXPECT_ERR("F_GETOWN_EX to a bad pointer", fcntl(p[0], F_GETOWN_EX, BAD), EFAULT);
	ex = (struct owner_ex){ F_OWNER_PID, 0 };
	EXPECT_OK("F_SETOWN_EX to nobody", fcntl(p[0], F_SETOWN_EX, &ex));
	EXPECT_EQ("F_GETOWN", fcntl(p[0], F_GETOWN), 0);
	EXPECT_OK("F_SETSIG SIGUSR1", fcntl(p[0], F_SETSIG, SIGUSR1));
	EXPECT_EQ("F_GETSIG", fcntl(p[0], F_GETSIG), SIGUSR1);
	EXPECT_OK("F_SETSIG 64", fcntl(p[0], F_SETSIG, 64));
	EXPECT_ERR("F_SETSIG 65", fcntl(p[0], F_SETSIG, 65), EINVAL);
	EXPECT_ERR("F_SETSIG -1", fcntl(p[0], F_SETSIG, -1), EINVAL);
	EXPECT_EQ("F_GETSIG kept 64", fcntl(p[0], F_GETSIG), 64);
	EXPECT_ERR("F_SETSIG of 5 in the low 32 bits", syscall(SYS_fcntl, p[0], F_SETSIG, 0x100000005L), EINVAL);
	EXPECT_OK("F_SETOWN of its pid in the low 32 bits", syscall(SYS_fcntl, p[0], F_SETOWN, 0x100000000L | me));
	EXPECT_TRUE("F_GETOWN", fcntl(p[0], F_GETOWN) == me);
	EXPECT_OK("F_SETSIG 0 (SIGIO)", fcntl(p[0], F_SETSIG, 0));
	EXPECT_ERR("F_GETSIG of a closed number", fcntl(999, F_GETSIG), EBADF);
	close(p[0]);
	close(p[1]);
}

/* ------------------------------------------------------------- the wall clock */

static int settime_unprivileged(void *arg)
{
	(void)arg;
	SETUP(syscall(SYS_setuid, 1000));
	struct timeval tv;
	gettimeofday(&tv, NULL);
	struct timespec ts = { tv.tv_sec, 0 };
	EXPECT_ERR("settimeofday as uid 1000", syscall(SYS_settimeofday, &tv, NULL), EPERM);
	EXPECT_ERR("clock_settime as uid 1000", syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EPERM);
	tv.tv_usec = 2000000;
	EXPECT_ERR("a bad time before the privilege", syscall(SYS_settimeofday, &tv, NULL), EINVAL);
	return 0;
}

static void wall_clock(void)
{
	section("settimeofday, clock_settime");
	struct timespec ts, now;
	struct timeval tv;
	struct { int minuteswest, dsttime; } tz = { 0, 0 };
	clock_gettime(CLOCK_REALTIME, &ts);
	EXPECT_ERR("clock_settime of CLOCK_MONOTONIC", syscall(SYS_clock_settime, CLOCK_MONOTONIC, &ts), EINVAL);
	EXPECT_ERR("of clock 99, from a bad pointer", syscall(SYS_clock_settime, 99, BAD), EINVAL);
	EXPECT_ERR("of CLOCK_REALTIME from a bad pointer", syscall(SYS_clock_settime, CLOCK_REALTIME, BAD), EFAULT);
	ts.tv_nsec = 1000000000;
	EXPECT_ERR("a nanosecond count of a second", syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EINVAL);
	ts.tv_nsec = -1;
	EXPECT_ERR("a negative one", syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EINVAL);
	ts.tv_sec = -1;
	ts.tv_nsec = 0;
	EXPECT_ERR("a negative second", syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EINVAL);
	ts.tv_sec = 0;
	EXPECT_ERR("1970, before boot", syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EINVAL);
	gettimeofday(&tv, NULL);
	tv.tv_usec = 1000000;
	EXPECT_ERR("settimeofday of a microsecond count of a second", syscall(SYS_settimeofday, &tv, NULL), EINVAL);
	tv.tv_usec = -1;
	EXPECT_ERR("a negative one", syscall(SYS_settimeofday, &tv, NULL), EINVAL);
	EXPECT_ERR("from a bad pointer", syscall(SYS_settimeofday, BAD, NULL), EFAULT);
	tv.tv_usec = 0;
	EXPECT_ERR("a zone from a bad pointer", syscall(SYS_settimeofday, &tv, BAD), EFAULT);
	tz.minuteswest = 15 * 60 + 1;
	EXPECT_ERR("a zone 15 hours and a minute west", syscall(SYS_settimeofday, &tv, &tz), EINVAL);
	tz.minuteswest = 0;
	EXPECT_STATUS("without privilege", in_child(settime_unprivileged, NULL), "exited 0");

	clock_gettime(CLOCK_REALTIME, &ts);
	time_t before = ts.tv_sec;
	ts.tv_sec += 86400;
	EXPECT_OK("clock_settime a day ahead", syscall(SYS_clock_settime, CLOCK_REALTIME, &ts));
	clock_gettime(CLOCK_REALTIME, &now);
	EXPECT_TRUE("clock_gettime follows", now.tv_sec >= before + 86400 && now.tv_sec < before + 86400 + 60);
	EXPECT_TRUE("time() follows", time(NULL) >= before + 86400);
	gettimeofday(&tv, NULL);
	EXPECT_TRUE("gettimeofday follows", tv.tv_sec >= before + 86400);
	int fd = open("clock.file", O_CREAT | O_WRONLY, 0644);
	SETUP(fd);
	struct stat st;
	SETUP(fstat(fd, &st));
	EXPECT_TRUE("a new file's times follow", st.st_mtime >= before + 86400 && st.st_mtime <= time(NULL));
	close(fd);
	EXPECT_OK("utimes to now", utimes("clock.file", NULL));
	SETUP(stat("clock.file", &st));
	EXPECT_TRUE("its times follow too", st.st_atime >= before + 86400 && st.st_mtime <= time(NULL));
	unlink("clock.file");
	gettimeofday(&tv, NULL);
	tv.tv_sec -= 86400;
	EXPECT_OK("settimeofday back, with a zone of UTC", syscall(SYS_settimeofday, &tv, &tz));
	EXPECT_TRUE("time() is back", time(NULL) >= before && time(NULL) < before + 60);
	EXPECT_OK("settimeofday with neither", syscall(SYS_settimeofday, NULL, NULL));
}

int main(void)
{
	abi_init();
	prctl_name();
	EXPECT_STATUS("prctl as uid 1000", in_child(not_root_securebits, NULL), "exited 0");
	subreaper();
	sched_attrs();
	close_ranges();
	futimesat_calls();
	robust_lists();
	ioprios();
	hints();
	membarriers();
	owners();
	wall_clock();
	/* Last: no new privileges stays for the rest of the process. */
	prctl_options();
	return abi_done();
}
