/*
 * eventfd, timerfd, POSIX timers, interval timers and signalfd: counts and their limits,
 * sharing across fork, poll readiness, expirations and the signals timers
 * send, signals read as records, and the errors (bad flags, clocks, ids,
 * pointers and records).
 *
 * Timers are set far from the edge (50 ms, read after they fired), so
 * only counts that every correct kernel gives are printed.
 */
#include "abi.h"

#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>

#define BAD ((void *)16)

static volatile int got_sig, got_code, got_value;

static void on_timer(int s, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = s;
	got_code = si->si_code;
	got_value = si->si_value.sival_int;
}

static int readable(int fd)
{
	struct pollfd p = {fd, POLLIN | POLLOUT, 0};
	if (poll(&p, 1, 0) < 0)
		return -1;
	return p.revents;
}

static void sleep_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
	while (nanosleep(&t, &t) == -1 && errno == EINTR)
		;
}

static void eventfd_tests(void)
{
	section("eventfd");
	uint64_t v = 0;
	int fd = eventfd(3, EFD_NONBLOCK);
	EXPECT_TRUE("eventfd", fd >= 0);
	EXPECT_EQ("poll: readable and writable", readable(fd), POLLIN | POLLOUT);
	EXPECT_EQ("read", read(fd, &v, 8), 8);
	EXPECT_EQ("the count", v, 3);
	EXPECT_ERR("read at zero, nonblocking", read(fd, &v, 8), EAGAIN);
	EXPECT_EQ("poll: writable only", readable(fd), POLLOUT);
	EXPECT_ERR("a 4-byte read", read(fd, &v, 4), EINVAL);
	v = UINT64_MAX;
	EXPECT_ERR("writing 2^64-1", write(fd, &v, 8), EINVAL);
	v = UINT64_MAX - 1;
	EXPECT_EQ("writing 2^64-2", write(fd, &v, 8), 8);
	v = 1;
	EXPECT_ERR("one more, nonblocking", write(fd, &v, 8), EAGAIN);
	EXPECT_EQ("poll: readable only", readable(fd), POLLIN);
	EXPECT_ERR("a write from a bad pointer", write(fd, BAD, 8), EFAULT);
	EXPECT_EQ("read it back", read(fd, &v, 8), 8);
	EXPECT_TRUE("2^64-2", v == UINT64_MAX - 1);
	close(fd);

	fd = eventfd(2, EFD_SEMAPHORE | EFD_CLOEXEC);
	EXPECT_EQ("FD_CLOEXEC", fcntl(fd, F_GETFD), FD_CLOEXEC);
	read(fd, &v, 8);
	EXPECT_EQ("semaphore mode reads 1", v, 1);
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t w = 5;
		_exit(write(fd, &w, 8) == 8 ? 0 : 1);
	}
	EXPECT_STATUS("a child adds 5 to the shared count", wait_status(pid), "exited 0");
	pid = fork();
	if (pid == 0) {
		uint64_t r;
		for (int i = 0; i < 6; i++)
			read(fd, &r, 8);
		/* The count is 0 now: this read waits for the parent's write. */
		_exit(read(fd, &r, 8) == 8 && r == 1 ? 0 : 1);
	}
	sleep_ms(50);
	v = 1;
	write(fd, &v, 8);
	EXPECT_STATUS("a child waits in read until a write", wait_status(pid), "exited 0");
	close(fd);
	EXPECT_ERR("unknown flags", eventfd(0, 0x8), EINVAL);
}

