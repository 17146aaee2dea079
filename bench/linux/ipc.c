/*
 * Round trip of one byte between two processes (parent -> child -> parent):
 *   pipe   two pipes, one per direction
 *   unix   a connected AF_UNIX stream socket pair
 *   futex  a shared page with one word per direction, FUTEX_WAIT/FUTEX_WAKE
 *          (shared, not private, futexes: the processes are distinct)
 * These are the Linux counterparts of Tessera's synchronous IPC
 * (rendezvous call/acc/endr, callsync).  With one CPU each round trip is
 * two context switches plus the transport.
 */
#include "spawnutil.h"
#include "futexutil.h"
#include <sys/mman.h>
#include <sys/socket.h>

static void xwrite(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		die("write");
}

static void xread(int fd, void *b, size_t n)
{
	if (read(fd, b, n) != (ssize_t)n)
		die("read");
}

/* Timed loop shared by the two fd-based transports: fd pair (to, from). */
static void fd_roundtrips(const char *metric, int p_out, int p_in, int c_in, int c_out, long iters)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	char b = 'x';
	long total = warmup_count(iters) + iters;
	if (pid == 0) {
		for (long i = 0; i < total; i++) {
			xread(c_in, &b, 1);
			xwrite(c_out, &b, 1);
		}
		_exit(0);
	}
	for (long i = 0; i < warmup_count(iters); i++) {
		xwrite(p_out, &b, 1);
		xread(p_in, &b, 1);
	}
	uint64_t t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		xwrite(p_out, &b, 1);
		xread(p_in, &b, 1);
	}
	uint64_t t1 = now_ns();
	reap(pid);
	report("ipc", metric, "1", (double)(t1 - t0) / iters, "ns");
}

static void futex_roundtrips(long iters)
{
	/* ping/pong carry a sequence number; data is the payload byte. */
	struct shared { atomic_int ping, pong; volatile char data; } *s;
	s = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		die("mmap");
	long total = warmup_count(iters) + iters;
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		for (long i = 1; i <= total; i++) {
			futex_await(&s->ping, (int)i);
			s->data++;
			futex_post(&s->pong, (int)i);
		}
		_exit(0);
	}
	uint64_t t0 = 0;
	for (long i = 1; i <= total; i++) {
		if (i == warmup_count(iters) + 1)
			t0 = now_ns();
		s->data = 'x';
		futex_post(&s->ping, (int)i);
		futex_await(&s->pong, (int)i);
	}
	uint64_t t1 = now_ns();
	reap(pid);
	munmap(s, 4096);
	report("ipc", "futex", "1", (double)(t1 - t0) / iters, "ns");
}

int main(int argc, char **argv)
{
	struct bench_args a = parse_args(argc, argv, 5000, 10);

	int down[2], up[2];
	if (pipe(down) != 0 || pipe(up) != 0)
		die("pipe");
	fd_roundtrips("pipe", down[1], up[0], down[0], up[1], a.iters);
	close(down[0]); close(down[1]); close(up[0]); close(up[1]);

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair");
	fd_roundtrips("unix", sv[0], sv[0], sv[1], sv[1], a.iters);
	close(sv[0]); close(sv[1]);

	futex_roundtrips(a.iters);
	return 0;
}
