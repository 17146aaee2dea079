/*
 * Moving a message of 4 KiB ... 2 MiB from one process to another, with a
 * 1-byte acknowledgement back (so one figure = one message delivered and
 * known to be delivered):
 *   pipe       write() into a pipe, read() out of it (two copies)
 *   vmsplice   vmsplice() the sender's pages into the pipe (no copy on the
 *              send side), read() on the receive side (one copy)
 *   shm_futex  memcpy into a shared mapping, futex wake; the receiver
 *              memcpy's it out (two copies, no system call per byte)
 * The pipe keeps Linux's default capacity (64 KiB), as a plain program
 * gets it.  These are the Linux counterparts of Tender's container IPC
 * (COPY/SHARE/MOVE/SWAP), whose SWAP mode should not grow with size.
 */
#include "spawnutil.h"
#include "futexutil.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>

#define MAX_SIZE (2u << 20)

static char *src;

static void read_full(int fd, char *b, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, b, n);
		if (r <= 0)
			die("read");
		b += r;
		n -= (size_t)r;
	}
}

static void write_full(int fd, const char *b, size_t n)
{
	while (n > 0) {
		ssize_t r = write(fd, b, n);
		if (r <= 0)
			die("write");
		b += r;
		n -= (size_t)r;
	}
}

static void vmsplice_full(int fd, char *b, size_t n)
{
	while (n > 0) {
		struct iovec iov = { b, n };
		ssize_t r = vmsplice(fd, &iov, 1, 0);
		if (r <= 0)
			die("vmsplice");
		b += r;
		n -= (size_t)r;
	}
}

static char *touched_buffer(size_t n)
{
	char *b = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		die("mmap");
	memset(b, 0x5a, n);
	return b;
}

/* pipe and vmsplice differ only in how the sender fills the pipe. */
static void pipe_transfer(const char *metric, int use_vmsplice, size_t size, long iters)
{
	int data[2], ack[2];
	if (pipe(data) != 0 || pipe(ack) != 0)
		die("pipe");
	long total = warmup_count(iters) + iters;
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	char b = 'a';
	if (pid == 0) {
		char *dst = touched_buffer(size);
		for (long i = 0; i < total; i++) {
			read_full(data[0], dst, size);
			write_full(ack[1], &b, 1);
		}
		_exit(0);
	}
	uint64_t t0 = 0;
	for (long i = 0; i < total; i++) {
		if (i == warmup_count(iters))
			t0 = now_ns();
		if (use_vmsplice)
			vmsplice_full(data[1], src, size);
		else
			write_full(data[1], src, size);
		/* The ack also guarantees that vmsplice'd pages were consumed
		 * before the sender could reuse them. */
		read_full(ack[0], &b, 1);
	}
	uint64_t t1 = now_ns();
	reap(pid);
	close(data[0]); close(data[1]); close(ack[0]); close(ack[1]);
	char param[16];
	snprintf(param, sizeof param, "%zu", size);
	report("transfer", metric, param, (double)(t1 - t0) / iters, "ns");
}

static void shm_transfer(size_t size, long iters)
{
	struct ctl { atomic_int ping, pong; } *c;
	c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *shm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED || shm == MAP_FAILED)
		die("mmap");
	memset(shm, 0, size); /* both sides then find the shared pages present */
	long total = warmup_count(iters) + iters;
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		char *dst = touched_buffer(size);
		for (long i = 1; i <= total; i++) {
			futex_await(&c->ping, (int)i);
			memcpy(dst, shm, size);
			futex_post(&c->pong, (int)i);
		}
		_exit(0);
	}
	uint64_t t0 = 0;
	for (long i = 1; i <= total; i++) {
		if (i == warmup_count(iters) + 1)
			t0 = now_ns();
		memcpy(shm, src, size);
		futex_post(&c->ping, (int)i);
		futex_await(&c->pong, (int)i);
	}
	uint64_t t1 = now_ns();
	reap(pid);
	munmap(shm, size);
	munmap(c, 4096);
	char param[16];
	snprintf(param, sizeof param, "%zu", size);
	report("transfer", "shm_futex", param, (double)(t1 - t0) / iters, "ns");
}

/* Whether vmsplice() works here: a system without it (ENOSYS) still gets
 * the other methods measured, and says once what it lacks. */
static int vmsplice_works(void)
{
	int p[2];
	char b = 'v';
	struct iovec iov = { &b, 1 };
	if (pipe(p) != 0)
		die("pipe");
	ssize_t r = vmsplice(p[1], &iov, 1, 0);
	int err = errno;
	close(p[0]);
	close(p[1]);
	if (r == 1)
		return 1;
	printf("BENCH-ERROR,vmsplice,%s\n", strerror(r < 0 ? err : EIO));
	return 0;
}

int main(int argc, char **argv)
{
	/* ITERATIONS applies to 4 KiB messages; larger ones get proportionally
	 * fewer (same bytes moved), never fewer than a floor. */
	struct bench_args a = parse_args(argc, argv, 2000, 4);
	long floor_iters = a.short_mode ? 2 : 16;
	src = touched_buffer(MAX_SIZE);
	int with_vmsplice = vmsplice_works();
	for (size_t size = 4096; size <= MAX_SIZE; size *= 2) {
		long iters = a.iters / (long)(size / 4096);
		if (iters < floor_iters)
			iters = floor_iters;
		pipe_transfer("pipe", 0, size, iters);
		if (with_vmsplice)
			pipe_transfer("vmsplice", 1, size, iters);
		shm_transfer(size, iters);
	}
	return 0;
}
