/*
 * Null system call and clock read.
 *
 *   getpid         syscall(SYS_getpid): always enters the kernel (libc may
 *                  not cache it; syscall() bypasses any wrapper).
 *   clock_gettime  CLOCK_MONOTONIC through libc; musl uses the vDSO when the
 *                  kernel offers one, so this is normally a user-mode read.
 *   getppid        syscall(SYS_getppid): on Tessera's Linux personality the
 *                  kernel answers from the parent the shared server set in
 *                  the process's record at its first one (which went to the
 *                  supervisor and the shared server: two rendezvous).
 *   fstat          of this program's own file, open: on Tessera the kernel
 *                  answers it from the attributes the file server keeps
 *                  in the file's kernel cache (the first asks the file
 *                  server, through the supervisor).
 *   fcntl_getfd    fcntl(F_GETFD) of that file: on Tessera a call the
 *                  supervisor serves alone (the descriptor table is its):
 *                  one rendezvous, the cost of the supervisor's path.
 *   signal         kill(getpid(), SIGUSR1) caught by a handler that
 *                  returns (lmbench's lat_sig catch): the send, the
 *                  delivery on the way back to user mode, the handler's
 *                  frame and rt_sigreturn.
 */
#include "bench.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile long caught;

static void on_usr1(int s)
{
	(void)s;
	caught++;
}

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

	/* Calls served away from the kernel on Tessera: fewer of them. */
	long few = a.iters / 10 > 0 ? a.iters / 10 : 1;
	for (long i = 0; i < warmup_count(few); i++)
		sink += syscall(SYS_getppid);
	t0 = now_ns();
	for (long i = 0; i < few; i++)
		sink += syscall(SYS_getppid);
	t1 = now_ns();
	report("syscall", "getppid", "", (double)(t1 - t0) / few, "ns");

	int fd = open(argv[0], O_RDONLY);
	if (fd < 0)
		die("syscall: open of the program's own file");
	struct stat st;
	for (long i = 0; i < warmup_count(few); i++)
		sink += fstat(fd, &st);
	t0 = now_ns();
	for (long i = 0; i < few; i++) {
		fstat(fd, &st);
		sink += st.st_size;
	}
	t1 = now_ns();
	report("syscall", "fstat", "", (double)(t1 - t0) / few, "ns");

	for (long i = 0; i < warmup_count(few); i++)
		sink += fcntl(fd, F_GETFD);
	t0 = now_ns();
	for (long i = 0; i < few; i++)
		sink += fcntl(fd, F_GETFD);
	t1 = now_ns();
	report("syscall", "fcntl_getfd", "", (double)(t1 - t0) / few, "ns");
	close(fd);

	struct sigaction sa = { .sa_handler = on_usr1 };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		die("syscall: sigaction");
	pid_t me = getpid();
	for (long i = 0; i < warmup_count(few); i++)
		kill(me, SIGUSR1);
	caught = 0;
	t0 = now_ns();
	for (long i = 0; i < few; i++)
		kill(me, SIGUSR1);
	t1 = now_ns();
	if (caught != few)
		die("syscall: a signal was not caught");
	report("syscall", "signal", "", (double)(t1 - t0) / few, "ns");
	(void)sink;
	return 0;
}
