/*
 * pidfds: pidfd_open, pidfd_send_signal, pidfd_getfd, waitid(P_PIDFD) and
 * poll on a pidfd, with hostile input: bad flags and pids, descriptors that
 * are not pidfds, a thread's tid, siginfo that lies, bad pointers, a pidfd
 * kept after its process ended and after it was reaped (its pid may be
 * another's then), a process of another user. And kcmp, which LTP's
 * pidfd tests use: within a process, between processes, its errors.
 */
#include "abi.h"
#include <poll.h>
#include <pthread.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#define PIDFD_NONBLOCK O_NONBLOCK

static long pidfd_open(pid_t pid, unsigned flags)
{
	return syscall(SYS_pidfd_open, pid, flags);
}

static long pidfd_send_signal(int fd, int sig, siginfo_t *info, unsigned flags)
{
	return syscall(SYS_pidfd_send_signal, fd, sig, info, flags);
}

static long pidfd_getfd(int fd, int target, unsigned flags)
{
	return syscall(SYS_pidfd_getfd, fd, target, flags);
}

enum { KCMP_FILE, KCMP_VM, KCMP_FILES, KCMP_FS, KCMP_SIGHAND, KCMP_IO, KCMP_SYSVSEM, KCMP_EPOLL_TFD, KCMP_TYPES };

static long kcmp(pid_t a, pid_t b, int type, long x, long y)
{
	return syscall(SYS_kcmp, a, b, type, x, y);
}

/* A child that waits for a byte on `r`, then exits with status 3. */
static pid_t waiting_child(int *wr)
{
	int p[2];
	SETUP(pipe(p));
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(p[1]);
		while (read(p[0], &c, 1) == -1 && errno == EINTR)
			;
		_exit(3);
	}
	close(p[0]);
	*wr = p[1];
	return pid;
}

static int poll_now(int fd, int timeout)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	int n = poll(&pf, 1, timeout);
	return n < 0 ? -1 : pf.revents;
}

