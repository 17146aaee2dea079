/*
 * Null system call and clock read.
 *
 *   getpid         syscall(SYS_getpid): always enters the kernel (libc may
 *                  not cache it; syscall() bypasses any wrapper).
 *   clock_gettime  CLOCK_MONOTONIC through libc; musl uses the vDSO when the
 *                  kernel offers one, so this is normally a user-mode read.
 */
#include "bench.h"
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	struct bench_args a = parse_args(argc, argv, 100000, 100);
	volatile long sink = 0;

	for (long i = 0; i < warmup_count(a.iters); i++)
		sink += syscall(SYS_getpid);
	uint64_t t0 = now_ns();
	for (long i = 0; i < a.iters; i++)
		sink += syscall(SYS_getpid);
	uint64_t t1 = now_ns();
	report("syscall", "getpid", "", (double)(t1 - t0) / a.iters, "ns");

	struct timespec ts;
	for (long i = 0; i < warmup_count(a.iters); i++)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = now_ns();
	for (long i = 0; i < a.iters; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
	}
	t1 = now_ns();
	report("syscall", "clock_gettime", "", (double)(t1 - t0) / a.iters, "ns");
	(void)sink;
	return 0;
}
