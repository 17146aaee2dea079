/*
 * Clocks and sleeping: clock_gettime for every clock (the raw call and the
 * libc one, which may use the vDSO, agree), clock_getres, gettimeofday,
 * time, nanosleep and clock_nanosleep (relative, absolute, in the past),
 * and the errors.  Only relations between readings are printed.
 */
#include "abi.h"

#include <sys/time.h>
#include <time.h>

static long long ns(struct timespec t)
{
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static struct timespec raw_now(int clock)
{
	struct timespec t = { 0, 0 };
	syscall(SYS_clock_gettime, clock, &t);
	return t;
}

static struct timespec later(struct timespec t, long add_ns)
{
	t.tv_nsec += add_ns;
	while (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

static void burn(void)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 20000000; i++)
		x += i;
}

int main(void)
{
	abi_init();
	struct timespec t, a, b;

	section("clock_gettime");
	static const struct {
		int id;
		const char *name;
	} clocks[] = {
		{ CLOCK_REALTIME, "CLOCK_REALTIME" },
		{ CLOCK_MONOTONIC, "CLOCK_MONOTONIC" },
		{ CLOCK_PROCESS_CPUTIME_ID, "CLOCK_PROCESS_CPUTIME_ID" },
		{ CLOCK_THREAD_CPUTIME_ID, "CLOCK_THREAD_CPUTIME_ID" },
		{ CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW" },
		{ CLOCK_REALTIME_COARSE, "CLOCK_REALTIME_COARSE" },
		{ CLOCK_MONOTONIC_COARSE, "CLOCK_MONOTONIC_COARSE" },
		{ CLOCK_BOOTTIME, "CLOCK_BOOTTIME" },
		{ CLOCK_TAI, "CLOCK_TAI" },
	};
	for (unsigned i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
		t.tv_nsec = -1;
		long r = syscall(SYS_clock_gettime, clocks[i].id, &t);
		EXPECT_TRUE(clocks[i].name, r == 0 && t.tv_nsec >= 0 && t.tv_nsec < 1000000000 && t.tv_sec >= 0);
	}
	EXPECT_ERR("clock 10 (none)", syscall(SYS_clock_gettime, 10, &t), EINVAL);
	EXPECT_ERR("clock 100", syscall(SYS_clock_gettime, 100, &t), EINVAL);
	EXPECT_ERR("to a bad pointer", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, BAD_PTR), EFAULT);
	int monotonic = 1;
	struct timespec prev = raw_now(CLOCK_MONOTONIC);
	for (int i = 0; i < 1000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		struct timespec r = raw_now(CLOCK_MONOTONIC);
		monotonic &= ns(prev) <= ns(t) && ns(t) <= ns(r);
		prev = r;
	}
	EXPECT_TRUE("raw and libc CLOCK_MONOTONIC interleaved never go back", monotonic);
	a = raw_now(CLOCK_REALTIME);
	clock_gettime(CLOCK_REALTIME, &t);
	b = raw_now(CLOCK_REALTIME);
	EXPECT_TRUE("libc CLOCK_REALTIME lies between two raw readings", ns(a) <= ns(t) && ns(t) <= ns(b));
	EXPECT_TRUE("CLOCK_REALTIME is after 2024-01-01", a.tv_sec >= 1704067200);
	EXPECT_TRUE("CLOCK_BOOTTIME >= CLOCK_MONOTONIC",
		    ns(raw_now(CLOCK_BOOTTIME)) >= ns(raw_now(CLOCK_MONOTONIC)) - 1000000);
	a = raw_now(CLOCK_PROCESS_CPUTIME_ID);
	struct timespec ta = raw_now(CLOCK_THREAD_CPUTIME_ID);
	burn();
	b = raw_now(CLOCK_PROCESS_CPUTIME_ID);
	EXPECT_TRUE("CPU time grows while computing", ns(b) > ns(a));
	EXPECT_TRUE("thread CPU time too", ns(raw_now(CLOCK_THREAD_CPUTIME_ID)) > ns(ta));
	a = raw_now(CLOCK_PROCESS_CPUTIME_ID);
	struct timespec nap = { 0, 50000000 };
	nanosleep(&nap, NULL);
	b = raw_now(CLOCK_PROCESS_CPUTIME_ID);
	EXPECT_TRUE("and hardly while sleeping 50 ms (< 25 ms)", ns(b) - ns(a) < 25000000);

	section("clock_getres");
	struct timespec res;
	syscall(SYS_clock_getres, CLOCK_MONOTONIC, &res);
	say("CLOCK_MONOTONIC: %ld s %ld ns", (long)res.tv_sec, res.tv_nsec);
	syscall(SYS_clock_getres, CLOCK_REALTIME, &res);
	say("CLOCK_REALTIME: %ld s %ld ns", (long)res.tv_sec, res.tv_nsec);
	syscall(SYS_clock_getres, CLOCK_PROCESS_CPUTIME_ID, &res);
	say("CLOCK_PROCESS_CPUTIME_ID: %ld s %ld ns", (long)res.tv_sec, res.tv_nsec);
	syscall(SYS_clock_getres, CLOCK_MONOTONIC_COARSE, &res);
	/* One tick: Debian's kernel runs at 250 Hz. */
	say("CLOCK_MONOTONIC_COARSE: %ld s %ld ns", (long)res.tv_sec, res.tv_nsec);
	EXPECT_OK("clock_getres with a NULL result", syscall(SYS_clock_getres, CLOCK_MONOTONIC, NULL));
	EXPECT_ERR("an unknown clock", syscall(SYS_clock_getres, 100, &res), EINVAL);

	section("gettimeofday and time");
	struct timeval tv;
	struct timezone tz = { 99, 99 };
	a = raw_now(CLOCK_REALTIME);
	EXPECT_OK("gettimeofday", syscall(SYS_gettimeofday, &tv, &tz));
	b = raw_now(CLOCK_REALTIME);
	EXPECT_TRUE("tv_usec below 10^6", tv.tv_usec >= 0 && tv.tv_usec < 1000000);
	long long us = tv.tv_sec * 1000000LL + tv.tv_usec;
	EXPECT_TRUE("between two CLOCK_REALTIME readings", ns(a) / 1000 <= us && us <= ns(b) / 1000);
	EXPECT_TRUE("the time zone is UTC, no DST", tz.tz_minuteswest == 0 && tz.tz_dsttime == 0);
	EXPECT_OK("gettimeofday(NULL, NULL)", syscall(SYS_gettimeofday, NULL, NULL));
	EXPECT_ERR("to a bad pointer", syscall(SYS_gettimeofday, BAD_PTR, NULL), EFAULT);
	time_t secs = 0;
	/* time() reads the clock as of the last tick: CLOCK_REALTIME_COARSE's
	 * seconds, which may lag CLOCK_REALTIME's by one. */
	a = raw_now(CLOCK_REALTIME_COARSE);
	long r = syscall(SYS_time, &secs);
	b = raw_now(CLOCK_REALTIME_COARSE);
	EXPECT_TRUE("time returns the seconds and stores them, as CLOCK_REALTIME_COARSE",
		    r == secs && a.tv_sec <= r && r <= b.tv_sec);

	section("nanosleep");
	a = raw_now(CLOCK_MONOTONIC);
	struct timespec req = { 0, 20000000 };
	EXPECT_OK("20 ms", nanosleep(&req, NULL));
	b = raw_now(CLOCK_MONOTONIC);
	EXPECT_TRUE("at least 20 ms passed", ns(b) - ns(a) >= 20000000);
	struct timespec zero = { 0, 0 };
	EXPECT_OK("0 s", nanosleep(&zero, NULL));
	struct timespec bad = { 0, 1000000000 };
	EXPECT_ERR("tv_nsec 10^9", syscall(SYS_nanosleep, &bad, NULL), EINVAL);
	bad.tv_nsec = -1;
	EXPECT_ERR("tv_nsec -1", syscall(SYS_nanosleep, &bad, NULL), EINVAL);
	struct timespec neg = { -1, 0 };
	EXPECT_ERR("tv_sec -1", syscall(SYS_nanosleep, &neg, NULL), EINVAL);
	EXPECT_ERR("from a bad pointer", syscall(SYS_nanosleep, BAD_PTR, NULL), EFAULT);

	section("clock_nanosleep");
	a = raw_now(CLOCK_MONOTONIC);
	EXPECT_OK("relative 20 ms on CLOCK_MONOTONIC",
		  syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &req, NULL));
	b = raw_now(CLOCK_MONOTONIC);
	EXPECT_TRUE("at least 20 ms passed", ns(b) - ns(a) >= 20000000);
	struct timespec until = later(raw_now(CLOCK_MONOTONIC), 30000000);
	EXPECT_OK("TIMER_ABSTIME 30 ms ahead", syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL));
	EXPECT_TRUE("woke at or after the deadline", ns(raw_now(CLOCK_MONOTONIC)) >= ns(until));
	/* The moment just read is past when the call is made: CLOCK_MONOTONIC's
	 * origin is unspecified (Linux's boot), so no fixed value is sure to be. */
	a = raw_now(CLOCK_MONOTONIC);
	struct timespec past = a;
	EXPECT_OK("TIMER_ABSTIME in the past", syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL));
	b = raw_now(CLOCK_MONOTONIC);
	/* Generous: an emulated machine on a busy host can lose the CPU a while. */
	EXPECT_TRUE("returns at once (< 500 ms)", ns(b) - ns(a) < 500000000);
	struct timespec rt = later(raw_now(CLOCK_REALTIME), 10000000);
	EXPECT_OK("TIMER_ABSTIME on CLOCK_REALTIME", syscall(SYS_clock_nanosleep, CLOCK_REALTIME, TIMER_ABSTIME, &rt, NULL));
	EXPECT_OK("on CLOCK_BOOTTIME", syscall(SYS_clock_nanosleep, CLOCK_BOOTTIME, 0, &zero, NULL));
	EXPECT_ERR("on CLOCK_THREAD_CPUTIME_ID", syscall(SYS_clock_nanosleep, CLOCK_THREAD_CPUTIME_ID, 0, &req, NULL),
		   EOPNOTSUPP);
	EXPECT_ERR("on an unknown clock", syscall(SYS_clock_nanosleep, 100, 0, &req, NULL), EINVAL);
	bad.tv_nsec = 1000000000;
	EXPECT_ERR("tv_nsec 10^9", syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &bad, NULL), EINVAL);

	section("setting clocks");
	struct timespec now = raw_now(CLOCK_MONOTONIC);
	EXPECT_ERR("clock_settime of CLOCK_MONOTONIC", syscall(SYS_clock_settime, CLOCK_MONOTONIC, &now), EINVAL);
	pid_t c = fork();
	if (c == 0) {
		setuid(1000);
		struct timespec n = raw_now(CLOCK_REALTIME);
		_exit(syscall(SYS_clock_settime, CLOCK_REALTIME, &n) == -1 && errno == EPERM ? 0 : 1);
	}
	EXPECT_STATUS("clock_settime of CLOCK_REALTIME by uid 1000 (EPERM)", wait_status(c), "exited 0");
	return abi_done();
}