static void timerfd_tests(void)
{
	section("timerfd");
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	EXPECT_TRUE("timerfd_create", fd >= 0);
	uint64_t n = 0;
	EXPECT_ERR("read before it fires", read(fd, &n, 8), EAGAIN);
	struct itimerspec its = {{0, 0}, {0, 50 * 1000000}}, old;
	EXPECT_OK("timerfd_settime 50 ms", timerfd_settime(fd, 0, &its, NULL));
	struct itimerspec cur;
	EXPECT_OK("timerfd_gettime", timerfd_gettime(fd, &cur));
	EXPECT_TRUE("it has at most 50 ms to go", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec > 0 &&
							  cur.it_value.tv_nsec <= 50 * 1000000);
	sleep_ms(100);
	EXPECT_EQ("poll: readable", readable(fd) & POLLIN, POLLIN);
	EXPECT_EQ("read", read(fd, &n, 8), 8);
	EXPECT_EQ("one expiration", n, 1);
	EXPECT_OK("timerfd_gettime", timerfd_gettime(fd, &cur));
	EXPECT_TRUE("disarmed", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
	EXPECT_ERR("a write", write(fd, &n, 8), EINVAL);
	struct itimerspec bad = {{0, 0}, {0, 1000000000}};
	EXPECT_ERR("tv_nsec 10^9", timerfd_settime(fd, 0, &bad, NULL), EINVAL);
	EXPECT_ERR("a bad record", timerfd_settime(fd, 0, BAD, NULL), EFAULT);
	EXPECT_ERR("unknown flags", timerfd_settime(fd, 4, &its, NULL), EINVAL);
	its.it_value.tv_sec = 100;
	timerfd_settime(fd, 0, &its, NULL);
	its.it_value.tv_sec = 0;
	its.it_value.tv_nsec = 0;
	EXPECT_OK("disarm, the old setting back", timerfd_settime(fd, 0, &its, &old));
	EXPECT_TRUE("it had about 100 s to go", old.it_value.tv_sec >= 99);
	EXPECT_ERR("timerfd_gettime of a pipe", timerfd_gettime(0, &cur), EINVAL);
	EXPECT_ERR("of a closed descriptor", timerfd_gettime(99, &cur), EBADF);
	EXPECT_ERR("an unknown clock", timerfd_create(99, 0), EINVAL);
	EXPECT_ERR("CLOCK_PROCESS_CPUTIME_ID", timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0), EINVAL);
	EXPECT_ERR("unknown flags", timerfd_create(CLOCK_MONOTONIC, 1), EINVAL);
	close(fd);
}

static void posix_timer_tests(void)
{
	section("POSIX timers");
	handle_signal_info(SIGUSR1, on_timer, 0);
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGUSR1;
	ev.sigev_value.sival_int = 42;
	timer_t t;
	EXPECT_OK("timer_create", timer_create(CLOCK_MONOTONIC, &ev, &t));
	struct itimerspec its = {{0, 0}, {0, 50 * 1000000}}, cur;
	EXPECT_OK("timer_settime 50 ms", timer_settime(t, 0, &its, NULL));
	sleep_ms(150);
	EXPECT_STR("the signal", signame(got_sig), "SIGUSR1");
	EXPECT_EQ("si_code SI_TIMER", got_code, SI_TIMER);
	EXPECT_EQ("si_value", got_value, 42);
	EXPECT_EQ("timer_getoverrun", timer_getoverrun(t), 0);
	EXPECT_OK("timer_gettime", timer_gettime(t, &cur));
	EXPECT_TRUE("disarmed", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
	struct itimerspec bad = {{0, 0}, {0, -1}};
	EXPECT_ERR("a negative tv_nsec", timer_settime(t, 0, &bad, NULL), EINVAL);
	EXPECT_OK("timer_delete", timer_delete(t));

	ev.sigev_notify = SIGEV_NONE;
	EXPECT_OK("SIGEV_NONE", timer_create(CLOCK_REALTIME, &ev, &t));
	got_sig = 0;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	its.it_value = now;
	its.it_value.tv_nsec = 0;
	its.it_value.tv_sec += 100;
	EXPECT_OK("absolute, 100 s ahead", timer_settime(t, TIMER_ABSTIME, &its, NULL));
	EXPECT_OK("timer_gettime", timer_gettime(t, &cur));
	EXPECT_TRUE("98 to 100 s to go", cur.it_value.tv_sec >= 98 && cur.it_value.tv_sec <= 100);
	its.it_value.tv_sec = 0;
	its.it_value.tv_nsec = 1000000;
	timer_settime(t, 0, &its, NULL);
	sleep_ms(50);
	EXPECT_EQ("it expired without a signal", got_sig, 0);
	EXPECT_OK("timer_delete", timer_delete(t));

	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = 0;
	EXPECT_ERR("signal 0", timer_create(CLOCK_MONOTONIC, &ev, &t), EINVAL);
	ev.sigev_signo = SIGUSR1;
	ev.sigev_notify = 99;
	EXPECT_ERR("an unknown sigev_notify", timer_create(CLOCK_MONOTONIC, &ev, &t), EINVAL);
	EXPECT_ERR("an unknown clock", syscall(SYS_timer_create, 99, NULL, &t), EINVAL);
	EXPECT_ERR("a bad sigevent", syscall(SYS_timer_create, CLOCK_MONOTONIC, BAD, &t), EFAULT);
	EXPECT_ERR("a bad id pointer", syscall(SYS_timer_create, CLOCK_MONOTONIC, NULL, BAD), EFAULT);
	EXPECT_ERR("timer_delete of an unknown id", syscall(SYS_timer_delete, 12345), EINVAL);
	EXPECT_ERR("timer_gettime of an unknown id", syscall(SYS_timer_gettime, 12345, &cur), EINVAL);
	int id = -1;
	EXPECT_OK("a default timer", syscall(SYS_timer_create, CLOCK_MONOTONIC, NULL, &id));
	pid_t pid = fork();
	if (pid == 0)
		_exit(syscall(SYS_timer_gettime, id, &cur) == -1 && errno == EINVAL ? 0 : 1);
	EXPECT_STATUS("a child has not its parent's timers", wait_status(pid), "exited 0");
	EXPECT_OK("timer_delete", syscall(SYS_timer_delete, id));
}

static volatile int vt_count;

static void on_vtalrm(int s, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = s;
	got_code = si->si_code;
	vt_count++;
}

/* Virtual time passes only while the process runs: spin, not sleep, until
 * `want` signals came, for at most 20 s of wall time (a timer that never
 * fires is a failed check, not a hang). */
static void spin_for_signals(int want)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (vt_count < want) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 20)
			break;
	}
}

