/*
 * eventfd, timerfd and POSIX timers: counts and their limits, sharing
 * across fork, poll readiness, expirations and the signals timers send,
 * and the errors (bad flags, clocks, ids, pointers and records).
 *
 * Timers are set far from the edge (50 ms, read after they fired), so
 * only counts that every correct kernel gives are printed.
 */
#include "abi.h"

#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
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
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_timer;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
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

int main(void)
{
	abi_init();
	eventfd_tests();
	timerfd_tests();
	posix_timer_tests();
	return abi_done();
}
