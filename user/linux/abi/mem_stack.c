/*
 * The main thread's stack: as large as RLIMIT_STACK (8 MiB by default),
 * filled as it is touched, copied on write by fork, shown once as [stack]
 * in /proc/self/maps; a program that goes past its limit dies of SIGSEGV
 * (or catches it on its alternate stack). The limit is read at exec: a
 * smaller or larger one set before an execve is the new program's.
 */
#include "abi.h"
#include <sys/resource.h>

#define KIB 1024L
#define MIB (1024L * 1024L)

/*
 * Uses `depth` bytes of stack in frames of 16 KiB, each written at both
 * ends; returns a sum the compiler cannot know, so no frame is left out.
 */
__attribute__((noinline)) static long grow(long depth)
{
	volatile char buf[16 * KIB];
	buf[0] = (char)depth;
	buf[sizeof buf - 1] = 1;
	long below = depth > (long)sizeof buf ? grow(depth - (long)sizeof buf) : 0;
	return below + buf[0] + buf[sizeof buf - 1];
}

/* Without end: the stack's limit stops it (nothing sets `never`). */
static volatile int never;

__attribute__((noinline)) static long grow_forever(long n)
{
	volatile char buf[16 * KIB];
	buf[0] = (char)n;
	if (never)
		return 0;
	return grow_forever(n + 1) + buf[0];
}

static int uses(void *bytes)
{
	grow((long)bytes);
	return 0;
}

static int overflows(void *unused)
{
	(void)unused;
	return (int)grow_forever(0);
}

static void overflow_caught(void *unused)
{
	(void)unused;
	grow_forever(0);
}

/* One frame of `bytes`, written from its lowest address up (epoll_wait01
 * keeps ~192 KiB of arrays in main's frame). */
__attribute__((noinline)) static int one_frame(long bytes)
{
	char *big = __builtin_alloca(bytes);
	memset(big, 7, bytes);
	return big[bytes / 2] == 7 && big[0] == 7 && big[bytes - 1] == 7;
}

static int one_frame_in_child(void *bytes)
{
	return one_frame((long)bytes) ? 0 : 1;
}

/* Writes `mark` at `depth` bytes down, forks there: the child reads the
 * parent's bytes and writes its own; the parent's stay. */
__attribute__((noinline)) static int fork_deep(long depth)
{
	volatile char buf[16 * KIB];
	if (depth > (long)sizeof buf)
		return fork_deep(depth - (long)sizeof buf) + (buf[0] = 0);
	memset((char *)buf, 'p', sizeof buf);
	pid_t pid = fork();
	if (pid == 0) {
		int same = buf[0] == 'p' && buf[sizeof buf - 1] == 'p';
		memset((char *)buf, 'c', sizeof buf);
		/* And deeper than the parent ever went. */
		grow(MIB);
		_exit(same && buf[100] == 'c' ? 0 : 1);
	}
	int st = wait_status(pid);
	EXPECT_STATUS("the child read the parent's deep stack and wrote its own", st, "exited 0");
	EXPECT_TRUE("the parent's bytes stay", buf[0] == 'p' && buf[sizeof buf - 1] == 'p');
	return 0;
}

/* The kernel writes into stack never touched yet (a read into the deep
 * end of a large array): the stack grows as at the program's own touch. */
__attribute__((noinline)) static long read_deep(int fd)
{
	char buf[MIB];
	long n = read(fd, buf, 16);
	return n == 16 && memcmp(buf, "sixteen bytes ok", 16) == 0 ? n : -1;
}

static int stack_lines(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[512];
	int n = 0;
	while (fgets(line, sizeof line, f))
		if (strstr(line, "[stack]"))
			n++;
	fclose(f);
	return n;
}

/* Run again by execve with the limit `limit` set first: reports, through
 * the exit status, whether `ok_bytes` fit (bit 0) and whether `too_many`
 * killed a child with SIGSEGV (bit 1). */