static void itimer_tests(void)
{
	section("interval timers (ITIMER_VIRTUAL, ITIMER_PROF)");
	struct itimerval v, old;
	struct itimerval hundred = {{100, 0}, {100, 0}}, zero = {{0, 0}, {0, 0}};
	EXPECT_OK("getitimer ITIMER_VIRTUAL", getitimer(ITIMER_VIRTUAL, &v));
	EXPECT_TRUE("never set: disarmed", v.it_value.tv_sec == 0 && v.it_value.tv_usec == 0 &&
						   v.it_interval.tv_sec == 0 && v.it_interval.tv_usec == 0);
	EXPECT_OK("setitimer ITIMER_PROF 100 s", setitimer(ITIMER_PROF, &hundred, NULL));
	EXPECT_OK("getitimer ITIMER_PROF", getitimer(ITIMER_PROF, &v));
	EXPECT_TRUE("its interval", v.it_interval.tv_sec == 100 && v.it_interval.tv_usec == 0);
	EXPECT_TRUE("99 to 100 s to go", v.it_value.tv_sec >= 99 && v.it_value.tv_sec <= 100);
	pid_t pid = fork();
	if (pid == 0) {
		getitimer(ITIMER_PROF, &v);
		_exit(v.it_value.tv_sec == 0 && v.it_interval.tv_sec == 0 ? 0 : 1);
	}
	EXPECT_STATUS("a child has not its parent's interval timers", wait_status(pid), "exited 0");
	EXPECT_OK("disarm, the old setting back", setitimer(ITIMER_PROF, &zero, &old));
	EXPECT_TRUE("the old interval", old.it_interval.tv_sec == 100 && old.it_interval.tv_usec == 0);
	EXPECT_OK("getitimer ITIMER_PROF", getitimer(ITIMER_PROF, &v));
	EXPECT_TRUE("disarmed", v.it_value.tv_sec == 0 && v.it_value.tv_usec == 0);

	handle_signal_info(SIGVTALRM, on_vtalrm, 0);
	got_sig = got_code = vt_count = 0;
	struct itimerval tick = {{0, 10000}, {0, 10000}};
	EXPECT_OK("ITIMER_VIRTUAL every 10 ms", setitimer(ITIMER_VIRTUAL, &tick, NULL));
	spin_for_signals(3);
	setitimer(ITIMER_VIRTUAL, &zero, NULL);
	EXPECT_TRUE("three signals while it runs", vt_count >= 3);
	EXPECT_STR("the signal", signame(got_sig), "SIGVTALRM");
	EXPECT_EQ("si_code SI_KERNEL", got_code, SI_KERNEL);

	EXPECT_ERR("setitimer of an unknown timer", syscall(SYS_setitimer, 3, &hundred, NULL), EINVAL);
	EXPECT_ERR("getitimer of an unknown timer", syscall(SYS_getitimer, 3, &v), EINVAL);
	EXPECT_ERR("a bad new value", syscall(SYS_setitimer, ITIMER_PROF, BAD, NULL), EFAULT);
	EXPECT_ERR("getitimer to a bad pointer", syscall(SYS_getitimer, ITIMER_PROF, BAD), EFAULT);
	struct itimerval usec = {{0, 0}, {0, 1000000}};
	EXPECT_ERR("a million microseconds", syscall(SYS_setitimer, ITIMER_PROF, &usec, NULL), EINVAL);
	EXPECT_OK("getitimer ITIMER_PROF", getitimer(ITIMER_PROF, &v));
	EXPECT_TRUE("still disarmed", v.it_value.tv_sec == 0 && v.it_value.tv_usec == 0);
}

