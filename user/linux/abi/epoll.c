/*
 * epoll beyond the basics: edge-triggered entries over pipes (reported at
 * a change, not while ready), sets inside sets (a set is readable while an
 * entry of it is ready), EPOLLHUP and EPOLLERR when another process closes
 * the other end while we wait, fairness when more entries are ready than
 * fit the buffer, a wait held in the personality shown as sleeping in
 * /proc and ended by a signal, epoll_pwait's mask, one edge waking the
 * waiters of several processes.
 */
#include "abi.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

static char state_of(pid_t pid)
{
	char path[64], text[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (read_text(path, text, sizeof text) < 0)
		return '?';
	char *p = strrchr(text, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static char wait_for_state(pid_t pid, char want)
{
	char s = '?';
	for (int i = 0; i < 5000 && (s = state_of(pid)) != want; i++)
		usleep(1000);
	return s;
}

static int wait1(int ep, struct epoll_event *ev, int ms)
{
	memset(ev, 0, sizeof *ev);
	return epoll_wait(ep, ev, 1, ms);
}

static void edge_triggered(void)
{
	section("EPOLLET over a pipe");
	int p[2];
	SETUP(pipe2(p, O_NONBLOCK));
	EXPECT_EQ("F_SETPIPE_SZ to a page", fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = 0 };
	EXPECT_OK("add the read end", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	ev = (struct epoll_event){ .events = EPOLLOUT | EPOLLET, .data.u32 = 1 };
	EXPECT_OK("add the write end", epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev));
	char buf[4096];
	memset(buf, 'a', sizeof buf);
	EXPECT_EQ("fill it", write(p[1], buf, sizeof buf), 4096);
	EXPECT_ERR("then it is full", write(p[1], buf, sizeof buf), EAGAIN);
	EXPECT_EQ("one event", wait1(ep, &ev, 0), 1);
	EXPECT_TRUE("the read end's EPOLLIN", ev.data.u32 == 0 && ev.events == EPOLLIN);
	EXPECT_EQ("not again while unchanged", wait1(ep, &ev, 0), 0);
	EXPECT_EQ("read half", read(p[0], buf, 2048), 2048);
	EXPECT_EQ("still full to a writer: nothing", wait1(ep, &ev, 0), 0);
	EXPECT_EQ("read the rest", read(p[0], buf, 2048), 2048);
	EXPECT_EQ("empty: one event", wait1(ep, &ev, 0), 1);
	EXPECT_TRUE("the write end's EPOLLOUT", ev.data.u32 == 1 && ev.events == EPOLLOUT);
	EXPECT_EQ("and no more", wait1(ep, &ev, 0), 0);
	EXPECT_EQ("a byte written", write(p[1], "x", 1), 1);
	EXPECT_EQ("an edge for the reader", wait1(ep, &ev, 0), 1);
	EXPECT_TRUE("EPOLLIN of the read end", ev.data.u32 == 0 && ev.events == EPOLLIN);
	EXPECT_EQ("another byte, not read: a new edge", write(p[1], "y", 1), 1);
	EXPECT_EQ("reported again", wait1(ep, &ev, 0), 1);
	EXPECT_TRUE("EPOLLIN of the read end again", ev.data.u32 == 0 && ev.events == EPOLLIN);
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLONESHOT, .data.u32 = 0 };
	EXPECT_OK("MOD to EPOLLONESHOT", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
	EXPECT_EQ("reported once", wait1(ep, &ev, 0), 1);
	EXPECT_EQ("then disabled", wait1(ep, &ev, 0), 0);
	close(ep);
	close(p[0]);
	close(p[1]);
}

static void nested(void)
{
	section("sets inside sets");
	int p[2];
	SETUP(pipe(p));
	for (int depth = 2; depth <= 5; depth++) {
		int eps[5], prev = p[0];
		for (int i = 0; i < depth; i++) {
			eps[i] = epoll_create1(0);
			struct epoll_event ev = { .events = EPOLLIN, .data.fd = prev };
			SETUP(epoll_ctl(eps[i], EPOLL_CTL_ADD, prev, &ev));
			prev = eps[i];
		}
		struct epoll_event ev;
		char name[80];
		snprintf(name, sizeof name, "depth %d: the outermost set, nothing ready", depth);
		EXPECT_EQ(name, wait1(eps[depth - 1], &ev, 0), 0);
		SETUP(write(p[1], "x", 1));
		int good = 1;
		for (int i = depth - 1; i >= 0; i--) {
			int want = i > 0 ? eps[i - 1] : p[0];
			if (wait1(eps[i], &ev, 1000) != 1 || ev.data.fd != want || !(ev.events & EPOLLIN))
				good = 0;
		}
		snprintf(name, sizeof name, "depth %d: each level reports the one below", depth);
		EXPECT_TRUE(name, good);
		char c;
		SETUP(read(p[0], &c, 1));
		snprintf(name, sizeof name, "depth %d: drained, the outermost is quiet", depth);
		EXPECT_EQ(name, wait1(eps[depth - 1], &ev, 0), 0);
		for (int i = 0; i < depth; i++)
			close(eps[i]);
	}
	/* A set waiting on a set wakes when the inner one's pipe gets a byte
	 * from another process. */
	int inner = epoll_create1(0), outer = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 5 };
	SETUP(epoll_ctl(inner, EPOLL_CTL_ADD, p[0], &ev));
	ev.data.u32 = 6;
	SETUP(epoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev));
	pid_t c = fork();
	if (c == 0) {
		usleep(50000);
		_exit(write(p[1], "z", 1) == 1 ? 0 : 1);
	}
	EXPECT_EQ("a wait on the outer set ends at the byte", wait1(outer, &ev, 5000), 1);
	EXPECT_EQ("with the inner set's data", ev.data.u32, 6);
	wait_status(c);
	char b;
	SETUP(read(p[0], &b, 1));
	close(inner);
	close(outer);
	close(p[0]);
	close(p[1]);
}

static void hangups(void)
{
	section("the other end closed while we wait");
	int p[2];
	SETUP(pipe(p));
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 3 };
	SETUP(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	pid_t c = fork();
	if (c == 0) {
		close(p[1]);
		int n = wait1(ep, &ev, 5000);
		_exit(n == 1 && ev.data.u32 == 3 && (ev.events & EPOLLHUP) ? 0 : 1);
	}
	EXPECT_EQ("the waiter sleeps", wait_for_state(c, 'S'), 'S');
	close(p[1]);
	EXPECT_STATUS("the last writer gone: EPOLLHUP", wait_status(c), "exited 0");
	close(p[0]);
	close(ep);

	SETUP(pipe(p));
	char buf[4096];
	memset(buf, 'a', sizeof buf);
	struct pollfd pf = { .fd = p[1], .events = POLLOUT };
	do
		SETUP(write(p[1], buf, sizeof buf));
	while (poll(&pf, 1, 0) > 0);
	ep = epoll_create1(0);
	ev = (struct epoll_event){ .events = EPOLLOUT, .data.u32 = 4 };
	SETUP(epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev));
	c = fork();
	if (c == 0) {
		close(p[0]);
		int n = wait1(ep, &ev, 5000);
		_exit(n == 1 && ev.data.u32 == 4 && (ev.events & EPOLLERR) ? 0 : 1);
	}
	EXPECT_EQ("the waiter on a full pipe sleeps", wait_for_state(c, 'S'), 'S');
	close(p[0]);
	EXPECT_STATUS("the last reader gone: EPOLLERR", wait_status(c), "exited 0");
	close(p[1]);
	close(ep);
}

