/*
 * Small calls of issue 18, third round: CPU times (times, getrusage and
 * wait4's rusage: user time, system time, and those of waited-for
 * children); RLIMIT_CPU's SIGXCPU and SIGKILL; clone with CLONE_PARENT; utimes, futimesat and utimensat
 * without a name; the set-group-id bit of a file made in a set-group-id
 * directory by a maker outside its group (before and after the umask);
 * one read larger than a megabyte; O_NOATIME; and /proc/<pid>/stat's
 * state of a process asleep in a call, in a futex and running. Run as
 * root; the unprivileged checks run in a child with other ids.
 */
#include "abi.h"

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>

#define BAD ((void *)8)

static volatile unsigned long sink;

/* CPU time of the caller, in milliseconds. */
static long cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Spins in user mode until the process has used `ms` of CPU time. */
static void spin_ms(long ms)
{
	long end = cpu_ms() + ms;
	while (cpu_ms() < end)
		for (int i = 0; i < 100000; i++)
			sink += i;
}

/* Makes system calls until times() shows system time, at most 2,000,000. */
static clock_t make_system_time(void)
{
	struct tms t;
	for (int i = 0; i < 2000000; i++) {
		int fd = open("/proc/self/stat", O_RDONLY);
		if (fd >= 0)
			close(fd);
		times(&t);
		if (t.tms_stime > 0)
			break;
	}
	return t.tms_stime;
}

/* ---------------------------------------------------------- CPU times */

static int busy_child(void *arg)
{
	(void)arg;
	spin_ms(60);
	make_system_time();
	return 7;
}

static int cpu_times_fresh(void *arg)
{
	(void)arg;
	struct tms t;
	EXPECT_OK("times", times(&t));
	EXPECT_TRUE("a new process's children used no time", t.tms_cutime == 0 && t.tms_cstime == 0);
	spin_ms(60);
	EXPECT_OK("times after spinning", times(&t));
	EXPECT_TRUE("user time counted", t.tms_utime > 0);
	EXPECT_TRUE("system time counted for system calls", make_system_time() > 0);
	struct rusage ru;
	EXPECT_OK("getrusage(RUSAGE_SELF)", getrusage(RUSAGE_SELF, &ru));
	EXPECT_TRUE("its user time", ru.ru_utime.tv_sec > 0 || ru.ru_utime.tv_usec > 0);
	EXPECT_TRUE("its system time", ru.ru_stime.tv_sec > 0 || ru.ru_stime.tv_usec > 0);
	EXPECT_OK("getrusage(RUSAGE_CHILDREN)", getrusage(RUSAGE_CHILDREN, &ru));
	EXPECT_TRUE("no children's time yet", ru.ru_utime.tv_sec == 0 && ru.ru_utime.tv_usec == 0);

	pid_t pid = spawn_fn(busy_child, NULL);
	int st;
	struct rusage child;
	EXPECT_TRUE("wait4 gives the child", wait4(pid, &st, 0, &child) == pid);
	EXPECT_STATUS("its status", st, "exited 7");
	EXPECT_TRUE("wait4's rusage has its user time", child.ru_utime.tv_sec > 0 || child.ru_utime.tv_usec >= 10000);
	EXPECT_TRUE("and its system time", child.ru_stime.tv_sec > 0 || child.ru_stime.tv_usec > 0);
	EXPECT_OK("times", times(&t));
	EXPECT_TRUE("the waited child's user time", t.tms_cutime > 0);
	EXPECT_TRUE("and system time", t.tms_cstime > 0);
	EXPECT_OK("getrusage(RUSAGE_CHILDREN)", getrusage(RUSAGE_CHILDREN, &ru));
	EXPECT_TRUE("has them too", ru.ru_utime.tv_sec > 0 || ru.ru_utime.tv_usec >= 10000);
	EXPECT_ERR("getrusage(2)", getrusage(2, &ru), EINVAL);
	EXPECT_ERR("getrusage(RUSAGE_SELF, bad)", getrusage(RUSAGE_SELF, BAD), EFAULT);
	EXPECT_ERR("times(bad)", syscall(SYS_times, BAD), EFAULT);
	return 0;
}

