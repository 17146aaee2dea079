/*
 * AF_UNIX sockets with names: bind (a socket file, or an abstract name),
 * listen, accept, connect and their errors, datagrams sent to a name,
 * the names getsockname and getpeername report, SO_PEERCRED, readiness
 * for poll and epoll, a name unlinked under a connection, and sockets
 * between processes (a child, a program started by exec, a child killed
 * while it waits in accept, an accept a signal interrupts), and stream
 * socket pairs: shutdown, EPIPE and SIGPIPE, nonblocking ends, a large
 * transfer, readv and writev, sendmsg and recvmsg, ends shared by fork,
 * poll readiness, a reader killed while it waits.
 *
 * Run as "sock_unix client PATH" it is that separately started program:
 * it connects to PATH and writes a line.
 */
#include "abi.h"

#include <poll.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#define BAD ((void *)16)

static socklen_t path_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	strcpy(a->sun_path, path);
	return offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1;
}

/* An abstract name: a NUL, then `name` (no terminator counted). */
static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path + 1, name, strlen(name));
	return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name);
}

static int bind_path(int s, const char *path)
{
	struct sockaddr_un a;
	socklen_t l = path_addr(&a, path);
	return bind(s, (struct sockaddr *)&a, l);
}

static int connect_path(int s, const char *path)
{
	struct sockaddr_un a;
	socklen_t l = path_addr(&a, path);
	return connect(s, (struct sockaddr *)&a, l);
}

static int listener(const char *path, int backlog)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || bind_path(s, path) < 0 || listen(s, backlog) < 0)
		return -1;
	return s;
}

static int client(const char *path)
{
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	if (c < 0 || connect_path(c, path) < 0)
		return -1;
	return c;
}

static const char *type_of(const char *path)
{
	struct stat st;
	if (stat(path, &st) == -1)
		return errname(errno);
	return S_ISSOCK(st.st_mode) ? "socket" : "other";
}

static volatile sig_atomic_t pipe_signals;

static void on_sigpipe(int s)
{
	(void)s;
	pipe_signals++;
}

/* poll's events of `fd` now, of those asked. */
static int events(int fd, short asked)
{
	struct pollfd p = { fd, asked, 0 };
	return poll(&p, 1, 0) < 0 ? -1 : p.revents;
}

