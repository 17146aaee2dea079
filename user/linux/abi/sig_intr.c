/*
 * Signals that arrive during a blocking call: which calls return EINTR and
 * which SA_RESTART restarts (read, wait4 and futex are restarted; nanosleep,
 * poll, select and pause never are), the remaining time nanosleep reports,
 * a stop and continue that the blocked call does not notice, and SIGPIPE
 * with EPIPE.
 *
 * The signal comes from a second thread that keeps sending it until the
 * main thread's call has returned, so the outcome does not depend on which
 * comes first: the blocking call or the first signal.
 */
#include "abi.h"

#include <poll.h>
#include <pthread.h>
#include <sys/select.h>
#include <time.h>

static volatile int handled, main_done, release_after;
static pid_t main_tid;
static int wake_fd = -1;
static int *wake_word;

static void on_usr1(int s)
{
	(void)s;
	handled++;
}

/* Sends SIGUSR1 to the main thread every 20 ms until it is done; after
 * `release_after` deliveries (if set), writes a byte to wake_fd. */
static void *pester(void *arg)
{
	(void)arg;
	int released = 0;
	while (!__atomic_load_n(&main_done, __ATOMIC_SEQ_CST)) {
		syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
		usleep(20000);
		if (release_after && !released && handled >= release_after) {
			if (wake_word) {
				__atomic_store_n(wake_word, 1, __ATOMIC_SEQ_CST);
				syscall(SYS_futex, wake_word, 1 /* FUTEX_WAKE */, 1, NULL, NULL, 0);
			} else {
				write(wake_fd, "x", 1);
			}
			released = 1;
		}
	}
	return NULL;
}

static pthread_t start(int restart, int release)
{
	handle_signal(SIGUSR1, on_usr1, restart ? SA_RESTART : 0);
	handled = 0;
	main_done = 0;
	release_after = release;
	main_tid = syscall(SYS_gettid);
	pthread_t t;
	pthread_create(&t, NULL, pester, NULL);
	return t;
}

static void stop(pthread_t t)
{
	__atomic_store_n(&main_done, 1, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
}

static int child_sleeps(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

static int reader(void *arg)
{
	int fd = (int)(long)arg;
	char c;
	ssize_t n = read(fd, &c, 1);
	return n == 1 && c == 'z' ? 0 : 1;
}

static int write_to_closed_pipe(void *arg)
{
	(void)arg;
	int p[2];
	pipe(p);
	close(p[0]);
	write(p[1], "x", 1);
	return 0;
}

/* Sends `sig` to its parent after 50 ms, then exits. */
static pid_t send_later(int sig)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		usleep(50000);
		kill(parent, sig);
		_exit(0);
	}
	return pid;
}

static void sigwait_cases(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	struct timespec ts = { 0, 50000000 };
	siginfo_t si;
	EXPECT_ERR("nothing comes in time", sigtimedwait(&set, &si, &ts), EAGAIN);

	sigprocmask(SIG_BLOCK, &set, &old);
	handled = 0;
	pid_t pid = send_later(SIGUSR1);
	memset(&si, 0, sizeof si);
	EXPECT_EQ("a blocked signal of the set, sent while waiting", sigwaitinfo(&set, &si), SIGUSR1);
	EXPECT_TRUE("its sender and code", si.si_pid == pid && si.si_code == SI_USER);
	EXPECT_EQ("no handler ran", handled, 0);
	waitpid(pid, NULL, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);

	pid = send_later(SIGUSR1);
	EXPECT_EQ("an unblocked signal of the set is taken too", sigwaitinfo(&set, NULL), SIGUSR1);
	EXPECT_EQ("and its handler does not run", handled, 0);
	waitpid(pid, NULL, 0);

	pid = send_later(SIGUSR2);
	/* The call itself: musl's sigtimedwait calls again after EINTR. */
	EXPECT_ERR("a signal outside the set interrupts",
		   syscall(SYS_rt_sigtimedwait, &set, NULL, &(struct timespec){ 2, 0 }, 8), EINTR);
	EXPECT_EQ("and its handler ran", handled, 1);
	waitpid(pid, NULL, 0);
	signal(SIGUSR2, SIG_DFL);
}