static void cpu_times(void)
{
	section("CPU times");
	EXPECT_STATUS("in a fresh child", in_child(cpu_times_fresh, NULL), "exited 0");
}

/* ---------------------------------------------------------- RLIMIT_CPU */

static volatile sig_atomic_t xcpu_seen;
static int *xcpu_report;

static void on_xcpu(int sig)
{
	(void)sig;
	xcpu_seen++;
	*xcpu_report = xcpu_seen;
}

static int cpu_limited(void *arg)
{
	(void)arg;
	signal(SIGXCPU, on_xcpu);
	struct rlimit r = {1, 2};
	if (setrlimit(RLIMIT_CPU, &r) != 0)
		return 1;
	for (;;)
		sink++;
	return 0;
}

static int cpu_limit_inherited(void *arg)
{
	(void)arg;
	struct rlimit r = {1, 3};
	if (setrlimit(RLIMIT_CPU, &r) != 0)
		return 1;
	/* The child starts from no CPU time and has the same limit. */
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			sink++;
	}
	int st = wait_status(pid);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGXCPU ? 0 : 2;
}

static void cpu_limit(void)
{
	section("RLIMIT_CPU");
	xcpu_report = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	SETUP(xcpu_report == MAP_FAILED ? -1 : 0);
	*xcpu_report = 0;
	EXPECT_STATUS("soft 1 s, hard 2 s: killed at the hard limit", in_child(cpu_limited, NULL), "killed by SIGKILL");
	EXPECT_TRUE("after SIGXCPU at the soft one", *xcpu_report >= 1);
	EXPECT_STATUS("a forked child has the limit (SIGXCPU's default kills)", in_child(cpu_limit_inherited, NULL),
		      "exited 0");
	munmap(xcpu_report, 4096);
}

/* ------------------------------------------------------- CLONE_PARENT */

static int report[2];

static int sibling_maker(void *arg)
{
	(void)arg;
	long r = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
	if (r == 0) {
		pid_t ppid = getppid();
		write(report[1], &ppid, sizeof ppid);
		_exit(5);
	}
	if (r < 0)
		return 1;
	pid_t sib = (pid_t)r;
	write(report[1], &sib, sizeof sib);
	/* Not its child: its parent's. */
	errno = 0;
	if (waitpid(sib, NULL, 0) != -1 || errno != ECHILD)
		return 2;
	return 0;
}

static void clone_parent(void)
{
	section("clone(CLONE_PARENT)");
	SETUP(pipe(report));
	pid_t maker = spawn_fn(sibling_maker, NULL);
	pid_t a = 0, b = 0;
	read(report[0], &a, sizeof a);
	read(report[0], &b, sizeof b);
	EXPECT_STATUS("its maker cannot wait for it (ECHILD)", wait_status(maker), "exited 0");
	pid_t sib = a == getpid() ? b : a;
	pid_t seen = a == getpid() ? a : b;
	EXPECT_TRUE("the child's parent is its maker's parent", seen == getpid());
	EXPECT_STATUS("which waits for it", wait_status(sib), "exited 5");
	close(report[0]);
	close(report[1]);
}

/* ---------------------------------------------------- times without a name */

static void nameless_times(void)
{
	section("utimes without a name");
	struct timeval tv[2] = {{1000, 0}, {2000, 0}};
	EXPECT_ERR("utimes(NULL)", utimes(NULL, tv), EFAULT);
	EXPECT_ERR("futimesat(AT_FDCWD, NULL)", syscall(SYS_futimesat, AT_FDCWD, NULL, tv), EFAULT);
	EXPECT_ERR("utimensat(AT_FDCWD, NULL)", syscall(SYS_utimensat, AT_FDCWD, NULL, NULL, 0), EFAULT);
	int fd = open("times.file", O_CREAT | O_RDWR, 0644);
	SETUP(fd);
	EXPECT_OK("utimensat(fd, NULL)", syscall(SYS_utimensat, fd, NULL, NULL, 0));
	EXPECT_ERR("utimensat(fd, NULL, AT_SYMLINK_NOFOLLOW)",
		   syscall(SYS_utimensat, fd, NULL, NULL, AT_SYMLINK_NOFOLLOW), EINVAL);
	EXPECT_OK("futimesat(fd, NULL, times)", syscall(SYS_futimesat, fd, NULL, tv));
	struct stat st;
	SETUP(fstat(fd, &st));
	EXPECT_EQ("which set the access time", st.st_atime, 1000);
	EXPECT_EQ("and the modification time", st.st_mtime, 2000);
	EXPECT_ERR("utimensat(-1, NULL)", syscall(SYS_utimensat, -1, NULL, NULL, 0), EBADF);
	close(fd);
	unlink("times.file");
}

