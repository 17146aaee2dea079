/*
 * Sockets under abuse: processes killed while blocked in accept, recv,
 * connect's wait and epoll_wait (at several CPUs, on another one), a
 * closed socket's number, a process that ends with its sockets open, a
 * peer that resets, hundreds of connections at once, and sockets until
 * the descriptor table is full. The system must answer each with an
 * error and go on serving.
 */
#include "abi.h"
#include "sock.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

static int listener(int backlog)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = loop_addr(0);
	if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, backlog) < 0)
		return -1;
	return s;
}

/* Kills `pid` once it had 100 ms to block; its wait status. */
static int kill_blocked(pid_t pid)
{
	usleep(100000);
	kill(pid, SIGKILL);
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

int main(void)
{
	abi_init();
	loopback_up();
	signal(SIGPIPE, SIG_IGN);
	char buf[256];

	section("killed while blocked");
	int l = listener(16);
	int port = port_of(l);
	pid_t child = fork();
	if (child == 0) {
		accept(l, NULL, NULL);
		_exit(1);
	}
	EXPECT_STATUS("a child blocked in accept, killed", kill_blocked(child), "killed by SIGKILL");
	int c = connect_to(port);
	int a = accept(l, NULL, NULL);
	EXPECT_TRUE("the listener still accepts", c >= 0 && a >= 0);
	child = fork();
	if (child == 0) {
		recv(a, buf, 1, 0);
		_exit(1);
	}
	EXPECT_STATUS("a child blocked in recv, killed", kill_blocked(child), "killed by SIGKILL");
	EXPECT_EQ("the connection still carries data", write(c, "k", 1), 1);
	EXPECT_EQ("and the parent reads it", read(a, buf, 1), 1);
	child = fork();
	if (child == 0) {
		int ep = epoll_create1(0);
		struct epoll_event ev = { EPOLLIN, { .u64 = 1 } };
		epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev);
		epoll_wait(ep, &ev, 1, -1);
		_exit(1);
	}
	EXPECT_STATUS("a child blocked in epoll_wait, killed", kill_blocked(child), "killed by SIGKILL");
	child = fork();
	if (child == 0) {
		struct pollfd p = { a, POLLIN, 0 };
		poll(&p, 1, -1);
		_exit(1);
	}
	EXPECT_STATUS("a child blocked in poll, killed", kill_blocked(child), "killed by SIGKILL");
	child = fork();
	if (child == 0) {
		/* Fills the peer's window, then blocks in send. */
		static char big[65536];
		memset(big, 'x', sizeof big);
		for (;;)
			send(c, big, sizeof big, 0);
	}
	EXPECT_STATUS("a child blocked in send, killed", kill_blocked(child), "killed by SIGKILL");
	child = fork();
	if (child == 0) {
		int u = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in any = loop_addr(0);
		bind(u, (struct sockaddr *)&any, sizeof any);
		recvfrom(u, buf, sizeof buf, 0, NULL, NULL);
		_exit(1);
	}
	EXPECT_STATUS("a child blocked in recvfrom, killed", kill_blocked(child), "killed by SIGKILL");
	close(a);
	close(c);

	section("a process that ends with its sockets open");
	child = fork();
	if (child == 0) {
		int k = connect_to(port);
		write(k, "bye", 3);
		_exit(0);
	}
	a = accept(l, NULL, NULL);
	int st;
	waitpid(child, &st, 0);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("its data arrives", recv(a, buf, 3, MSG_WAITALL), 3);
	EXPECT_EQ("then the end of the stream", read(a, buf, 1), 0);
	close(a);

	section("a peer that resets");
	c = connect_to(port);
	a = accept(l, NULL, NULL);
	write(c, "unread", 6);
	struct pollfd pf = { a, POLLIN, 0 };
	poll(&pf, 1, 2000);
	close(a); /* closing with unread data sends a reset */
	pf = (struct pollfd){ c, POLLIN, 0 };
	poll(&pf, 1, 2000);
	EXPECT_ERR("read after the reset", read(c, buf, 1), ECONNRESET);
	EXPECT_ERR("then a write", write(c, "x", 1), EPIPE);
	close(c);

	section("a closed socket's number");
	int s = socket(AF_INET, SOCK_STREAM, 0);
	close(s);
	EXPECT_ERR("send", send(s, "x", 1, 0), EBADF);
	EXPECT_ERR("recv", recv(s, buf, 1, 0), EBADF);
	EXPECT_ERR("accept", accept(s, NULL, NULL), EBADF);
	EXPECT_ERR("getsockopt", getsockopt(s, SOL_SOCKET, SO_TYPE, buf, &(socklen_t){ 4 }), EBADF);
	struct pollfd bad = { s, POLLIN, 0 };
	EXPECT_EQ("poll: one entry", poll(&bad, 1, 0), 1);
	EXPECT_EQ("POLLNVAL", bad.revents, POLLNVAL);
	int again = socket(AF_INET, SOCK_DGRAM, 0);
	EXPECT_EQ("the number is given again", again, s);
	int type = 0;
	socklen_t tl = sizeof type;
	getsockopt(again, SOL_SOCKET, SO_TYPE, &type, &tl);
	EXPECT_EQ("to the new socket", type, SOCK_DGRAM);
	int p[2];
	pipe(p);
	EXPECT_EQ("dup2 a pipe over it", dup2(p[0], again), again);
	EXPECT_ERR("no longer a socket", getsockopt(again, SOL_SOCKET, SO_TYPE, &type, &tl), ENOTSOCK);
	close(again);
	close(p[0]);
	close(p[1]);

	section("a hundred connections at once");
	int cs[100], as[100], good = 0;
	for (int i = 0; i < 100; i++) {
		cs[i] = connect_to(port);
		as[i] = accept(l, NULL, NULL);
	}
	for (int i = 0; i < 100; i++) {
		char b = (char)i;
		if (cs[i] >= 0 && as[i] >= 0 && write(cs[i], &b, 1) == 1 && read(as[i], &b, 1) == 1 && b == (char)i)
			good++;
	}
	EXPECT_EQ("each carries its byte", good, 100);
	for (int i = 0; i < 100; i++) {
		close(cs[i]);
		close(as[i]);
	}
	c = connect_to(port);
	a = accept(l, NULL, NULL);
	EXPECT_TRUE("closed, and the listener goes on", c >= 0 && a >= 0);
	close(c);
	close(a);

	section("sockets until the table is full");
	struct rlimit rl = { 4096, 4096 };
	setrlimit(RLIMIT_NOFILE, &rl);
	int n = 0, last = 0;
	static int many[5000];
	for (int i = 0; i < 5000; i++) {
		int t = socket(AF_INET, i % 2 ? SOCK_STREAM : SOCK_DGRAM, 0);
		if (t < 0) {
			last = errno;
			break;
		}
		many[n++] = t;
	}
	EXPECT_TRUE("an error at last: EMFILE or ENOBUFS", last == EMFILE || last == ENOBUFS);
	EXPECT_TRUE("after more than 200", n > 200);
	for (int i = 0; i < n; i++)
		close(many[i]);
	c = connect_to(port);
	a = accept(l, NULL, NULL);
	EXPECT_TRUE("all closed: connections again", c >= 0 && a >= 0);
	EXPECT_EQ("and data", write(c, "z", 1) + read(a, buf, 1), 2);
	close(c);
	close(a);
	close(l);
	return abi_done();
}