int main(void)
{
	abi_init();
	int p[2];
	SETUP(pipe(p));
	char c;
	pthread_t t;

	section("read from an empty pipe");
	t = start(0, 0);
	EXPECT_ERR("without SA_RESTART", read(p[0], &c, 1), EINTR);
	stop(t);
	wake_fd = p[1];
	t = start(1, 3);
	EXPECT_EQ("with SA_RESTART: restarted until data came", read(p[0], &c, 1), 1);
	stop(t);
	EXPECT_TRUE("after several handlers ran", handled >= 3);

	section("calls SA_RESTART does not restart");
	t = start(1, 0);
	struct timespec req = { 100, 0 }, rem = { 0, 0 };
	EXPECT_ERR("nanosleep", nanosleep(&req, &rem), EINTR);
	stop(t);
	/* Linux computes the rest from the timer's latest expiry, which adds the
	 * thread's timer slack (50 us): interrupted at once, it reports a little
	 * more than was asked. */
	long left_us = rem.tv_sec * 1000000L + rem.tv_nsec / 1000;
	EXPECT_TRUE("it reports the time left: more than 0, at most the request plus 50 us",
		    left_us > 0 && left_us <= 100000050L);
	t = start(1, 0);
	EXPECT_ERR("clock_nanosleep", syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &req, NULL), EINTR);
	stop(t);
	struct pollfd pfd = { p[0], POLLIN, 0 };
	t = start(1, 0);
	EXPECT_ERR("poll", poll(&pfd, 1, -1), EINTR);
	stop(t);
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	t = start(1, 0);
	EXPECT_ERR("select", select(p[0] + 1, &rs, NULL, NULL, NULL), EINTR);
	stop(t);
	t = start(1, 0);
	EXPECT_ERR("pause", pause(), EINTR);
	stop(t);

	section("calls SA_RESTART restarts");
	pid_t child = spawn_fn(child_sleeps, NULL);
	t = start(1, 0);
	usleep(100000);
	kill(child, SIGKILL);
	int st;
	EXPECT_TRUE("wait4 returns the child, not EINTR", wait4(child, &st, 0, NULL) == child);
	stop(t);
	child = spawn_fn(child_sleeps, NULL);
	t = start(0, 0);
	EXPECT_ERR("wait4 without SA_RESTART", wait4(child, &st, 0, NULL), EINTR);
	stop(t);
	kill(child, SIGKILL);
	wait_status(child);
	int word = 0;
	t = start(1, 0);
	struct timespec timeout = { 5, 0 };
	/* With a timeout the wait is not restarted: its time would be lost. */
	EXPECT_ERR("futex wait with a timeout, SA_RESTART",
		   syscall(SYS_futex, &word, 0 /* FUTEX_WAIT */, 0, &timeout, NULL, 0), EINTR);
	stop(t);
	wake_word = &word;
	t = start(1, 3);
	EXPECT_EQ("futex wait without a timeout, SA_RESTART: restarted until woken",
		  syscall(SYS_futex, &word, 0, 0, NULL, NULL, 0), 0);
	stop(t);
	EXPECT_TRUE("after several handlers ran", handled >= 3);
	wake_word = NULL;
	word = 0;
	t = start(0, 0);
	EXPECT_ERR("futex wait without SA_RESTART", syscall(SYS_futex, &word, 0, 0, NULL, NULL, 0), EINTR);
	stop(t);

	section("stopped and continued while blocked");
	int q[2];
	SETUP(pipe(q));
	child = spawn_fn(reader, (void *)(long)q[0]);
	usleep(50000);
	kill(child, SIGSTOP);
	waitpid(child, &st, WUNTRACED);
	EXPECT_STATUS("the reader", st, "stopped by SIGSTOP");
	kill(child, SIGCONT);
	write(q[1], "z", 1);
	/* No handler ran, so the read just goes on. */
	EXPECT_STATUS("its read completed after SIGCONT", wait_status(child), "exited 0");

	section("sigtimedwait");
	sigwait_cases();

	section("SIGPIPE and EPIPE");
	EXPECT_STATUS("write to a pipe without readers", in_child(write_to_closed_pipe, NULL), "killed by SIGPIPE");
	signal(SIGPIPE, SIG_IGN);
	int r[2];
	SETUP(pipe(r));
	close(r[0]);
	EXPECT_ERR("with SIGPIPE ignored", write(r[1], "x", 1), EPIPE);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGPIPE, &sa, NULL);
	handled = 0;
	EXPECT_ERR("with a handler", write(r[1], "x", 1), EPIPE);
	EXPECT_EQ("which ran once", handled, 1);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	sigprocmask(SIG_BLOCK, &s, NULL);
	EXPECT_ERR("with SIGPIPE blocked", write(r[1], "x", 1), EPIPE);
	sigpending(&s);
	EXPECT_TRUE("and then pending", sigismember(&s, SIGPIPE));
	close(r[1]);
	return abi_done();
}