static void signalfd_tests(void)
{
	section("signalfd");
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, &old);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, SIGUSR1);
	int fd = signalfd(-1, &one, SFD_NONBLOCK);
	EXPECT_TRUE("signalfd(-1, {SIGUSR1}, SFD_NONBLOCK)", fd >= 0);
	EXPECT_EQ("no FD_CLOEXEC", fcntl(fd, F_GETFD), 0);
	EXPECT_TRUE("O_RDWR | O_NONBLOCK", (fcntl(fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK)) == (O_RDWR | O_NONBLOCK));
	struct stat st;
	fstat(fd, &st);
	EXPECT_EQ("fstat: no file type", st.st_mode & S_IFMT, 0);
	struct signalfd_siginfo r[2];
	EXPECT_ERR("a read with nothing pending", read(fd, r, sizeof r[0]), EAGAIN);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	EXPECT_EQ("poll: not readable", poll(&p, 1, 0), 0);
	kill(getpid(), SIGUSR1);
	EXPECT_EQ("poll after kill(self, SIGUSR1)", poll(&p, 1, 0), 1);
	EXPECT_EQ("revents", p.revents, POLLIN);
	EXPECT_ERR("a read of 127 bytes", read(fd, r, 127), EINVAL);
	EXPECT_EQ("a read of one record", read(fd, r, sizeof r[0]), 128);
	EXPECT_EQ("ssi_signo", r[0].ssi_signo, SIGUSR1);
	EXPECT_EQ("ssi_code SI_USER", r[0].ssi_code, SI_USER);
	EXPECT_TRUE("ssi_pid is ours, ssi_uid root", r[0].ssi_pid == (uint32_t)getpid() && r[0].ssi_uid == 0);
	sigset_t pend;
	sigpending(&pend);
	EXPECT_TRUE("taken: no longer pending", !sigismember(&pend, SIGUSR1));
	kill(getpid(), SIGUSR2);
	EXPECT_ERR("SIGUSR2 is not in the set", read(fd, r, sizeof r), EAGAIN);
	EXPECT_EQ("a new set for the same descriptor", signalfd(fd, &set, 0), fd);
	kill(getpid(), SIGUSR1);
	EXPECT_EQ("two pending, room for two", read(fd, r, sizeof r), 256);
	EXPECT_TRUE("lowest first", r[0].ssi_signo == SIGUSR1 && r[1].ssi_signo == SIGUSR2);
	union sigval v = { .sival_int = 42 };
	sigqueue(getpid(), SIGUSR2, v);
	kill(getpid(), SIGUSR1);
	EXPECT_EQ("two pending, room for one", read(fd, r, sizeof r[0]), 128);
	EXPECT_EQ("the lowest", r[0].ssi_signo, SIGUSR1);
	EXPECT_EQ("then the other", read(fd, r, sizeof r), 128);
	EXPECT_TRUE("sigqueue's code and value", r[0].ssi_code == SI_QUEUE && r[0].ssi_int == 42 && r[0].ssi_ptr == 42);
	EXPECT_ERR("write", write(fd, r, sizeof r[0]), EINVAL);
	EXPECT_EQ("lseek does nothing", lseek(fd, 5, SEEK_SET), 0);
	pid_t c = fork();
	if (c == 0) {
		sleep_ms(100);
		kill(getppid(), SIGUSR2);
		_exit(0);
	}
	int blocking = signalfd(-1, &set, SFD_CLOEXEC);
	EXPECT_EQ("SFD_CLOEXEC", fcntl(blocking, F_GETFD), FD_CLOEXEC);
	EXPECT_EQ("a blocking read waits for another process's kill", read(blocking, r, sizeof r), 128);
	EXPECT_TRUE("its signal and sender", r[0].ssi_signo == SIGUSR2 && r[0].ssi_pid == (uint32_t)c);
	waitpid(c, NULL, 0);
	int file = open("sfd-file", O_RDWR | O_CREAT, 0600);
	EXPECT_ERR("a new set for a file", signalfd(file, &set, 0), EINVAL);
	close(file);
	EXPECT_ERR("a closed descriptor", signalfd(999, &set, 0), EBADF);
	EXPECT_ERR("unknown flags", signalfd(-1, &set, 1), EINVAL);
	EXPECT_ERR("a set of 4 bytes", syscall(SYS_signalfd4, -1, &set, 4, 0), EINVAL);
	EXPECT_ERR("a set at a bad pointer", syscall(SYS_signalfd4, -1, BAD, 8, 0), EFAULT);
	EXPECT_ERR("signalfd (no flags) with a set of 4 bytes", syscall(SYS_signalfd, -1, &set, 4), EINVAL);
	kill(getpid(), SIGUSR1);
	EXPECT_ERR("a read into a bad pointer", read(fd, BAD, 128), EFAULT);
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
	close(blocking);
	close(fd);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int main(void)
{
	abi_init();
	eventfd_tests();
	timerfd_tests();
	posix_timer_tests();
	itimer_tests();
	signalfd_tests();
	return abi_done();
}