/* ------------------------------------------------------- set-group-id */

static mode_t perm_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_mode & 07777 : 0;
}

static int sgid_as_user(void *arg)
{
	(void)arg;
	SETUP(setegid(1000));
	SETUP(seteuid(1000));
	umask(0);
	int fd = creat("sgid/x", 02755);
	SETUP(fd);
	close(fd);
	EXPECT_EQ("set-gid, group-executable, other group: the bit goes", perm_of("sgid/x"), 0755);
	fd = creat("sgid/nx", 02644);
	SETUP(fd);
	close(fd);
	EXPECT_EQ("not group-executable: it stays", perm_of("sgid/nx"), 02644);
	fd = open("sgid/o", O_CREAT | O_EXCL | O_RDWR, 02771);
	SETUP(fd);
	close(fd);
	EXPECT_EQ("open(O_CREAT) too", perm_of("sgid/o"), 0771);
	umask(S_IXGRP);
	fd = creat("sgid/u", 02777);
	SETUP(fd);
	close(fd);
	EXPECT_EQ("the bit goes before the umask takes group execute", perm_of("sgid/u"), 0767);
	umask(0);
	SETUP(mknod("sgid/fifo", S_IFIFO | 02750, 0));
	EXPECT_EQ("a FIFO made so loses it too", perm_of("sgid/fifo"), 0750);
	SETUP(mkdir("sgid/dir", 0755));
	EXPECT_EQ("a directory gets it from its parent", perm_of("sgid/dir"), 02755);
	struct stat st;
	SETUP(stat("sgid/x", &st));
	EXPECT_EQ("each gets the directory's group", st.st_gid, 4242);
	return 0;
}

static void setgid_files(void)
{
	section("set-group-id in a set-group-id directory");
	SETUP(mkdir("sgid", 0777));
	SETUP(chown("sgid", 0, 4242));
	SETUP(chmod("sgid", 02777));
	EXPECT_STATUS("made by uid 1000", in_child(sgid_as_user, NULL), "exited 0");
	int fd = creat("sgid/root", 02755);
	SETUP(fd);
	close(fd);
	EXPECT_EQ("by root it stays", perm_of("sgid/root"), 02755);
	const char *names[] = {"x", "nx", "o", "u", "fifo", "root"};
	char path[64];
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "sgid/%s", names[i]);
		unlink(path);
	}
	rmdir("sgid/dir");
	rmdir("sgid");
}

/* ------------------------------------------------------ one big read */

#define BIG (3 << 20)
static char big_out[BIG], big_in[BIG];

static void big_read(void)
{
	section("a read of 3 MiB");
	for (int i = 0; i < BIG; i++)
		big_out[i] = (char)(i * 7 + i / 4096);
	int fd = open("big.file", O_CREAT | O_RDWR | O_TRUNC, 0644);
	SETUP(fd);
	EXPECT_EQ("write", write(fd, big_out, BIG), BIG);
	EXPECT_EQ("pread of it all in one call", pread(fd, big_in, BIG, 0), BIG);
	EXPECT_TRUE("the same bytes", memcmp(big_in, big_out, BIG) == 0);
	memset(big_in, 0, BIG);
	SETUP(lseek(fd, 1, SEEK_SET));
	EXPECT_EQ("read from 1 to the end", read(fd, big_in, BIG), BIG - 1);
	EXPECT_TRUE("the same bytes", memcmp(big_in, big_out + 1, BIG - 1) == 0);
	close(fd);
	unlink("big.file");
}