static void opening(void)
{
	section("pidfd_open");
	int fd = pidfd_open(getpid(), 0);
	EXPECT_TRUE("open self", fd >= 0);
	EXPECT_TRUE("close-on-exec", fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ("blocking", fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	char c;
	EXPECT_ERR("read a pidfd", read(fd, &c, 1), EINVAL);
	EXPECT_EQ("poll self (alive)", poll_now(fd, 0), 0);
	close(fd);
	fd = pidfd_open(getpid(), PIDFD_NONBLOCK);
	EXPECT_TRUE("PIDFD_NONBLOCK sets O_NONBLOCK", fd >= 0 && (fcntl(fd, F_GETFL) & O_NONBLOCK));
	close(fd);
	EXPECT_ERR("pid -1", pidfd_open(-1, 0), EINVAL);
	EXPECT_ERR("pid 0", pidfd_open(0, 0), EINVAL);
	EXPECT_ERR("pid INT_MIN", pidfd_open((pid_t)0x80000000u, 0), EINVAL);
	EXPECT_ERR("flags 1", pidfd_open(getpid(), 1), EINVAL);
	EXPECT_ERR("flags O_CLOEXEC", pidfd_open(getpid(), O_CLOEXEC), EINVAL);
	EXPECT_ERR("no such pid", pidfd_open(4000000, 0), ESRCH);
	fd = pidfd_open(1, 0);
	EXPECT_TRUE("open init", fd >= 0);
	close(fd);

	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	wait_status(gone);
	EXPECT_ERR("reaped child", pidfd_open(gone, 0), ESRCH);
}

static int tid_pipe[2], go_pipe[2];

static void *thread_main(void *arg)
{
	(void)arg;
	pid_t tid = gettid();
	write(tid_pipe[1], &tid, sizeof tid);
	char c;
	read(go_pipe[0], &c, 1);
	return NULL;
}

static void threads(void)
{
	section("a thread's tid");
	SETUP(pipe(tid_pipe));
	SETUP(pipe(go_pipe));
	pthread_t t;
	if (pthread_create(&t, NULL, thread_main, NULL) != 0) {
		say("SETUP FAILED pthread_create");
		exit(2);
	}
	pid_t tid;
	SETUP(read(tid_pipe[0], &tid, sizeof tid));
	EXPECT_ERR("pidfd_open of a thread", pidfd_open(tid, 0), EINVAL);
	EXPECT_EQ("kcmp VM of a thread", kcmp(getpid(), tid, KCMP_VM, 0, 0), 0);
	EXPECT_EQ("kcmp FILES of a thread", kcmp(tid, getpid(), KCMP_FILES, 0, 0), 0);
	write(go_pipe[1], "x", 1);
	pthread_join(t, NULL);
	close(tid_pipe[0]);
	close(tid_pipe[1]);
	close(go_pipe[0]);
	close(go_pipe[1]);
}

static void lifecycle(void)
{
	section("a child's life through its pidfd");
	int wr;
	pid_t child = waiting_child(&wr);
	int fd = pidfd_open(child, 0);
	int nb = pidfd_open(child, PIDFD_NONBLOCK);
	EXPECT_TRUE("open child", fd >= 0 && nb >= 0);
	EXPECT_EQ("poll while it runs", poll_now(fd, 0), 0);
	EXPECT_OK("signal 0", pidfd_send_signal(fd, 0, NULL, 0));
	siginfo_t si;
	memset(&si, 0, sizeof si);
	EXPECT_ERR("waitid nonblocking pidfd", waitid(P_PIDFD, nb, &si, WEXITED), EAGAIN);
	memset(&si, 0xff, sizeof si);
	EXPECT_OK("waitid WNOHANG", waitid(P_PIDFD, fd, &si, WEXITED | WNOHANG));
	EXPECT_EQ("nothing to report", si.si_pid, 0);
	write(wr, "x", 1);
	close(wr);
	EXPECT_EQ("poll waits for the end", poll_now(fd, 10000), POLLIN);
	EXPECT_EQ("poll the other pidfd", poll_now(nb, 0), POLLIN);
	EXPECT_OK("signal a zombie", pidfd_send_signal(fd, SIGUSR1, NULL, 0));
	memset(&si, 0, sizeof si);
	EXPECT_OK("waitid P_PIDFD", waitid(P_PIDFD, fd, &si, WEXITED));
	EXPECT_TRUE("its report", si.si_pid == child && si.si_code == CLD_EXITED && si.si_status == 3);
	EXPECT_ERR("signal after reaping", pidfd_send_signal(fd, SIGUSR1, NULL, 0), ESRCH);
	EXPECT_ERR("waitid after reaping", waitid(P_PIDFD, fd, &si, WEXITED), ECHILD);
	EXPECT_ERR("waitid nonblocking after reaping", waitid(P_PIDFD, nb, &si, WEXITED | WNOHANG), ECHILD);
	EXPECT_TRUE("poll after reaping", poll_now(fd, 0) & POLLIN);
	EXPECT_ERR("getfd after reaping", pidfd_getfd(fd, 0, 0), ESRCH);
	close(fd);
	close(nb);

	section("a killed child");
	child = waiting_child(&wr);
	fd = pidfd_open(child, 0);
	EXPECT_OK("SIGKILL", pidfd_send_signal(fd, SIGKILL, NULL, 0));
	memset(&si, 0, sizeof si);
	EXPECT_OK("waitid P_PIDFD", waitid(P_PIDFD, fd, &si, WEXITED));
	EXPECT_TRUE("killed by SIGKILL", si.si_code == CLD_KILLED && si.si_status == SIGKILL);
	close(wr);
	close(fd);

	section("not a child");
	fd = pidfd_open(1, 0);
	EXPECT_ERR("waitid on init", waitid(P_PIDFD, fd, &si, WEXITED | WNOHANG), ECHILD);
	close(fd);
	EXPECT_ERR("waitid on a bad descriptor", waitid(P_PIDFD, 999, &si, WEXITED), EBADF);
	EXPECT_ERR("waitid on stdout", waitid(P_PIDFD, 1, &si, WEXITED), EBADF);

	section("a pidfd kept across fork");
	child = waiting_child(&wr);
	fd = pidfd_open(child, 0);
	pid_t other = fork();
	if (other == 0) {
		/* The sibling's pidfd: readable here too once it ends. */
		write(wr, "x", 1);
		_exit(poll_now(fd, 10000) == POLLIN ? 0 : 1);
	}
	EXPECT_STATUS("the sibling saw the end", wait_status(other), "exited 0");
	EXPECT_STATUS("the child", wait_status(child), "exited 3");
	close(wr);
	close(fd);
}

static volatile sig_atomic_t got_value;

static void on_usr1(int s, siginfo_t *info, void *uc)
{
	(void)s;
	(void)uc;
	got_value = info->si_code == SI_QUEUE ? info->si_value.sival_int : -1;
}

static int sigwaiter(void *arg)
{
	int wr = *(int *)arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	write(wr, "r", 1);
	siginfo_t si;
	if (sigwaitinfo(&set, &si) != SIGUSR1)
		return 1;
	return si.si_code == SI_QUEUE && si.si_value.sival_int == 42 ? 7 : 2;
}

static void signals(void)
{
	section("pidfd_send_signal");
	int fd = pidfd_open(getpid(), 0);
	int file = open("f", O_RDWR | O_CREAT, 0644);
	int self_dir = open("/proc/self", O_DIRECTORY | O_RDONLY);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = SIGUSR1;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = 777;
	EXPECT_ERR("flags", pidfd_send_signal(fd, SIGUSR1, &si, 1), EINVAL);
	EXPECT_ERR("a file", pidfd_send_signal(file, SIGUSR1, &si, 0), EBADF);
	EXPECT_ERR("no descriptor", pidfd_send_signal(-1, SIGUSR1, &si, 0), EBADF);
	EXPECT_ERR("signo differs", pidfd_send_signal(fd, SIGUSR2, &si, 0), EINVAL);
	EXPECT_ERR("bad siginfo", pidfd_send_signal(fd, SIGUSR1, BAD_PTR, 0), EFAULT);
	EXPECT_ERR("signal 65", pidfd_send_signal(fd, 65, NULL, 0), EINVAL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	got_value = 0;
	EXPECT_OK("SI_QUEUE to itself", pidfd_send_signal(fd, SIGUSR1, &si, 0));
	EXPECT_EQ("its value", got_value, 777);
	got_value = 0;
	si.si_value.sival_int = 778;
	EXPECT_OK("through /proc/self", pidfd_send_signal(self_dir, SIGUSR1, &si, 0));
	EXPECT_EQ("its value", got_value, 778);
	signal(SIGUSR1, SIG_DFL);

	int p[2];
	SETUP(pipe(p));
	pid_t child = spawn_fn(sigwaiter, &p[1]);
	char c;
	SETUP(read(p[0], &c, 1));
	int cfd = pidfd_open(child, 0);
	si.si_code = SI_USER;
	EXPECT_ERR("SI_USER forged for another", pidfd_send_signal(cfd, SIGUSR1, &si, 0), EPERM);
	si.si_code = SI_TKILL;
	EXPECT_ERR("SI_TKILL forged for another", pidfd_send_signal(cfd, SIGUSR1, &si, 0), EPERM);
	si.si_code = SI_QUEUE;
	si.si_value.sival_int = 42;
	EXPECT_OK("SI_QUEUE to a child", pidfd_send_signal(cfd, SIGUSR1, &si, 0));
	/* Its sigwaitinfo takes the signal and it ends; a failure to, no hang. */
	if (poll_now(cfd, 10000) != POLLIN) {
		say("the child did not end");
		kill(child, SIGKILL);
	}
	memset(&si, 0, sizeof si);
	EXPECT_OK("waitid", waitid(P_PIDFD, cfd, &si, WEXITED));
	EXPECT_EQ("the child saw code and value", si.si_status, 7);
	close(cfd);
	close(p[0]);
	close(p[1]);

	section("another user");
	pid_t u = fork();
	if (u == 0) {
		if (setuid(65534) != 0)
			_exit(9);
		int bad = 0;
		/* The parent is root's: no signal, no descriptor. */
		errno = 0;
		if (pidfd_send_signal(fd, SIGUSR1, NULL, 0) != -1 || errno != EPERM)
			bad |= 1;
		errno = 0;
		if (pidfd_getfd(fd, 0, 0) != -1 || errno != EPERM)
			bad |= 2;
		errno = 0;
		if (pidfd_send_signal(self_dir, 0, NULL, 0) != -1 || errno != EPERM)
			bad |= 4;
		_exit(bad);
	}
	EXPECT_STATUS("refused", wait_status(u), "exited 0");
	close(fd);
	close(file);
	close(self_dir);
}

static void getfd(void)
{
	section("pidfd_getfd");
	int fd = pidfd_open(getpid(), 0);
	int file = open("g", O_RDWR | O_CREAT | O_TRUNC, 0644);
	int self_dir = open("/proc/self", O_DIRECTORY | O_RDONLY);
	EXPECT_ERR("flags", pidfd_getfd(fd, file, 1), EINVAL);
	EXPECT_ERR("not a pidfd", pidfd_getfd(file, file, 0), EBADF);
	EXPECT_ERR("a /proc directory", pidfd_getfd(self_dir, file, 0), EBADF);
	EXPECT_ERR("no descriptor", pidfd_getfd(999, file, 0), EBADF);
	EXPECT_ERR("target -1", pidfd_getfd(fd, -1, 0), EBADF);
	EXPECT_ERR("target not open", pidfd_getfd(fd, 999, 0), EBADF);
	int copy = pidfd_getfd(fd, file, 0);
	EXPECT_TRUE("own descriptor", copy >= 0);
	EXPECT_TRUE("close-on-exec", fcntl(copy, F_GETFD) & FD_CLOEXEC);
	write(file, "abc", 3);
	EXPECT_EQ("one description (shared offset)", lseek(copy, 0, SEEK_CUR), 3);

	int wr;
	pid_t child = waiting_child(&wr);
	int cfd = pidfd_open(child, 0);
	kill(child, SIGKILL);
	struct pollfd pf = { .fd = cfd, .events = POLLIN };
	poll(&pf, 1, 10000);
	EXPECT_ERR("an ended process", pidfd_getfd(cfd, 0, 0), ESRCH);
	wait_status(child);
	EXPECT_ERR("a reaped process", pidfd_getfd(cfd, 0, 0), ESRCH);
	close(cfd);
	close(wr);
	close(copy);
	close(file);
	close(fd);
	close(self_dir);
}

static int clone_child(void *arg)
{
	(void)arg;
	return 5;
}

static void cloning(void)
{
	section("clone with CLONE_PIDFD");
	static char stack[65536];
	int pfd = -1;
	long pid = raw_clone(CLONE_PIDFD | SIGCHLD, stack + sizeof stack, &pfd, NULL, 0, clone_child, NULL);
	EXPECT_TRUE("a child and its pidfd", pid > 0 && pfd >= 0);
	EXPECT_TRUE("close-on-exec", fcntl(pfd, F_GETFD) & FD_CLOEXEC);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	EXPECT_OK("waitid through it", waitid(P_PIDFD, pfd, &si, WEXITED));
	EXPECT_TRUE("its child", si.si_pid == pid && si.si_status == 5);
	close(pfd);
	EXPECT_ERR("with CLONE_PARENT_SETTID",
		   raw_clone(CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, stack + sizeof stack, &pfd, NULL, 0,
			     clone_child, NULL),
		   EINVAL);
	EXPECT_ERR("with CLONE_THREAD",
		   raw_clone(CLONE_PIDFD | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM, stack + sizeof stack, &pfd,
			     NULL, 0, clone_child, NULL),
		   EINVAL);
}

static void comparing(void)
{
	section("kcmp");
	int a = open("k", O_RDWR | O_CREAT, 0644);
	int b = dup(a);
	int c = open("k", O_RDWR);
	pid_t me = getpid();
	EXPECT_EQ("a file with itself", kcmp(me, me, KCMP_FILE, a, a), 0);
	EXPECT_EQ("a file and its dup", kcmp(me, me, KCMP_FILE, a, b), 0);
	long d = kcmp(me, me, KCMP_FILE, a, c);
	EXPECT_TRUE("two opens differ", d == 1 || d == 2);
	EXPECT_TRUE("in either order", kcmp(me, me, KCMP_FILE, c, a) == 3 - d);
	for (int t = KCMP_VM; t <= KCMP_SIGHAND; t++)
		EXPECT_EQ("itself", kcmp(me, me, t, 0, 0), 0);
	int wr;
	pid_t child = waiting_child(&wr);
	for (int t = KCMP_VM; t <= KCMP_SIGHAND; t++) {
		long r = kcmp(me, child, t, 0, 0);
		EXPECT_TRUE("a child differs", r == 1 || r == 2);
	}
	EXPECT_ERR("no such pid", kcmp(me, 4000000, KCMP_FILE, a, a), ESRCH);
	EXPECT_ERR("pid 0", kcmp(0, me, KCMP_VM, 0, 0), ESRCH);
	EXPECT_ERR("pid -1", kcmp(me, -1, KCMP_VM, 0, 0), ESRCH);
	EXPECT_ERR("type KCMP_TYPES", kcmp(me, me, KCMP_TYPES, a, a), EINVAL);
	EXPECT_ERR("type -1", kcmp(me, me, -1, a, a), EINVAL);
	EXPECT_ERR("type INT_MAX", kcmp(me, me, 0x7fffffff, a, a), EINVAL);
	EXPECT_ERR("descriptor -1", kcmp(me, me, KCMP_FILE, a, -1), EBADF);
	EXPECT_ERR("descriptor not open", kcmp(me, me, KCMP_FILE, 999, a), EBADF);
	pid_t u = fork();
	if (u == 0) {
		if (setuid(65534) != 0)
			_exit(9);
		errno = 0;
		long r = kcmp(getppid(), getpid(), KCMP_VM, 0, 0);
		_exit(r == -1 && errno == EPERM ? 0 : 1);
	}
	EXPECT_STATUS("another user's", wait_status(u), "exited 0");
	write(wr, "x", 1);
	close(wr);
	wait_status(child);
	close(a);
	close(b);
	close(c);
}

int main(void)
{
	abi_init();
	opening();
	threads();
	lifecycle();
	signals();
	getfd();
	comparing();
	cloning();
	return abi_done();
}
