/*
 * Sockets: AF_INET TCP and UDP over the loopback interface, AF_UNIX
 * socket pairs, options, names, non-blocking calls, sockets across fork and
 * dup, poll, select and epoll over sockets and pipes, and the errors
 * (EBADF, ENOTSOCK, EINVAL, EADDRINUSE, ECONNREFUSED, EPIPE, EMFILE...).
 */
#include "abi.h"
#include "sock.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>

/* A listener on 127.0.0.1 at a port the system chose. */
static int listener(int flags)
{
	int s = socket(AF_INET, SOCK_STREAM | flags, 0);
	struct sockaddr_in a = loop_addr(0);
	if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 8) < 0)
		return -1;
	return s;
}

static int opt(int s, int level, int name)
{
	int v = -1;
	socklen_t l = sizeof v;
	if (getsockopt(s, level, name, &v, &l) < 0)
		return -errno;
	return v;
}

static volatile int alarms;
static void on_alarm(int s)
{
	(void)s;
	alarms++;
}

static void timer_ms(int ms)
{
	struct itimerval t = { { 0, 0 }, { 0, ms * 1000 } };
	setitimer(ITIMER_REAL, &t, NULL);
}

int main(void)
{
	abi_init();
	loopback_up();
	signal(SIGPIPE, SIG_IGN);
	int p[2];
	SETUP(pipe(p));
	int sv0[2];
	struct sockaddr_in a = loop_addr(0);

	section("socket and its errors");
	EXPECT_ERR("an unknown family", socket(12345, SOCK_STREAM, 0), EAFNOSUPPORT);
	EXPECT_ERR("unknown type flags", socket(AF_INET, SOCK_STREAM | 0x100000, 0), EINVAL);
	EXPECT_ERR("TCP with UDP's protocol", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
	EXPECT_ERR("SOCK_RAW without a protocol", socket(AF_INET, SOCK_RAW, 0), EPROTONOSUPPORT);
	EXPECT_ERR("SOCK_SEQPACKET", socket(AF_INET, SOCK_SEQPACKET, 0), ESOCKTNOSUPPORT);
	EXPECT_ERR("socketpair of AF_INET", socketpair(AF_INET, SOCK_STREAM, 0, sv0), EOPNOTSUPP);
	EXPECT_ERR("socketpair of AF_INET, TCP datagrams", socketpair(AF_INET, SOCK_DGRAM, 6, sv0), EPROTONOSUPPORT);
	EXPECT_ERR("bind on a bad descriptor", bind(99, (struct sockaddr *)&a, sizeof a), EBADF);
	EXPECT_ERR("bind on a pipe", bind(p[0], (struct sockaddr *)&a, sizeof a), ENOTSOCK);
	EXPECT_ERR("listen on a pipe", listen(p[0], 1), ENOTSOCK);
	EXPECT_ERR("accept on a bad descriptor", accept(-1, NULL, NULL), EBADF);
	int v;
	socklen_t vl = sizeof v;
	EXPECT_ERR("getsockopt on a pipe", getsockopt(p[0], SOL_SOCKET, SO_TYPE, &v, &vl), ENOTSOCK);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	EXPECT_TRUE("a TCP socket", s >= 0);
	EXPECT_ERR("bind with a short address", bind(s, (struct sockaddr *)&a, 4), EINVAL);
	struct sockaddr_in other = a;
	other.sin_family = AF_UNIX;
	EXPECT_ERR("bind with another family", bind(s, (struct sockaddr *)&other, sizeof other), EAFNOSUPPORT);
	EXPECT_ERR("accept before listen", accept(s, NULL, NULL), EINVAL);
	char buf[256];
	EXPECT_ERR("recv before connect", recv(s, buf, 1, 0), ENOTCONN);
	EXPECT_ERR("send before connect", send(s, "x", 1, MSG_NOSIGNAL), EPIPE);
	struct sockaddr_in peer;
	socklen_t pl = sizeof peer;
	EXPECT_ERR("getpeername before connect", getpeername(s, (struct sockaddr *)&peer, &pl), ENOTCONN);
	EXPECT_ERR("lseek on a socket", lseek(s, 0, SEEK_SET), ESPIPE);
	struct stat st;
	fstat(s, &st);
	EXPECT_TRUE("fstat: a socket", S_ISSOCK(st.st_mode));
	close(s);

	section("options");
	s = socket(AF_INET, SOCK_STREAM, 0);
	EXPECT_EQ("SO_TYPE", opt(s, SOL_SOCKET, SO_TYPE), SOCK_STREAM);
	EXPECT_EQ("SO_ERROR", opt(s, SOL_SOCKET, SO_ERROR), 0);
	EXPECT_EQ("SO_REUSEADDR at first", opt(s, SOL_SOCKET, SO_REUSEADDR), 0);
	int one = 1;
	EXPECT_OK("set SO_REUSEADDR", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
	EXPECT_EQ("SO_REUSEADDR", opt(s, SOL_SOCKET, SO_REUSEADDR), 1);
	EXPECT_OK("set TCP_NODELAY", setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
	EXPECT_EQ("TCP_NODELAY", opt(s, IPPROTO_TCP, TCP_NODELAY), 1);
	int size = 16384;
	EXPECT_OK("set SO_RCVBUF", setsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, sizeof size));
	EXPECT_TRUE("SO_RCVBUF is at least what was set", opt(s, SOL_SOCKET, SO_RCVBUF) >= 16384);
	EXPECT_ERR("setsockopt with a negative length", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, -1), EINVAL);
	EXPECT_OK("set SO_OOBINLINE", setsockopt(s, SOL_SOCKET, SO_OOBINLINE, &one, sizeof one));
	EXPECT_EQ("SO_OOBINLINE", opt(s, SOL_SOCKET, SO_OOBINLINE), 1);
	socklen_t olen = sizeof one;
	EXPECT_ERR("getsockopt into a null buffer", getsockopt(s, SOL_SOCKET, SO_OOBINLINE, NULL, &olen), EFAULT);
	EXPECT_ERR("getsockopt at an unknown level", getsockopt(s, 500, SO_OOBINLINE, &one, &olen), EOPNOTSUPP);
	EXPECT_ERR("getsockopt at UDP's level of a TCP socket",
		   getsockopt(s, IPPROTO_UDP, SO_OOBINLINE, &one, &olen), EOPNOTSUPP);
	EXPECT_ERR("getsockopt of an unknown TCP option", getsockopt(s, IPPROTO_TCP, -1, &one, &olen), ENOPROTOOPT);
	EXPECT_ERR("getsockopt of an unknown IP option", getsockopt(s, IPPROTO_IP, -1, &one, &olen), ENOPROTOOPT);
	int fl = fcntl(s, F_GETFL);
	EXPECT_EQ("F_GETFL", fl, O_RDWR);
	close(s);
	s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	EXPECT_EQ("SOCK_NONBLOCK: F_GETFL", fcntl(s, F_GETFL), O_RDWR | O_NONBLOCK);
	EXPECT_EQ("SOCK_CLOEXEC: F_GETFD", fcntl(s, F_GETFD), FD_CLOEXEC);
	close(s);

	section("TCP over the loopback");
	int l = listener(0);
	EXPECT_TRUE("a listener", l >= 0);
	int port = port_of(l);
	EXPECT_TRUE("bound to a port the system chose", port > 0);
	EXPECT_EQ("SO_ACCEPTCONN", opt(l, SOL_SOCKET, SO_ACCEPTCONN), 1);
	int l2 = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in same = loop_addr(port);
	EXPECT_ERR("another bind to its port", bind(l2, (struct sockaddr *)&same, sizeof same), EADDRINUSE);
	close(l2);
	int c = connect_to(port);
	EXPECT_TRUE("connect", c >= 0);
	struct pollfd pf = { l, POLLIN, 0 };
	EXPECT_EQ("poll: the listener has a connection", poll(&pf, 1, 1000), 1);
	pl = sizeof peer;
	int acc = accept(l, (struct sockaddr *)&peer, &pl);
	EXPECT_TRUE("accept", acc >= 0);
	EXPECT_EQ("accept: the address's length", pl, sizeof peer);
	EXPECT_TRUE("accept: the peer is the connector", ntohs(peer.sin_port) == port_of(c));
	struct sockaddr_in pn;
	pl = sizeof pn;
	getpeername(c, (struct sockaddr *)&pn, &pl);
	EXPECT_TRUE("getpeername: the listener's port", ntohs(pn.sin_port) == port);
	EXPECT_TRUE("getpeername: 127.0.0.1", pn.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	EXPECT_EQ("write", write(c, "hello", 5), 5);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("read what was written", read(acc, buf, sizeof buf), 5);
	EXPECT_STR("the bytes", buf, "hello");
	EXPECT_EQ("send back", send(acc, "world!", 6, 0), 6);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("recv with MSG_WAITALL", recv(c, buf, 6, MSG_WAITALL), 6);
	EXPECT_STR("the bytes", buf, "world!");
	EXPECT_ERR("recv with MSG_DONTWAIT on nothing", recv(c, buf, 1, MSG_DONTWAIT), EAGAIN);
	EXPECT_ERR("recv of the error queue: empty", recv(c, buf, 1, MSG_ERRQUEUE), EAGAIN);
	EXPECT_ERR("recv of urgent data: none", recv(c, buf, 1, MSG_OOB), EINVAL);
	struct iovec iov[2] = { { "ab", 2 }, { "cde", 3 } };
	struct msghdr mh;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	EXPECT_EQ("sendmsg of two buffers", sendmsg(c, &mh, 0), 5);
	char x1[3] = { 0 }, x2[8] = { 0 };
	struct iovec in[2] = { { x1, 2 }, { x2, 7 } };
	mh.msg_iov = in;
	EXPECT_EQ("recvmsg into two buffers", recvmsg(acc, &mh, 0), 5);
	EXPECT_STR("first buffer", x1, "ab");
	EXPECT_STR("second buffer", x2, "cde");
	EXPECT_EQ("writev", writev(acc, iov, 2), 5);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("readv (MSG_WAITALL-less read of what came)", recv(c, buf, 5, MSG_WAITALL), 5);
	EXPECT_STR("the bytes", buf, "abcde");
	int d = dup(c);
	EXPECT_EQ("write through a dup", write(d, "D", 1), 1);
	close(d);
	EXPECT_EQ("read it", read(acc, buf, 1), 1);
	pid_t child = fork();
	if (child == 0) {
		write(c, "child", 5);
		_exit(0);
	}
	int wst;
	waitpid(child, &wst, 0);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("a forked child's write", recv(acc, buf, 5, MSG_WAITALL), 5);
	EXPECT_STR("the bytes", buf, "child");
	EXPECT_OK("shutdown SHUT_WR", shutdown(c, SHUT_WR));
	EXPECT_EQ("the peer reads the end", read(acc, buf, sizeof buf), 0);
	EXPECT_ERR("write after SHUT_WR", send(c, "x", 1, MSG_NOSIGNAL), EPIPE);
	EXPECT_ERR("shutdown with a bad how", shutdown(c, 7), EINVAL);
	close(acc);
	close(c);

	section("non-blocking calls");
	int nl = listener(SOCK_NONBLOCK);
	EXPECT_ERR("accept with nothing pending", accept(nl, NULL, NULL), EAGAIN);
	int nc = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in to = loop_addr(port_of(nl));
	int r = connect(nc, (struct sockaddr *)&to, sizeof to);
	EXPECT_TRUE("connect: 0 or EINPROGRESS", r == 0 || errno == EINPROGRESS);
	pf = (struct pollfd){ nc, POLLOUT, 0 };
	EXPECT_EQ("poll: connected", poll(&pf, 1, 1000), 1);
	EXPECT_EQ("SO_ERROR", opt(nc, SOL_SOCKET, SO_ERROR), 0);
	pf = (struct pollfd){ nl, POLLIN, 0 };
	poll(&pf, 1, 1000);
	int na = accept4(nl, NULL, NULL, SOCK_NONBLOCK);
	EXPECT_TRUE("accept4 SOCK_NONBLOCK", na >= 0);
	EXPECT_EQ("its F_GETFL", fcntl(na, F_GETFL), O_RDWR | O_NONBLOCK);
	EXPECT_ERR("read on nothing", read(na, buf, 1), EAGAIN);
	/* A poll of sockets alone that times out (the TCP/IP server's watch
	   keeps the timeout). */
	struct timespec q0, q1;
	struct pollfd quiet = { na, POLLIN, 0 };
	clock_gettime(CLOCK_MONOTONIC, &q0);
	EXPECT_EQ("poll: nothing to read in 30 ms", poll(&quiet, 1, 30), 0);
	clock_gettime(CLOCK_MONOTONIC, &q1);
	EXPECT_TRUE("poll: took at least 30 ms",
		    (q1.tv_sec - q0.tv_sec) * 1000000000LL + (q1.tv_nsec - q0.tv_nsec) >= 30000000);
	EXPECT_ERR("accept4 with bad flags", syscall(SYS_accept4, nl, 0, 0, 1), EINVAL);
	fcntl(na, F_SETFL, 0);
	EXPECT_EQ("F_SETFL clears O_NONBLOCK", fcntl(na, F_GETFL), O_RDWR);
	close(na);
	close(nc);
	close(nl);

	section("refused");
	int dead = listener(0);
	int dead_port = port_of(dead);
	close(dead);
	c = socket(AF_INET, SOCK_STREAM, 0);
	to = loop_addr(dead_port);
	EXPECT_ERR("connect to a closed port", connect(c, (struct sockaddr *)&to, sizeof to), ECONNREFUSED);
	close(c);

	section("UDP");
	int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0);
	a = loop_addr(0);
	bind(u1, (struct sockaddr *)&a, sizeof a);
	bind(u2, (struct sockaddr *)&a, sizeof a);
	EXPECT_EQ("SO_TYPE", opt(u1, SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
	to = loop_addr(port_of(u2));
	EXPECT_EQ("sendto", sendto(u1, "datagram", 8, 0, (struct sockaddr *)&to, sizeof to), 8);
	struct sockaddr_in from;
	socklen_t fl2 = sizeof from;
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("recvfrom", recvfrom(u2, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl2), 8);
	EXPECT_STR("the datagram", buf, "datagram");
	EXPECT_TRUE("from the sender's port", ntohs(from.sin_port) == port_of(u1));
	EXPECT_EQ("the address's length", fl2, sizeof from);
	EXPECT_ERR("recvfrom on nothing, MSG_DONTWAIT", recvfrom(u2, buf, 1, MSG_DONTWAIT, NULL, NULL), EAGAIN);
	EXPECT_ERR("send without a destination", send(u1, "x", 1, 0), EDESTADDRREQ);
	EXPECT_OK("connect", connect(u1, (struct sockaddr *)&to, sizeof to));
	EXPECT_EQ("send when connected", send(u1, "abc", 3, 0), 3);
	struct iovec ui[2] = { { buf, 1 }, { buf + 1, 10 } };
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = ui;
	mh.msg_iovlen = 2;
	mh.msg_name = &from;
	mh.msg_namelen = sizeof from;
	EXPECT_EQ("recvmsg of the datagram", recvmsg(u2, &mh, 0), 3);
	EXPECT_EQ("msg_namelen", mh.msg_namelen, sizeof from);
	close(u1);
	close(u2);

	section("AF_UNIX socket pairs");
	int sv[2];
	EXPECT_OK("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	fstat(sv[0], &st);
	EXPECT_TRUE("fstat: a socket", S_ISSOCK(st.st_mode));
	EXPECT_EQ("SO_TYPE", opt(sv[0], SOL_SOCKET, SO_TYPE), SOCK_STREAM);
	EXPECT_EQ("write one way", write(sv[0], "ping", 4), 4);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("read", read(sv[1], buf, sizeof buf), 4);
	EXPECT_EQ("send the other way", send(sv[1], "pong", 4, 0), 4);
	EXPECT_EQ("recv", recv(sv[0], buf, sizeof buf, 0), 4);
	EXPECT_ERR("recv on nothing, MSG_DONTWAIT", recv(sv[0], buf, 1, MSG_DONTWAIT), EAGAIN);
	close(sv[1]);
	EXPECT_EQ("the peer closed: end of file", read(sv[0], buf, 1), 0);
	EXPECT_ERR("write to a closed peer", write(sv[0], "x", 1), EPIPE);
	close(sv[0]);
	EXPECT_ERR("socketpair with a protocol", socketpair(AF_UNIX, SOCK_STREAM, 7, sv), EPROTONOSUPPORT);
	EXPECT_ERR("socketpair to a bad array", syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, BAD_PTR), EFAULT);

	section("AF_UNIX datagram and seqpacket pairs");
	EXPECT_OK("socketpair SOCK_DGRAM", socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	EXPECT_EQ("SO_TYPE", opt(sv[0], SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
	EXPECT_EQ("send one", send(sv[0], "one", 3, 0), 3);
	EXPECT_EQ("send an empty datagram", send(sv[0], "", 0, 0), 0);
	EXPECT_EQ("send three", write(sv[0], "three", 5), 5);
	struct pollfd dp = { sv[1], POLLIN, 0 };
	EXPECT_EQ("poll: readable", poll(&dp, 1, 0), 1);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("recv takes one datagram", recv(sv[1], buf, sizeof buf, 0), 3);
	EXPECT_STR("the first", buf, "one");
	EXPECT_EQ("then the empty one", recv(sv[1], buf, sizeof buf, 0), 0);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("a short read takes part of the third", read(sv[1], buf, 2), 2);
	EXPECT_STR("its start", buf, "th");
	EXPECT_ERR("the rest was dropped", recv(sv[1], buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	EXPECT_EQ("the other way", send(sv[1], "back", 4, 0), 4);
	EXPECT_EQ("arrives whole", recv(sv[0], buf, sizeof buf, 0), 4);
	close(sv[0]);
	close(sv[1]);
	EXPECT_OK("socketpair SOCK_SEQPACKET", socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	EXPECT_EQ("SO_TYPE", opt(sv[1], SOL_SOCKET, SO_TYPE), SOCK_SEQPACKET);
	write(sv[1], "abc", 3);
	write(sv[1], "de", 2);
	EXPECT_EQ("a read takes one record", read(sv[0], buf, sizeof buf), 3);
	EXPECT_EQ("then the next", read(sv[0], buf, sizeof buf), 2);
	close(sv[0]);
	close(sv[1]);

	section("select over a socket and a pipe");
	EXPECT_OK("socketpair", socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	l = listener(0);
	c = connect_to(port_of(l));
	acc = accept(l, NULL, NULL);
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(acc, &rd);
	FD_SET(p[0], &rd);
	FD_SET(sv[1], &rd);
	struct timeval tv = { 0, 20000 };
	EXPECT_EQ("nothing readable: timeout", select(64, &rd, NULL, NULL, &tv), 0);
	write(c, "z", 1);
	FD_ZERO(&rd);
	FD_SET(acc, &rd);
	FD_SET(p[0], &rd);
	tv = (struct timeval){ 1, 0 };
	EXPECT_EQ("the socket is readable", select(64, &rd, NULL, NULL, &tv), 1);
	EXPECT_TRUE("its bit", FD_ISSET(acc, &rd) && !FD_ISSET(p[0], &rd));
	read(acc, buf, 1);
	struct pollfd three[3] = { { acc, POLLIN, 0 }, { p[0], POLLIN, 0 }, { sv[1], POLLIN, 0 } };
	write(sv[0], "u", 1);
	EXPECT_EQ("poll: the pair's end is readable", poll(three, 3, 1000), 1);
	EXPECT_EQ("its revents", three[2].revents, POLLIN);

	section("epoll");
	EXPECT_ERR("epoll_create(0)", syscall(SYS_epoll_create, 0), EINVAL);
	EXPECT_ERR("epoll_create1 with bad flags", epoll_create1(1), EINVAL);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	EXPECT_TRUE("epoll_create1", ep >= 0);
	EXPECT_EQ("EPOLL_CLOEXEC", fcntl(ep, F_GETFD), FD_CLOEXEC);
	struct epoll_event ev = { EPOLLIN, { .u64 = 7 } };
	EXPECT_OK("add the socket", epoll_ctl(ep, EPOLL_CTL_ADD, acc, &ev));
	EXPECT_ERR("add it again", epoll_ctl(ep, EPOLL_CTL_ADD, acc, &ev), EEXIST);
	ev.data.u64 = 8;
	EXPECT_OK("add the pipe", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	ev.data.u64 = 9;
	EXPECT_OK("add the pair's end", epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev));
	EXPECT_ERR("delete what is not there", epoll_ctl(ep, EPOLL_CTL_DEL, p[1], &ev), ENOENT);
	EXPECT_ERR("add itself", epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	int file = open("f", O_RDWR | O_CREAT, 0644);
	EXPECT_ERR("add a regular file", epoll_ctl(ep, EPOLL_CTL_ADD, file, &ev), EPERM);
	EXPECT_ERR("on a pipe instead of an epoll", epoll_ctl(p[0], EPOLL_CTL_ADD, acc, &ev), EINVAL);
	EXPECT_ERR("a bad descriptor", epoll_ctl(ep, EPOLL_CTL_ADD, 99, &ev), EBADF);
	EXPECT_ERR("a bad op", epoll_ctl(ep, 9, acc, &ev), EINVAL);
	int inner = epoll_create1(0);
	EXPECT_OK("a set inside the set", epoll_ctl(ep, EPOLL_CTL_ADD, inner, &ev));
	EXPECT_ERR("and the set inside it: a loop", epoll_ctl(inner, EPOLL_CTL_ADD, ep, &ev), ELOOP);
	EXPECT_OK("taken out again", epoll_ctl(ep, EPOLL_CTL_DEL, inner, NULL));
	close(inner);
	struct epoll_event out[4];
	EXPECT_EQ("the pair's end is readable", epoll_wait(ep, out, 4, 0), 1);
	EXPECT_EQ("its data", out[0].data.u64, 9);
	EXPECT_EQ("its events", out[0].events, EPOLLIN);
	read(sv[1], buf, 1);
	EXPECT_EQ("nothing now, timeout 0", epoll_wait(ep, out, 4, 0), 0);
	EXPECT_ERR("maxevents 0", epoll_wait(ep, out, 0, 0), EINVAL);
	EXPECT_ERR("not an epoll", epoll_wait(p[0], out, 4, 0), EINVAL);
	long long t0;
	struct timespec tn;
	clock_gettime(CLOCK_MONOTONIC, &tn);
	t0 = tn.tv_sec * 1000000000LL + tn.tv_nsec;
	EXPECT_EQ("a timeout of 30 ms", epoll_wait(ep, out, 4, 30), 0);
	clock_gettime(CLOCK_MONOTONIC, &tn);
	EXPECT_TRUE("took at least 30 ms", tn.tv_sec * 1000000000LL + tn.tv_nsec - t0 >= 30000000);
	write(c, "abc", 3);
	EXPECT_EQ("the socket's data wakes a wait", epoll_wait(ep, out, 4, 2000), 1);
	EXPECT_EQ("its data", out[0].data.u64, 7);
	EXPECT_EQ("level-triggered: again", epoll_wait(ep, out, 4, 0), 1);
	ev = (struct epoll_event){ EPOLLIN | EPOLLET, { .u64 = 70 } };
	EXPECT_OK("make it edge-triggered", epoll_ctl(ep, EPOLL_CTL_MOD, acc, &ev));
	EXPECT_EQ("edge-triggered: reported once", epoll_wait(ep, out, 4, 0), 1);
	EXPECT_EQ("not again", epoll_wait(ep, out, 4, 0), 0);
	read(acc, buf, sizeof buf);
	EXPECT_ERR("drained", recv(acc, buf, 1, MSG_DONTWAIT), EAGAIN);
	write(c, "d", 1);
	EXPECT_EQ("new data: reported", epoll_wait(ep, out, 4, 2000), 1);
	EXPECT_EQ("its data", out[0].data.u64, 70);
	read(acc, buf, sizeof buf);
	ev = (struct epoll_event){ EPOLLIN | EPOLLONESHOT, { .u64 = 71 } };
	EXPECT_OK("one-shot", epoll_ctl(ep, EPOLL_CTL_MOD, acc, &ev));
	write(c, "e", 1);
	EXPECT_EQ("reported", epoll_wait(ep, out, 4, 2000), 1);
	EXPECT_EQ("then disabled", epoll_wait(ep, out, 4, 0), 0);
	EXPECT_OK("EPOLL_CTL_DEL", epoll_ctl(ep, EPOLL_CTL_DEL, acc, NULL));
	int op[2];
	SETUP(pipe(op));
	int ep1 = epoll_create1(0);
	ev = (struct epoll_event){ EPOLLIN | EPOLLONESHOT, { .fd = op[0] } };
	epoll_ctl(ep1, EPOLL_CTL_ADD, op[0], &ev);
	write(op[1], "a", 1);
	struct epoll_event got;
	memset(&got, 0x55, sizeof got);
	EXPECT_EQ("one-shot on a pipe", epoll_wait(ep1, &got, 10, 0), 1);
	EXPECT_EQ("its events", got.events, EPOLLIN);
	EXPECT_TRUE("its fd", got.data.fd == op[0]);
	read(op[0], buf, 1);
	write(op[1], "b", 1);
	EXPECT_EQ("then nothing", epoll_wait(ep1, &got, 10, 0), 0);
	EXPECT_TRUE("the buffer keeps the last event", got.events == EPOLLIN && got.data.fd == op[0]);
	close(ep1);
	close(op[0]);
	close(op[1]);
	ev = (struct epoll_event){ EPOLLOUT, { .u64 = 5 } };
	EXPECT_OK("EPOLLOUT on the connector", epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	EXPECT_EQ("writable", epoll_wait(ep, out, 4, 0), 1);
	EXPECT_EQ("its events", out[0].events, EPOLLOUT);
	epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	timer_ms(30);
	EXPECT_ERR("a signal ends a wait (even with SA_RESTART)", epoll_wait(ep, out, 4, -1), EINTR);
	EXPECT_EQ("the handler ran", alarms, 1);
	timer_ms(30);
	child = fork();
	if (child == 0) {
		usleep(100000);
		write(acc, "late", 4);
		_exit(0);
	}
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("a blocking read across a signal (SA_RESTART)", read(c, buf, 4), 4);
	EXPECT_EQ("the handler ran", alarms, 2);
	waitpid(child, &wst, 0);
	close(ep);
	close(c);
	close(acc);
	close(l);

	section("running out");
	struct rlimit rl = { 32, 32 };
	setrlimit(RLIMIT_NOFILE, &rl);
	int last = 0, n = 0;
	for (int i = 0; i < 100; i++) {
		int t = socket(AF_INET, SOCK_DGRAM, 0);
		if (t < 0) {
			last = errno;
			break;
		}
		n++;
	}
	EXPECT_STR("socket until the table is full", errname(last), "EMFILE");
	EXPECT_TRUE("after some sockets", n > 5);
	for (int i = 3; i < 32; i++)
		if (i != 1 && i != 2)
			close(i);
	s = socket(AF_INET, SOCK_STREAM, 0);
	EXPECT_TRUE("then one again", s >= 0);
	close(s);
	EXPECT_ERR("a closed socket's number", send(s, "x", 1, 0), EBADF);
	return abi_done();
}