static int as_exec(long ok_bytes, long too_many)
{
	int st = in_child(uses, (void *)ok_bytes);
	int fits = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	int killed = 1;
	if (too_many) {
		st = in_child(uses, (void *)too_many);
		killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
	}
	return fits | killed << 1;
}

static const char *run_with_limit(rlim_t limit, long ok_bytes, long too_many)
{
	static char text[64];
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl = { limit, RLIM_INFINITY };
		if (setrlimit(RLIMIT_STACK, &rl) != 0)
			_exit(100);
		char a[32], b[32];
		snprintf(a, sizeof a, "%ld", ok_bytes);
		snprintf(b, sizeof b, "%ld", too_many);
		char *argv[] = { "mem_stack", "limit", a, b, NULL };
		char *envp[] = { "PATH=/bin", NULL };
		execve(self_exe(), argv, envp);
		_exit(101);
	}
	int st = wait_status(pid);
	if (!WIFEXITED(st))
		return status_text(st);
	int code = WEXITSTATUS(st);
	snprintf(text, sizeof text, "%s, %s", code & 1 ? "fits" : "did not fit",
		 code & 2 ? "past it SIGSEGV" : "past it no SIGSEGV");
	return code >= 100 ? "setup failed" : text;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "limit") == 0)
		return as_exec(atol(argv[2]), atol(argv[3]));
	abi_init();

	section("the limit");
	struct rlimit rl;
	SETUP(getrlimit(RLIMIT_STACK, &rl));
	EXPECT_EQ("RLIMIT_STACK soft, KiB", (long)(rl.rlim_cur / KIB), 8192);
	EXPECT_TRUE("RLIMIT_STACK hard is unlimited", rl.rlim_max == RLIM_INFINITY);

	section("a deep stack");
	int fds[2];
	SETUP(pipe(fds));
	SETUP(write(fds[1], "sixteen bytes ok", 16));
	EXPECT_EQ("read into 1 MiB of stack never touched", read_deep(fds[0]), 16);
	close(fds[0]);
	close(fds[1]);
	EXPECT_EQ("192 KiB in one frame", one_frame(192 * KIB), 1);
	EXPECT_TRUE("1 MiB of frames", grow(MIB) > 0);
	EXPECT_STATUS("6 MiB of frames in a child", in_child(uses, (void *)(6 * MIB)), "exited 0");
	EXPECT_STATUS("one frame of 6 MiB in a child", in_child(one_frame_in_child, (void *)(6 * MIB)),
		      "exited 0");
	EXPECT_EQ("/proc/self/maps: one [stack] line", stack_lines(), 1);

	section("past the limit");
	EXPECT_STATUS("recursion without end", in_child(overflows, NULL), "killed by SIGSEGV");
	EXPECT_STATUS("one frame of 9 MiB", in_child(one_frame_in_child, (void *)(9 * MIB)), "killed by SIGSEGV");
	siginfo_t si;
	int sig = catch_fault(overflow_caught, NULL, &si);
	EXPECT_STR("caught on the alternate stack", signame(sig), "SIGSEGV");
	EXPECT_TRUE("SEGV_MAPERR", si.si_code == SEGV_MAPERR);
	EXPECT_TRUE("and the stack still works", grow(2 * MIB) > 0);

	section("fork");
	fork_deep(3 * MIB);

	section("the limit at exec");
	EXPECT_STR("256 KiB: 128 KiB fits, 1 MiB is too much", run_with_limit(256 * KIB, 128 * KIB, MIB),
		   "fits, past it SIGSEGV");
	EXPECT_STR("32 MiB: 24 MiB fits, 40 MiB is too much", run_with_limit(32 * MIB, 24 * MIB, 40 * MIB),
		   "fits, past it SIGSEGV");
	EXPECT_STR("unlimited: 16 MiB fits", run_with_limit(RLIM_INFINITY, 16 * MIB, 0), "fits, past it SIGSEGV");
	return abi_done();
}