/* ---------------------------------------------------------- O_NOATIME */

static int noatime_as_user(void *arg)
{
	(void)arg;
	SETUP(seteuid(1000));
	EXPECT_ERR("O_NOATIME on another's file", open("atime.file", O_RDONLY | O_NOATIME), EPERM);
	int fd = open("atime.file", O_RDONLY);
	SETUP(fd);
	EXPECT_ERR("F_SETFL O_NOATIME on it", fcntl(fd, F_SETFL, O_NOATIME), EPERM);
	close(fd);
	return 0;
}

static void noatime(void)
{
	section("O_NOATIME");
	int fd = open("atime.file", O_CREAT | O_RDWR | O_TRUNC, 0644);
	SETUP(fd);
	SETUP(write(fd, "abc", 3));
	close(fd);
	struct timespec ts[2] = {{1000, 0}, {2000, 0}};
	SETUP(utimensat(AT_FDCWD, "atime.file", ts, 0));
	char c;
	struct stat st;
	fd = open("atime.file", O_RDONLY | O_NOATIME);
	EXPECT_TRUE("open(O_NOATIME) by its owner", fd >= 0);
	EXPECT_EQ("read", read(fd, &c, 1), 1);
	SETUP(fstat(fd, &st));
	EXPECT_EQ("the access time stays", st.st_atime, 1000);
	EXPECT_TRUE("F_GETFL shows it", fcntl(fd, F_GETFL) & O_NOATIME);
	EXPECT_OK("F_SETFL without it", fcntl(fd, F_SETFL, 0));
	EXPECT_EQ("read", read(fd, &c, 1), 1);
	SETUP(fstat(fd, &st));
	EXPECT_TRUE("now a read moves it (relatime: it was older than the change)", st.st_atime != 1000);
	close(fd);
	EXPECT_STATUS("by uid 1000", in_child(noatime_as_user, NULL), "exited 0");
	unlink("atime.file");
}

/* ---------------------------------------------- /proc/<pid>/stat state */

static char state_of(pid_t pid)
{
	char path[64], text[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (read_text(path, text, sizeof text) != 0)
		return '?';
	char *p = strrchr(text, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Waits (at most 10 s) for `pid` to show `want`; the state last seen. */
static char wait_state(pid_t pid, char want)
{
	char s = '?';
	for (int i = 0; i < 1000; i++) {
		s = state_of(pid);
		if (s == want)
			break;
		usleep(10000);
	}
	return s;
}

static int sleeper(void *arg)
{
	(void)arg;
	pause();
	return 0;
}

static int *futex_word;

static int futex_waiter(void *arg)
{
	(void)arg;
	syscall(SYS_futex, futex_word, FUTEX_WAIT, 0, NULL, NULL, 0);
	return 3;
}

static int spinner(void *arg)
{
	(void)arg;
	for (;;)
		sink++;
	return 0;
}

static void proc_states(void)
{
	section("/proc/<pid>/stat state");
	futex_word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	SETUP(futex_word == MAP_FAILED ? -1 : 0);
	pid_t p = spawn_fn(sleeper, NULL);
	EXPECT_EQ("in pause: sleeping", wait_state(p, 'S'), 'S');
	kill(p, SIGKILL);
	wait_status(p);
	p = spawn_fn(futex_waiter, NULL);
	EXPECT_EQ("in a futex wait: sleeping", wait_state(p, 'S'), 'S');
	__atomic_store_n(futex_word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, futex_word, FUTEX_WAKE, 1, NULL, NULL, 0);
	EXPECT_STATUS("woken", wait_status(p), "exited 3");
	p = spawn_fn(spinner, NULL);
	EXPECT_EQ("spinning: running", wait_state(p, 'R'), 'R');
	kill(p, SIGKILL);
	EXPECT_STATUS("killed", wait_status(p), "killed by SIGKILL");
	munmap(futex_word, 4096);
}

int main(void)
{
	abi_init();
	cpu_times();
	cpu_limit();
	clone_parent();
	nameless_times();
	setgid_files();
	big_read();
	noatime();
	proc_states();
	return abi_done();
}