static void fairness(void)
{
	section("more ready than fit");
	enum { N = 13, MAX = 3, ROUNDS = 4 };
	int p[N][2], ep = epoll_create1(0);
	for (int i = 0; i < N; i++) {
		SETUP(pipe(p[i]));
		SETUP(write(p[i][1], "x", 1));
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = i };
		SETUP(epoll_ctl(ep, EPOLL_CTL_ADD, p[i][0], &ev));
	}
	int count[N] = { 0 }, got = 0, full = 1;
	while (got < N * ROUNDS) {
		struct epoll_event evs[MAX];
		int n = epoll_wait(ep, evs, MAX, 0);
		if (n != MAX) {
			full = 0;
			break;
		}
		for (int i = 0; i < n && got < N * ROUNDS; i++, got++)
			count[evs[i].data.u64 % N]++;
	}
	EXPECT_TRUE("every wait filled the buffer", full);
	int even = 1;
	for (int i = 0; i < N; i++)
		even &= count[i] == ROUNDS;
	EXPECT_TRUE("each entry reported as often (round robin)", even);
	for (int i = 0; i < N; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	close(ep);
}

static void on_usr1(int s)
{
	(void)s;
}

static void signals(void)
{
	section("signals");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	SETUP(sigaction(SIGUSR1, &sa, NULL));
	int ep = epoll_create1(0);
	pid_t c = fork();
	if (c == 0) {
		struct epoll_event ev;
		int n = epoll_wait(ep, &ev, 1, -1);
		_exit(n == -1 && errno == EINTR ? 0 : 1);
	}
	EXPECT_EQ("a wait on an empty set sleeps", wait_for_state(c, 'S'), 'S');
	kill(c, SIGUSR1);
	EXPECT_STATUS("a signal ends it with EINTR", wait_status(c), "exited 0");

	int s[2];
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	struct epoll_event ev = { .events = EPOLLIN };
	SETUP(epoll_ctl(ep, EPOLL_CTL_ADD, s[0], &ev));
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	int ready[2];
	SETUP(pipe(ready));
	for (int masked = 1; masked >= 0; masked--) {
		pid_t parent = getpid();
		c = fork();
		if (c == 0) {
			/* Past the parent's fork (a process in a call being
			 * served may read as sleeping), then in its wait. */
			char r;
			if (read(ready[0], &r, 1) != 1)
				_exit(2);
			wait_for_state(parent, 'S');
			kill(parent, SIGUSR1);
			usleep(10000);
			_exit(write(s[1], "w", 1) == 1 ? 0 : 1);
		}
		SETUP(write(ready[1], "r", 1));
		errno = 0;
		int n = epoll_pwait(ep, &ev, 1, -1, masked ? &usr1 : NULL);
		if (masked) {
			EXPECT_EQ("epoll_pwait with SIGUSR1 masked: the byte", n, 1);
		} else {
			EXPECT_EQ("without a mask: interrupted", n, -1);
			EXPECT_STR("errno", errname(errno), "EINTR");
		}
		char b;
		SETUP(read(s[0], &b, 1));
		wait_status(c);
	}
	close(s[0]);
	close(s[1]);
	close(ready[0]);
	close(ready[1]);
	close(ep);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGUSR1, &sa, NULL);
}