/* Stream socket pairs: what reads and writes their ends, and the rest. */
static void stream_pairs(const char *self)
{
	int sv[2];
	char buf[64];
	section("stream pairs");
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	EXPECT_EQ("F_GETFL", fcntl(sv[0], F_GETFL), O_RDWR);
	EXPECT_EQ("nothing to read: not readable", events(sv[1], POLLIN | POLLOUT), POLLOUT);
	EXPECT_EQ("write", write(sv[0], "hello", 5), 5);
	int n = -1;
	EXPECT_OK("FIONREAD", ioctl(sv[1], FIONREAD, &n));
	EXPECT_EQ("its count", n, 5);
	EXPECT_EQ("readable", events(sv[1], POLLIN | POLLOUT), POLLIN | POLLOUT);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("MSG_PEEK", recv(sv[1], buf, 3, MSG_PEEK), 3);
	EXPECT_EQ("MSG_PEEK again: the same bytes", recv(sv[1], buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT), 5);
	EXPECT_EQ("a short read", read(sv[1], buf, 2), 2);
	EXPECT_EQ("the rest", recv(sv[1], buf + 2, sizeof buf, 0), 3);
	EXPECT_STR("the bytes", buf, "hello");
	struct sockaddr_un from;
	socklen_t fl = sizeof from;
	EXPECT_EQ("sendto with no name", sendto(sv[1], "ab", 2, 0, NULL, 0), 2);
	EXPECT_EQ("recvfrom asking a name", recvfrom(sv[0], buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 2);
	EXPECT_EQ("an unnamed peer's: length 0", fl, 0);
	struct sockaddr_un to;
	socklen_t tl = path_addr(&to, "nowhere");
	EXPECT_ERR("sendto a name on a stream", sendto(sv[0], "x", 1, 0, (struct sockaddr *)&to, tl), EISCONN);
	write(sv[1], "z", 1);
	EXPECT_ERR("MSG_PEEK into a bad buffer", recv(sv[0], BAD, 1, MSG_PEEK), EFAULT);
	EXPECT_ERR("read into a bad buffer", read(sv[0], BAD, 1), EFAULT);
	EXPECT_EQ("the byte stayed", read(sv[0], buf, 1), 1);

	section("stream pairs: readv, writev, sendmsg, recvmsg");
	struct iovec out[3] = { { "one", 3 }, { "", 0 }, { "two", 3 } };
	EXPECT_EQ("writev", writev(sv[0], out, 3), 6);
	char p1[4] = { 0 }, p2[8] = { 0 };
	struct iovec in[2] = { { p1, 2 }, { p2, sizeof p2 - 1 } };
	EXPECT_EQ("readv", readv(sv[1], in, 2), 6);
	EXPECT_STR("the first piece", p1, "on");
	EXPECT_STR("the second", p2, "etwo");
	struct msghdr m;
	memset(&m, 0, sizeof m);
	m.msg_iov = out;
	m.msg_iovlen = 3;
	EXPECT_EQ("sendmsg", sendmsg(sv[1], &m, 0), 6);
	memset(p1, 0, sizeof p1);
	memset(p2, 0, sizeof p2);
	char control[64];
	memset(&m, 0, sizeof m);
	m.msg_name = &from;
	m.msg_namelen = sizeof from;
	m.msg_iov = in;
	m.msg_iovlen = 2;
	m.msg_control = control;
	m.msg_controllen = sizeof control;
	m.msg_flags = -1;
	EXPECT_EQ("recvmsg", recvmsg(sv[0], &m, 0), 6);
	EXPECT_STR("its bytes", p2, "etwo");
	EXPECT_EQ("no name", m.msg_namelen, 0);
	EXPECT_EQ("no ancillary data", m.msg_controllen, 0);
	EXPECT_EQ("no flags", m.msg_flags, 0);
	EXPECT_ERR("readv of too many pieces", readv(sv[0], in, 2000), EINVAL);
	EXPECT_ERR("recvmsg of a bad header", syscall(SYS_recvmsg, sv[0], BAD, 0), EFAULT);

	section("stream pairs: shutdown");
	EXPECT_ERR("shutdown how 3", shutdown(sv[0], 3), EINVAL);
	EXPECT_EQ("write before", write(sv[0], "last", 4), 4);
	EXPECT_OK("shutdown SHUT_WR", shutdown(sv[0], SHUT_WR));
	EXPECT_EQ("the peer: readable, hung up for reading", events(sv[1], POLLIN | POLLRDHUP), POLLIN | POLLRDHUP);
	EXPECT_EQ("the peer reads what was written", read(sv[1], buf, sizeof buf), 4);
	EXPECT_EQ("then end of file", read(sv[1], buf, sizeof buf), 0);
	EXPECT_ERR("write after SHUT_WR", send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	EXPECT_EQ("the other way still goes", write(sv[1], "back", 4), 4);
	EXPECT_EQ("and is read", read(sv[0], buf, sizeof buf), 4);
	EXPECT_EQ("one side shut each way: not hung up", events(sv[1], POLLIN | POLLOUT | POLLRDHUP),
		  POLLIN | POLLOUT | POLLRDHUP);
	close(sv[0]);
	close(sv[1]);
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	EXPECT_OK("shutdown SHUT_RD", shutdown(sv[1], SHUT_RD));
	EXPECT_EQ("shut for reading: readable", events(sv[1], POLLIN | POLLRDHUP), POLLIN | POLLRDHUP);
	EXPECT_ERR("the peer writes to a side shut for reading", send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	EXPECT_EQ("read after SHUT_RD: end of file", read(sv[1], buf, sizeof buf), 0);
	EXPECT_EQ("it still writes", write(sv[1], "w", 1), 1);
	EXPECT_EQ("which the peer reads", read(sv[0], buf, sizeof buf), 1);
	close(sv[0]);
	close(sv[1]);
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	EXPECT_OK("SHUT_RDWR", shutdown(sv[0], SHUT_RDWR));
	EXPECT_EQ("hung up", events(sv[0], POLLIN) & POLLHUP, POLLHUP);
	EXPECT_EQ("the peer too", events(sv[1], POLLIN) & POLLHUP, POLLHUP);
	EXPECT_EQ("the peer reads end of file", read(sv[1], buf, 1), 0);
	EXPECT_OK("shut again", shutdown(sv[0], SHUT_RDWR));
	close(sv[0]);
	close(sv[1]);

	section("stream pairs: EPIPE and SIGPIPE");
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, &old);
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	write(sv[1], "left", 4);
	close(sv[1]);
	EXPECT_EQ("the peer closed: hung up", events(sv[0], POLLIN | POLLOUT | POLLRDHUP),
		  POLLIN | POLLOUT | POLLRDHUP | POLLHUP);
	EXPECT_EQ("what it wrote is still read", read(sv[0], buf, sizeof buf), 4);
	EXPECT_EQ("then end of file", read(sv[0], buf, sizeof buf), 0);
	pipe_signals = 0;
	EXPECT_ERR("write", write(sv[0], "x", 1), EPIPE);
	EXPECT_EQ("SIGPIPE", pipe_signals, 1);
	EXPECT_ERR("writev", writev(sv[0], out, 3), EPIPE);
	EXPECT_EQ("SIGPIPE again", pipe_signals, 2);
	EXPECT_ERR("send MSG_NOSIGNAL", send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	EXPECT_ERR("sendto MSG_NOSIGNAL", sendto(sv[0], "x", 1, MSG_NOSIGNAL, NULL, 0), EPIPE);
	EXPECT_EQ("no signal", pipe_signals, 2);
	EXPECT_ERR("send", send(sv[0], "x", 1, 0), EPIPE);
	EXPECT_EQ("a signal", pipe_signals, 3);
	close(sv[0]);
	sigaction(SIGPIPE, &old, NULL);

	section("stream pairs: nonblocking");
	SETUP(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
	EXPECT_EQ("F_GETFL", fcntl(sv[0], F_GETFL), O_RDWR | O_NONBLOCK);
	EXPECT_EQ("F_GETFD", fcntl(sv[1], F_GETFD), FD_CLOEXEC);
	EXPECT_ERR("read: EAGAIN", read(sv[0], buf, 1), EAGAIN);
	EXPECT_ERR("MSG_PEEK: EAGAIN", recv(sv[0], buf, 1, MSG_PEEK), EAGAIN);
	EXPECT_ERR("readv: EAGAIN", readv(sv[0], in, 2), EAGAIN);
	static char big[65536];
	long total = 0;
	ssize_t r;
	while ((r = write(sv[0], big, sizeof big)) > 0 && total < (64L << 20))
		total += r;
	int e = errno;
	EXPECT_TRUE("writes fill up: EAGAIN", r == -1 && e == EAGAIN);
	EXPECT_TRUE("bounded", total > 0 && total < (64L << 20));
	EXPECT_EQ("full: not writable", events(sv[0], POLLOUT), 0);
	EXPECT_OK("F_SETFL blocking", fcntl(sv[0], F_SETFL, 0));
	EXPECT_EQ("its F_GETFL", fcntl(sv[0], F_GETFL), O_RDWR);
	EXPECT_ERR("MSG_DONTWAIT on a blocking end", recv(sv[0], buf, 1, MSG_DONTWAIT), EAGAIN);
	EXPECT_ERR("send MSG_DONTWAIT, full", send(sv[0], "x", 1, MSG_DONTWAIT), EAGAIN);
	close(sv[0]);
	close(sv[1]);

	section("stream pairs: a large transfer");
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	const long size = 1L << 20;
	pid_t c = fork();
	if (c == 0) {
		close(sv[1]);
		static char chunk[50000];
		long at = 0;
		while (at < size) {
			long k = size - at < (long)sizeof chunk ? size - at : (long)sizeof chunk;
			for (long i = 0; i < k; i++)
				chunk[i] = (char)((at + i) * 7 + (at + i) / 251);
			struct iovec v[2] = { { chunk, k / 2 }, { chunk + k / 2, k - k / 2 } };
			if (writev(sv[0], v, 2) != k)
				_exit(1);
			at += k;
		}
		_exit(0);
	}
	close(sv[0]);
	long got = 0, wrong = 0;
	char small[1000];
	while ((r = read(sv[1], small, sizeof small)) > 0) {
		for (long i = 0; i < r; i++)
			if (small[i] != (char)((got + i) * 7 + (got + i) / 251))
				wrong++;
		got += r;
	}
	int st;
	waitpid(c, &st, 0);
	EXPECT_EQ("every byte", got, size);
	EXPECT_EQ("in order", wrong, 0);
	EXPECT_STATUS("the writer", st, "exited 0");
	close(sv[1]);

	section("stream pairs: fork shares an end");
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	int d = dup(sv[0]);
	c = fork();
	if (c == 0) {
		write(d, "child", 5);
		shutdown(sv[0], SHUT_WR);
		_exit(0);
	}
	waitpid(c, &st, 0);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("the child's bytes", read(sv[1], buf, sizeof buf), 5);
	EXPECT_STR("are its", buf, "child");
	EXPECT_EQ("its shutdown holds for the parent's end too", read(sv[1], buf, sizeof buf), 0);
	EXPECT_ERR("the parent's write", send(d, "x", 1, MSG_NOSIGNAL), EPIPE);
	close(d);
	close(sv[0]);
	close(sv[1]);

	section("stream pairs: exec");
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	int gone[2];
	SETUP(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gone));
	c = fork();
	if (c == 0) {
		char end[16], shut[16];
		snprintf(end, sizeof end, "%d", sv[0]);
		snprintf(shut, sizeof shut, "%d", gone[0]);
		char *args[] = { (char *)self, "pairend", end, shut, NULL };
		execv(self, args);
		_exit(127);
	}
	close(sv[0]);
	close(gone[1]);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("the program's bytes through the end it kept", read(sv[1], buf, sizeof buf), 4);
	EXPECT_STR("its text", buf, "exec");
	EXPECT_EQ("an answer", write(sv[1], "!", 1), 1);
	EXPECT_EQ("then its shutdown: end of file", read(sv[1], buf, sizeof buf), 0);
	waitpid(c, &st, 0);
	EXPECT_STATUS("the program: the close-on-exec end was closed", st, "exited 0");
	EXPECT_EQ("the close-on-exec end's peer: end of file", read(gone[0], buf, 1), 0);
	close(gone[0]);
	close(sv[1]);

	section("stream pairs: a reader killed while it waits");
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	c = fork();
	if (c == 0) {
		read(sv[1], buf, 1);
		_exit(3);
	}
	usleep(50000);
	kill(c, SIGKILL);
	waitpid(c, &st, 0);
	EXPECT_STATUS("killed", st, "killed by SIGKILL");
	EXPECT_EQ("the pair still works", write(sv[0], "k", 1), 1);
	EXPECT_EQ("its byte", read(sv[1], buf, 1), 1);
	c = fork();
	if (c == 0) {
		close(sv[1]);
		read(sv[0], buf, 1);
		_exit(0);
	}
	close(sv[0]);
	usleep(50000);
	EXPECT_EQ("a reader waits: the writer's end is open", events(sv[1], POLLOUT), POLLOUT);
	kill(c, SIGKILL);
	waitpid(c, &st, 0);
	EXPECT_ERR("its end gone with it: EPIPE", send(sv[1], "x", 1, MSG_NOSIGNAL), EPIPE);
	close(sv[1]);
	EXPECT_ERR("read of a closed end", read(sv[1], buf, 1), EBADF);
	EXPECT_ERR("shutdown of a closed end", shutdown(sv[1], SHUT_RD), EBADF);
}

/* The program exec'd with a pair's end `fd` kept and `cloexec` closed. */
static int pairend_main(int fd, int cloexec)
{
	char c;
	if (fcntl(cloexec, F_GETFD) != -1 || errno != EBADF)
		return 2;
	if (write(fd, "exec", 4) != 4 || read(fd, &c, 1) != 1 || c != '!')
		return 1;
	return shutdown(fd, SHUT_WR) == 0 ? 0 : 3;
}

/* The separately started program: connect, write, exit. */
static int client_main(const char *path)
{
	int c = client(path);
	if (c < 0)
		return 10 + errno % 100;
	if (write(c, "exec", 4) != 4)
		return 3;
	close(c);
	return 0;
}

/* Kills `pid` once it had 100 ms to block; its wait status. */
static int kill_blocked_child(pid_t pid)
{
	usleep(100000);
	kill(pid, SIGKILL);
	return wait_status(pid);
}

static void on_alarm(int s)
{
	(void)s;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "client") == 0)
		return client_main(argv[2]);
	if (argc == 4 && strcmp(argv[1], "pairend") == 0)
		return pairend_main(atoi(argv[2]), atoi(argv[3]));
	abi_init();
	char buf[64];
	struct sockaddr_un a;
	socklen_t len;

	section("socket");
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_TRUE("a stream socket", s >= 0);
	EXPECT_ERR("SOCK_RDM", socket(AF_UNIX, SOCK_RDM, 0), ESOCKTNOSUPPORT);
	int raw = socket(AF_UNIX, SOCK_RAW, 0), ty = 0;
	len = sizeof ty;
	EXPECT_OK("SOCK_RAW", getsockopt(raw, SOL_SOCKET, SO_TYPE, &ty, &len));
	EXPECT_EQ("is a datagram socket", ty, SOCK_DGRAM);
	close(raw);
	EXPECT_ERR("protocol 2", socket(AF_UNIX, SOCK_STREAM, 2), EPROTONOSUPPORT);
	len = sizeof a;
	EXPECT_OK("getsockname unbound", getsockname(s, (struct sockaddr *)&a, &len));
	EXPECT_EQ("its length: the family alone", len, 2);
	len = sizeof a;
	EXPECT_ERR("getpeername unconnected", getpeername(s, (struct sockaddr *)&a, &len), ENOTCONN);
	EXPECT_ERR("send unconnected", send(s, "x", 1, MSG_NOSIGNAL), ENOTCONN);
	EXPECT_ERR("accept before listen", accept(s, NULL, NULL), EINVAL);

	section("bind");
	EXPECT_OK("bind to a path", bind_path(s, "srv"));
	EXPECT_STR("a socket file", type_of("srv"), "socket");
	struct stat st;
	EXPECT_OK("stat", stat("srv", &st));
	EXPECT_EQ("its permissions (umask 022)", st.st_mode & 07777, 0755);
	EXPECT_ERR("bound twice", bind_path(s, "other"), EINVAL);
	int s2 = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_ERR("the same path again", bind_path(s2, "srv"), EADDRINUSE);
	SETUP(close(open("plain", O_CREAT | O_WRONLY, 0644)));
	EXPECT_ERR("a path a file has", bind_path(s2, "plain"), EADDRINUSE);
	EXPECT_ERR("a missing folder", bind_path(s2, "no/srv"), ENOENT);
	memset(&a, 0, sizeof a);
	a.sun_family = AF_INET;
	strcpy(a.sun_path, "x");
	EXPECT_ERR("another family", bind(s2, (struct sockaddr *)&a, sizeof a), EINVAL);
	EXPECT_ERR("a length of 1", bind(s2, (struct sockaddr *)&a, 1), EINVAL);
	EXPECT_ERR("a length past sockaddr_un", bind(s2, (struct sockaddr *)&a, sizeof a + 1), EINVAL);
	EXPECT_ERR("a bad address", bind(s2, BAD, sizeof a), EFAULT);
	EXPECT_ERR("bind on a file", bind_path(open("plain", O_RDONLY), "x"), ENOTSOCK);
	EXPECT_ERR("bind on no descriptor", bind_path(999, "x"), EBADF);
	len = sizeof a;
	EXPECT_OK("getsockname", getsockname(s, (struct sockaddr *)&a, &len));
	EXPECT_EQ("its length: family, path, NUL", len, 2 + 4);
	EXPECT_STR("its path", a.sun_path, "srv");
	len = 4;
	EXPECT_OK("getsockname into 4 bytes", getsockname(s, (struct sockaddr *)&a, &len));
	EXPECT_EQ("the full length still", len, 6);

	section("connect");
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_ERR("before listen", connect_path(c, "srv"), ECONNREFUSED);
	EXPECT_ERR("no such file", connect_path(c, "missing"), ENOENT);
	EXPECT_ERR("a file no socket", connect_path(c, "plain"), ECONNREFUSED);
	int dg = socket(AF_UNIX, SOCK_DGRAM, 0);
	SETUP(listen(s, 1));
	EXPECT_ERR("a datagram socket to a stream", connect_path(dg, "srv"), EPROTOTYPE);
	EXPECT_ERR("connect on no descriptor", connect_path(999, "srv"), EBADF);
	EXPECT_ERR("connect with no address", connect(c, NULL, 0), EINVAL);
	EXPECT_ERR("connect with a length of 200", connect(c, (struct sockaddr *)&a, 200), EINVAL);
	EXPECT_ERR("connect with a bad address", connect(c, BAD, sizeof a), EFAULT);
	EXPECT_ERR("sendto a bad address", sendto(dg, "x", 1, 0, BAD, sizeof a), EFAULT);
	int one = 0;
	len = sizeof one;
	EXPECT_OK("SO_ACCEPTCONN", getsockopt(s, SOL_SOCKET, SO_ACCEPTCONN, &one, &len));
	EXPECT_EQ("it listens", one, 1);
	SETUP(fcntl(s, F_SETFL, O_NONBLOCK));
	EXPECT_ERR("accept with none waiting", accept(s, NULL, NULL), EAGAIN);
	struct pollfd p = { .fd = s, .events = POLLIN };
	EXPECT_EQ("poll: nothing yet", poll(&p, 1, 0), 0);
	EXPECT_OK("connect", connect_path(c, "srv"));
	EXPECT_ERR("connect again", connect_path(c, "srv"), EISCONN);
	EXPECT_ERR("listen on it", listen(c, 1), EINVAL);
	p.revents = 0;
	EXPECT_EQ("poll: a connection", poll(&p, 1, 0), 1);
	EXPECT_EQ("POLLIN", p.revents, POLLIN);
	len = sizeof a;
	memset(&a, 0xff, sizeof a);
	int srv = accept4(s, (struct sockaddr *)&a, &len, SOCK_CLOEXEC);
	EXPECT_TRUE("accept4", srv >= 0);
	EXPECT_EQ("the client's name: unnamed", len, 2);
	EXPECT_EQ("its family", a.sun_family, AF_UNIX);
	EXPECT_EQ("FD_CLOEXEC", fcntl(srv, F_GETFD), FD_CLOEXEC);
	len = sizeof a;
	EXPECT_OK("getpeername of the client", getpeername(c, (struct sockaddr *)&a, &len));
	EXPECT_STR("the listener's path", a.sun_path, "srv");
	len = sizeof a;
	EXPECT_OK("getsockname of the accepted", getsockname(srv, (struct sockaddr *)&a, &len));
	EXPECT_STR("the listener's path", a.sun_path, "srv");
	len = sizeof a;
	EXPECT_OK("getpeername of the accepted", getpeername(srv, (struct sockaddr *)&a, &len));
	EXPECT_EQ("unnamed", len, 2);
	struct ucred cr;
	len = sizeof cr;
	EXPECT_OK("SO_PEERCRED of the accepted", getsockopt(srv, SOL_SOCKET, SO_PEERCRED, &cr, &len));
	EXPECT_TRUE("this process, root", cr.pid == getpid() && cr.uid == 0 && cr.gid == 0);
	len = sizeof cr;
	EXPECT_OK("SO_PEERCRED of the client", getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len));
	EXPECT_TRUE("the listener's process", cr.pid == getpid());

	section("data");
	EXPECT_EQ("write", write(c, "hello", 5), 5);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("read", read(srv, buf, sizeof buf), 5);
	EXPECT_STR("the bytes", buf, "hello");
	EXPECT_EQ("send back", send(srv, "back", 4, 0), 4);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("recv", recv(c, buf, sizeof buf, 0), 4);
	EXPECT_STR("the bytes", buf, "back");
	EXPECT_ERR("recv with none (MSG_DONTWAIT)", recv(srv, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = srv }, got;
	SETUP(epoll_ctl(ep, EPOLL_CTL_ADD, srv, &ev));
	EXPECT_EQ("epoll: nothing", epoll_wait(ep, &got, 1, 0), 0);
	SETUP(write(c, "z", 1));
	EXPECT_EQ("epoll: readable", epoll_wait(ep, &got, 1, 0), 1);
	SETUP(read(srv, buf, 1));
	EXPECT_OK("unlink the path", unlink("srv"));
	EXPECT_EQ("write once unlinked", write(c, "still", 5), 5);
	EXPECT_EQ("read once unlinked", read(srv, buf, sizeof buf), 5);
	int c2 = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_ERR("connect to the unlinked path", connect_path(c2, "srv"), ENOENT);
	EXPECT_OK("shutdown SHUT_WR", shutdown(c, SHUT_WR));
	EXPECT_EQ("EOF", read(srv, buf, sizeof buf), 0);
	EXPECT_ERR("shutdown how 3", shutdown(c, 3), EINVAL);
	EXPECT_OK("shutdown unconnected", shutdown(c2, SHUT_RDWR));
	close(srv);
	EXPECT_EQ("EOF once the peer closed", read(c, buf, sizeof buf), 0);
	close(c);
	close(c2);
	close(s);

	section("backlog");
	int l = listener("bk", 1);
	EXPECT_TRUE("listen with backlog 1", l >= 0);
	int q[3];
	for (int i = 0; i < 3; i++)
		q[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	EXPECT_OK("first connect", connect_path(q[0], "bk"));
	EXPECT_OK("second connect", connect_path(q[1], "bk"));
	EXPECT_ERR("third: the queue is full", connect_path(q[2], "bk"), EAGAIN);
	int acc = accept(l, NULL, NULL);
	EXPECT_TRUE("accept one", acc >= 0);
	EXPECT_OK("now there is room", connect_path(q[2], "bk"));
	close(acc);
	close(l);
	EXPECT_EQ("a queued client sees the end", read(q[1], buf, sizeof buf) <= 0, 1);
	int q4 = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_ERR("the listener closed", connect_path(q4, "bk"), ECONNREFUSED);
	EXPECT_STR("its file stays", type_of("bk"), "socket");
	int l2 = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_ERR("its path is still taken", bind_path(l2, "bk"), EADDRINUSE);
	for (int i = 0; i < 3; i++)
		close(q[i]);
	close(q4);
	close(l2);

	section("abstract");
	int ab = socket(AF_UNIX, SOCK_STREAM, 0);
	len = abstract_addr(&a, "tessera-abi");
	EXPECT_OK("bind an abstract name", bind(ab, (struct sockaddr *)&a, len));
	SETUP(listen(ab, 4));
	int ab2 = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_ERR("the same name again", bind(ab2, (struct sockaddr *)&a, len), EADDRINUSE);
	int ac = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_OK("connect to it", connect(ac, (struct sockaddr *)&a, len));
	struct sockaddr_un b;
	socklen_t blen = sizeof b;
	EXPECT_OK("getsockname", getsockname(ab, (struct sockaddr *)&b, &blen));
	EXPECT_EQ("its length as given", blen, len);
	EXPECT_TRUE("the name", memcmp(&a, &b, len) == 0);
	struct sockaddr_un other;
	socklen_t olen = abstract_addr(&other, "tessera-abj");
	EXPECT_ERR("another name", connect(ab2, (struct sockaddr *)&other, olen), ECONNREFUSED);
	close(ab);
	EXPECT_ERR("once closed", connect(ab2, (struct sockaddr *)&a, len), ECONNREFUSED);
	EXPECT_OK("bound again", bind(ab2, (struct sockaddr *)&a, len));
	close(ab2);
	close(ac);
	int au = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_ERR("listen unbound", listen(au, 1), EINVAL);
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	EXPECT_OK("bind the family alone: a name made", bind(au, (struct sockaddr *)&a, 2));
	blen = sizeof b;
	EXPECT_OK("getsockname", getsockname(au, (struct sockaddr *)&b, &blen));
	EXPECT_EQ("its length: NUL and five digits", blen, 8);
	EXPECT_TRUE("abstract, hex digits", b.sun_path[0] == 0 && strspn(b.sun_path + 1, "0123456789abcdef") >= 5);
	SETUP(listen(au, 1));
	int auc = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_OK("connect to that name", connect(auc, (struct sockaddr *)&b, blen));
	close(auc);
	close(au);

	section("datagrams");
	int d = socket(AF_UNIX, SOCK_DGRAM, 0);
	EXPECT_OK("bind a datagram socket", bind_path(d, "dg"));
	EXPECT_ERR("listen on it", listen(d, 1), EOPNOTSUPP);
	EXPECT_ERR("accept on it", accept(d, NULL, NULL), EOPNOTSUPP);
	struct sockaddr_un da;
	socklen_t dl = path_addr(&da, "dg");
	EXPECT_EQ("sendto the path", sendto(dg, "ping", 4, 0, (struct sockaddr *)&da, dl), 4);
	EXPECT_EQ("sendto again", sendto(dg, "pong!", 5, 0, (struct sockaddr *)&da, dl), 5);
	p.fd = d;
	p.events = POLLIN;
	p.revents = 0;
	EXPECT_EQ("poll: readable", poll(&p, 1, 0), 1);
	memset(buf, 0, sizeof buf);
	len = sizeof a;
	EXPECT_EQ("recvfrom: one message", recvfrom(d, buf, sizeof buf, 0, (struct sockaddr *)&a, &len), 4);
	EXPECT_STR("its bytes", buf, "ping");
	EXPECT_EQ("the sender is unnamed", len, 0);
	EXPECT_EQ("a short buffer: the rest dropped", recv(d, buf, 2, 0), 2);
	EXPECT_ERR("none left (MSG_DONTWAIT)", recv(d, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	EXPECT_ERR("send with no destination", send(dg, "x", 1, 0), ENOTCONN);
	struct sockaddr_un sa;
	socklen_t sl = path_addr(&sa, "missing");
	EXPECT_ERR("sendto no such file", sendto(dg, "x", 1, 0, (struct sockaddr *)&sa, sl), ENOENT);
	sl = path_addr(&sa, "plain");
	EXPECT_ERR("sendto a file no socket", sendto(dg, "x", 1, 0, (struct sockaddr *)&sa, sl), ECONNREFUSED);
	int ls = listener("st", 1);
	sl = path_addr(&sa, "st");
	EXPECT_ERR("sendto a stream socket", sendto(dg, "x", 1, 0, (struct sockaddr *)&sa, sl), EPROTOTYPE);
	close(ls);
	int dc = socket(AF_UNIX, SOCK_DGRAM, 0);
	EXPECT_OK("connect a datagram socket", connect_path(dc, "dg"));
	EXPECT_EQ("send", send(dc, "three", 5, 0), 5);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("recv", recv(d, buf, sizeof buf, 0), 5);
	EXPECT_STR("its bytes", buf, "three");
	len = sizeof a;
	EXPECT_OK("getpeername", getpeername(dc, (struct sockaddr *)&a, &len));
	EXPECT_STR("the path", a.sun_path, "dg");
	int dn = socket(AF_UNIX, SOCK_DGRAM, 0);
	EXPECT_OK("bind a sender", bind_path(dn, "dn"));
	EXPECT_EQ("sendto from it", sendto(dn, "named", 5, 0, (struct sockaddr *)&da, dl), 5);
	memset(&a, 0, sizeof a);
	len = sizeof a;
	EXPECT_EQ("recvfrom", recvfrom(d, buf, sizeof buf, 0, (struct sockaddr *)&a, &len), 5);
	EXPECT_EQ("the sender's name's length", len, 5);
	EXPECT_STR("its path", a.sun_path, "dn");
	EXPECT_EQ("a reply to that name", sendto(d, "reply", 5, 0, (struct sockaddr *)&a, len), 5);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("the sender receives it", recv(dn, buf, sizeof buf, 0), 5);
	EXPECT_STR("its bytes", buf, "reply");
	EXPECT_EQ("again", sendto(dn, "again", 5, 0, (struct sockaddr *)&da, dl), 5);
	struct iovec io = { buf, sizeof buf };
	struct msghdr mh;
	memset(&mh, 0, sizeof mh);
	memset(&a, 0, sizeof a);
	mh.msg_name = &a;
	mh.msg_namelen = 3;
	mh.msg_iov = &io;
	mh.msg_iovlen = 1;
	EXPECT_EQ("recvmsg, room for 3 bytes of the name", recvmsg(d, &mh, 0), 5);
	EXPECT_EQ("msg_namelen: the full length", mh.msg_namelen, 5);
	EXPECT_TRUE("the bytes that fit", a.sun_family == AF_UNIX && a.sun_path[0] == 'd' && a.sun_path[1] == 0);
	close(dn);
	close(d);
	EXPECT_ERR("send once the peer closed", send(dc, "x", 1, 0), ECONNREFUSED);
	close(dc);
	int d2 = socket(AF_UNIX, SOCK_DGRAM, 0);
	dl = path_addr(&da, "dg");
	EXPECT_ERR("sendto a closed one's path", sendto(d2, "x", 1, 0, (struct sockaddr *)&da, dl), ECONNREFUSED);
	EXPECT_ERR("again, by a socket that sent there", sendto(dg, "x", 1, 0, (struct sockaddr *)&da, dl), ECONNREFUSED);
	close(d2);
	close(dg);

	section("processes");
	int pl = listener("pl", 4);
	pid_t kid = fork();
	if (kid == 0) {
		int k = client("pl");
		_exit(k < 0 ? 1 : write(k, "child", 5) == 5 ? 0 : 2);
	}
	int pa = accept(pl, NULL, NULL);
	EXPECT_TRUE("accept a child's connection", pa >= 0);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("its bytes", read(pa, buf, sizeof buf), 5);
	EXPECT_STR("the text", buf, "child");
	EXPECT_STATUS("the child", wait_status(kid), "exited 0");
	len = sizeof cr;
	EXPECT_OK("SO_PEERCRED", getsockopt(pa, SOL_SOCKET, SO_PEERCRED, &cr, &len));
	EXPECT_TRUE("the child's pid", cr.pid == kid);
	close(pa);
	kid = fork();
	if (kid == 0) {
		usleep(100000);
		int k = client("pl");
		_exit(k < 0 ? 1 : 0);
	}
	pa = accept(pl, NULL, NULL);
	EXPECT_TRUE("a blocked accept woken by a child's connect", pa >= 0);
	EXPECT_STATUS("the child", wait_status(kid), "exited 0");
	close(pa);
	kid = fork();
	if (kid == 0) {
		char *args[] = { argv[0], "client", "pl", NULL };
		execv(argv[0], args);
		_exit(127);
	}
	pa = accept(pl, NULL, NULL);
	EXPECT_TRUE("accept a connection of a program exec'd", pa >= 0);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("its bytes", read(pa, buf, sizeof buf), 4);
	EXPECT_STR("the text", buf, "exec");
	EXPECT_STATUS("the program", wait_status(kid), "exited 0");
	close(pa);
	close(pl);

	int perm = listener("perm", 4);
	kid = fork();
	if (kid == 0) {
		if (setgid(1000) < 0 || setuid(1000) < 0)
			_exit(9);
		int k = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect_path(k, "perm") == 0)
			_exit(1);
		_exit(errno == EACCES ? 0 : 2);
	}
	EXPECT_STATUS("another user, no write permission: EACCES", wait_status(kid), "exited 0");
	SETUP(chmod("perm", 0777));
	kid = fork();
	if (kid == 0) {
		if (setgid(1000) < 0 || setuid(1000) < 0)
			_exit(9);
		_exit(client("perm") < 0 ? 1 : 0);
	}
	EXPECT_STATUS("with it (0777)", wait_status(kid), "exited 0");
	close(perm);

	int sync[2];
	SETUP(pipe(sync));
	kid = fork();
	if (kid == 0) {
		int k = listener("kl", 4);
		SETUP(write(sync[1], "r", 1));
		accept(k, NULL, NULL);
		_exit(3);
	}
	SETUP(read(sync[0], buf, 1));
	EXPECT_STATUS("a child killed in accept", kill_blocked_child(kid), "killed by SIGKILL");
	int kc = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_ERR("its listener is gone", connect_path(kc, "kl"), ECONNREFUSED);
	int kl = socket(AF_UNIX, SOCK_STREAM, 0);
	EXPECT_OK("its path unlinked", unlink("kl"));
	EXPECT_OK("and bound anew", bind_path(kl, "kl"));
	close(kc);
	close(kl);

	struct sigaction act;
	memset(&act, 0, sizeof act);
	act.sa_handler = on_alarm;
	SETUP(sigaction(SIGALRM, &act, NULL));
	int il = listener("il", 1);
	ualarm(100000, 0);
	EXPECT_ERR("a signal ends a blocked accept", accept(il, NULL, NULL), EINTR);
	int ic = client("il");
	EXPECT_TRUE("the listener still serves", ic >= 0 && accept(il, NULL, NULL) >= 0);
	close(ic);
	close(il);

	section("waiting for room");
	int wl = listener("wl", 0);
	int w1 = client("wl");
	EXPECT_TRUE("backlog 0: one connection queued", w1 >= 0);
	int wn = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	EXPECT_ERR("the next one, not blocking", connect_path(wn, "wl"), EAGAIN);
	kid = fork();
	if (kid == 0) {
		int k = client("wl");
		_exit(k < 0 ? 1 : 0);
	}
	usleep(100000);
	int wa = accept(wl, NULL, NULL);
	EXPECT_TRUE("accept makes room", wa >= 0);
	EXPECT_STATUS("a blocked connect goes on", wait_status(kid), "exited 0");
	kid = fork();
	if (kid == 0) {
		client("wl");
		_exit(3);
	}
	EXPECT_STATUS("a child killed in connect", kill_blocked_child(kid), "killed by SIGKILL");
	int wb = accept(wl, NULL, NULL);
	EXPECT_TRUE("the queued connection", wb >= 0);
	SETUP(fcntl(wl, F_SETFL, O_NONBLOCK));
	EXPECT_ERR("the killed child queued nothing", accept(wl, NULL, NULL), EAGAIN);
	close(w1);
	close(wn);
	close(wa);
	close(wb);
	close(wl);

	section("bounds");
	static char big[4096];
	int bl = listener("bl", 1);
	int bc = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	SETUP(connect_path(bc, "bl"));
	int ba = accept(bl, NULL, NULL);
	long total = 0;
	ssize_t r;
	while ((r = write(bc, big, sizeof big)) > 0 && total < (64L << 20))
		total += r;
	int e = errno;
	EXPECT_TRUE("a stream's bytes fill up: EAGAIN", r == -1 && e == EAGAIN);
	EXPECT_TRUE("bounded", total > 0 && total < (64L << 20));
	int qd = socket(AF_UNIX, SOCK_DGRAM, 0);
	SETUP(bind_path(qd, "bq"));
	int qs = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	dl = path_addr(&da, "bq");
	long count = 0;
	while ((r = sendto(qs, big, 512, 0, (struct sockaddr *)&da, dl)) > 0 && count < 100000)
		count++;
	e = errno;
	EXPECT_TRUE("datagrams fill up: EAGAIN", r == -1 && e == EAGAIN);
	EXPECT_TRUE("bounded", count > 0 && count < 100000);
	close(bc);
	close(ba);
	close(bl);
	close(qd);
	close(qs);

	stream_pairs(argv[0]);

	section("bad descriptors");
	EXPECT_ERR("accept(-1)", accept(-1, NULL, NULL), EBADF);
	int f = open("plain", O_RDONLY);
	EXPECT_ERR("accept on a file", accept(f, NULL, NULL), ENOTSOCK);
	EXPECT_ERR("listen on a file", listen(f, 1), ENOTSOCK);
	close(f);
	int gone = socket(AF_UNIX, SOCK_STREAM, 0);
	close(gone);
	EXPECT_ERR("listen on a closed socket", listen(gone, 1), EBADF);
	EXPECT_ERR("getsockname on a closed one", getsockname(gone, (struct sockaddr *)&a, &len), EBADF);
	return abi_done();
}