static void many_waiters(void)
{
	section("one edge, waiters in several processes");
	enum { N = 4 };
	int p[2], go[2];
	SETUP(pipe(p));
	SETUP(pipe(go));
	pid_t kids[N];
	for (int i = 0; i < N; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			int ep = epoll_create1(0);
			struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
			epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
			SETUP(write(go[1], "r", 1));
			_exit(wait1(ep, &ev, 5000) == 1 ? 0 : 1);
		}
		char b;
		SETUP(read(go[0], &b, 1));
	}
	int asleep = 1;
	for (int i = 0; i < N; i++)
		asleep &= wait_for_state(kids[i], 'S') == 'S';
	EXPECT_TRUE("all sleep", asleep);
	SETUP(write(p[1], "x", 1));
	int woken = 0;
	for (int i = 0; i < N; i++)
		woken += wait_status(kids[i]) == 0;
	EXPECT_EQ("one byte woke them all", woken, N);
	close(p[0]);
	close(p[1]);
	close(go[0]);
	close(go[1]);
}

/* A pipe's capacity measured as programs do (write until poll says it is
 * full), then written whole while epoll reports the ends. */
static char back[1 << 16], out[1 << 16], in[1 << 16];

static void capacity(void)
{
	section("a pipe filled and emptied whole");
	int p[2];
	SETUP(pipe(p));
	char page[4096];
	memset(page, 'a', sizeof page);
	int size = 0, n;
	struct pollfd pf = { .fd = p[1], .events = POLLOUT };
	do {
		size += write(p[1], page, sizeof page);
		n = poll(&pf, 1, 1);
	} while (n > 0);
	EXPECT_EQ("capacity in writes of a page", size, 65536);
	EXPECT_EQ("read it back at once", read(p[0], back, size), size);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
	SETUP(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	ev = (struct epoll_event){ .events = EPOLLOUT, .data.u32 = 1 };
	SETUP(epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev));
	EXPECT_EQ("empty: the write end only", wait1(ep, &ev, -1), 1);
	EXPECT_TRUE("EPOLLOUT of the write end", ev.data.u32 == 1 && ev.events == EPOLLOUT);
	memset(out, 'b', size);
	EXPECT_EQ("fill it from the stack", write(p[1], out, size), size);
	EXPECT_EQ("full: the read end only", wait1(ep, &ev, -1), 1);
	EXPECT_TRUE("EPOLLIN of the read end", ev.data.u32 == 0 && ev.events == EPOLLIN);
	EXPECT_EQ("read it onto the stack", read(p[0], in, size), size);
	EXPECT_TRUE("the bytes", memcmp(in, out, size) == 0);
	close(ep);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	abi_init();
	capacity();
	edge_triggered();
	nested();
	fairness();
	hangups();
	signals();
	many_waiters();
	return abi_done();
}
