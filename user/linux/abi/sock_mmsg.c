/*
 * sendmmsg and recvmmsg on AF_INET sockets over the loopback interface:
 * batches of UDP datagrams and of a TCP stream, each message's msg_len,
 * partial batches (a non-blocking socket run dry, an error after the first
 * message: dropped by sendmmsg, kept for the next recvmmsg), vlen 0 and
 * over 1024, MSG_WAITFORONE, the timeout (checked after each datagram,
 * written back; bad ones), blocking batches another process completes, a
 * signal in the middle of one, and bad pointers, descriptors and flags.
 */
#include "abi.h"
#include "sock.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>

#define MSG_CMSG_COMPAT_ 0x80000000u

/* The system calls themselves (a C library may loop over sendmsg). */
static long fail_or(long r)
{
	if (r < 0 && r > -4096) {
		errno = -r;
		return -1;
	}
	return r;
}

static long smmsg(int fd, struct mmsghdr *v, unsigned n, unsigned flags)
{
	return fail_or(sys4(SYS_sendmmsg, fd, v, n, flags));
}

static long rmmsg(int fd, struct mmsghdr *v, unsigned n, unsigned flags, void *t)
{
	return fail_or(sys6(SYS_recvmmsg, fd, (long)v, n, flags, (long)t, 0));
}

static char bufs[8][32];
static struct iovec iovs[8];
static struct mmsghdr hdrs[8];

/* n receive headers, each one buffer of `len` bytes. */
static struct mmsghdr *rx(int n, int len)
{
	memset(hdrs, 0, sizeof hdrs);
	memset(bufs, 0, sizeof bufs);
	for (int i = 0; i < n; i++) {
		iovs[i].iov_base = bufs[i];
		iovs[i].iov_len = len;
		hdrs[i].msg_hdr.msg_iov = &iovs[i];
		hdrs[i].msg_hdr.msg_iovlen = 1;
		hdrs[i].msg_len = 12345;
	}
	return hdrs;
}

/* A connected pair of UDP sockets on 127.0.0.1: [sender, receiver]. */
static void udp_pair(int s[2], int rflags)
{
	s[1] = socket(AF_INET, SOCK_DGRAM | rflags, 0);
	struct sockaddr_in a = loop_addr(0);
	SETUP(bind(s[1], (struct sockaddr *)&a, sizeof a));
	a = loop_addr(port_of(s[1]));
	s[0] = socket(AF_INET, SOCK_DGRAM, 0);
	SETUP(connect(s[0], (struct sockaddr *)&a, sizeof a));
}

/* Sends datagrams "d0", "d1", ... one by one. */
static void send_n(int s, int n)
{
	for (int i = 0; i < n; i++) {
		char m[4] = { 'd', (char)('0' + i), 0 };
		send(s, m, 2, 0);
	}
}

static void udp_batches(void)
{
	section("udp batches");
	int s[2];
	udp_pair(s, 0);
	struct iovec si[4] = {
		{ "one", 3 }, { "two", 3 }, { "three", 5 }, { "", 0 },
	};
	struct mmsghdr v[3];
	memset(v, 0, sizeof v);
	v[0].msg_hdr.msg_iov = &si[0];
	v[0].msg_hdr.msg_iovlen = 2;
	v[1].msg_hdr.msg_iov = &si[2];
	v[1].msg_hdr.msg_iovlen = 1;
	v[2].msg_hdr.msg_iov = &si[3];
	v[2].msg_hdr.msg_iovlen = 1;
	EXPECT_EQ("sendmmsg of 3", smmsg(s[0], v, 3, 0), 3);
	EXPECT_EQ("msg_len of a gathered one", v[0].msg_len, 6);
	EXPECT_EQ("msg_len of the second", v[1].msg_len, 5);
	EXPECT_EQ("msg_len of an empty one", v[2].msg_len, 0);

	struct mmsghdr *r = rx(2, 16);
	struct sockaddr_in from;
	r[0].msg_hdr.msg_name = &from;
	r[0].msg_hdr.msg_namelen = sizeof from;
	EXPECT_EQ("recvmmsg of 2 of 3", rmmsg(s[1], r, 2, MSG_DONTWAIT, NULL), 2);
	EXPECT_EQ("first msg_len", r[0].msg_len, 6);
	EXPECT_STR("first bytes", bufs[0], "onetwo");
	EXPECT_EQ("second msg_len", r[1].msg_len, 5);
	EXPECT_STR("second bytes", bufs[1], "three");
	EXPECT_EQ("sender's name length", r[0].msg_hdr.msg_namelen, sizeof from);
	EXPECT_TRUE("sender's port", ntohs(from.sin_port) == port_of(s[0]));
	r = rx(4, 16);
	EXPECT_EQ("a non-blocking batch run dry", rmmsg(s[1], r, 4, MSG_DONTWAIT, NULL), 1);
	EXPECT_EQ("its empty datagram", r[0].msg_len, 0);
	EXPECT_EQ("untouched msg_len after it", r[1].msg_len, 12345);
	EXPECT_ERR("nothing to read", rmmsg(s[1], r, 4, MSG_DONTWAIT, NULL), EAGAIN);

	send_n(s[0], 1);
	r = rx(1, 1);
	EXPECT_EQ("a datagram cut short", rmmsg(s[1], r, 1, MSG_DONTWAIT, NULL), 1);
	EXPECT_EQ("its msg_len", r[0].msg_len, 1);

	EXPECT_EQ("sendmmsg vlen 0", smmsg(s[0], v, 0, 0), 0);
	EXPECT_EQ("recvmmsg vlen 0", rmmsg(s[1], r, 0, 0, NULL), 0);

	/* Over UIO_MAXIOV: sendmmsg sends 1024. */
	static struct mmsghdr big[1100];
	static struct iovec one = { "x", 1 };
	for (int i = 0; i < 1100; i++) {
		big[i].msg_hdr.msg_iov = &one;
		big[i].msg_hdr.msg_iovlen = 1;
	}
	EXPECT_EQ("sendmmsg vlen 1100 sends 1024", smmsg(s[0], big, 1100, 0), 1024);
	EXPECT_EQ("last msg_len", big[1023].msg_len, 1);
	EXPECT_EQ("past the cap untouched", big[1024].msg_len, 0);
	/* Drain what the receive buffer kept. */
	while (recv(s[1], bufs[0], 32, MSG_DONTWAIT) > 0)
		;
	close(s[0]);
	close(s[1]);
}

static void udp_errors(void)
{
	section("errors");
	int s[2];
	udp_pair(s, 0);
	struct mmsghdr *r = rx(2, 16);
	struct timespec t = { 1, 0 };
	EXPECT_ERR("send: bad vector", smmsg(s[0], BAD_PTR, 2, 0), EFAULT);
	EXPECT_ERR("recv: bad vector", rmmsg(s[1], BAD_PTR, 2, MSG_DONTWAIT, NULL), EFAULT);
	EXPECT_ERR("send: bad descriptor", smmsg(-1, r, 1, 0), EBADF);
	EXPECT_ERR("recv: bad descriptor", rmmsg(99, r, 1, 0, &t), EBADF);
	EXPECT_ERR("recv: bad timeout before bad descriptor", rmmsg(99, r, 1, 0, BAD_PTR), EFAULT);
	int p[2];
	SETUP(pipe(p));
	EXPECT_ERR("send: a pipe", smmsg(p[1], r, 1, 0), ENOTSOCK);
	EXPECT_ERR("recv: a pipe", rmmsg(p[0], r, 1, 0, NULL), ENOTSOCK);
	close(p[0]);
	close(p[1]);
	EXPECT_ERR("send: MSG_CMSG_COMPAT", smmsg(s[0], r, 1, MSG_CMSG_COMPAT_), EINVAL);
	EXPECT_ERR("recv: MSG_CMSG_COMPAT", rmmsg(s[1], r, 1, MSG_CMSG_COMPAT_, NULL), EINVAL);
	struct timespec neg = { -1, 0 }, over = { 0, 1000000000 }, negns = { 0, -1 };
	EXPECT_ERR("timeout: negative seconds", rmmsg(s[1], r, 1, 0, &neg), EINVAL);
	EXPECT_ERR("timeout: nanoseconds 1e9", rmmsg(s[1], r, 1, 0, &over), EINVAL);
	EXPECT_ERR("timeout: negative nanoseconds", rmmsg(s[1], r, 1, 0, &negns), EINVAL);

	/* An error after the first message: sendmmsg drops it. */
	struct iovec si = { "ok", 2 };
	struct mmsghdr v[2];
	memset(v, 0, sizeof v);
	v[0].msg_hdr.msg_iov = &si;
	v[0].msg_hdr.msg_iovlen = 1;
	v[1].msg_hdr.msg_iov = BAD_PTR;
	v[1].msg_hdr.msg_iovlen = 1;
	EXPECT_EQ("send: bad second message", smmsg(s[0], v, 2, 0), 1);
	EXPECT_EQ("send: then the next", smmsg(s[0], v, 1, 0), 1);
	/* recvmmsg keeps it for the next call. */
	r = rx(2, 16);
	iovs[1].iov_base = BAD_PTR;
	EXPECT_EQ("recv: bad second buffer", rmmsg(s[1], r, 2, MSG_DONTWAIT, NULL), 1);
	r = rx(2, 16);
	EXPECT_ERR("recv: the error kept", rmmsg(s[1], r, 2, MSG_DONTWAIT, NULL), EFAULT);
	EXPECT_ERR("recv: the datagram went with the fault", rmmsg(s[1], r, 2, MSG_DONTWAIT, NULL), EAGAIN);
	r = rx(2, 16);
	r[1].msg_hdr.msg_iovlen = 2000;
	send_n(s[0], 2);
	EXPECT_EQ("recv: too many buffers second", rmmsg(s[1], r, 2, MSG_DONTWAIT, NULL), 1);
	EXPECT_ERR("recv: EMSGSIZE kept", rmmsg(s[1], r, 1, MSG_DONTWAIT, NULL), EMSGSIZE);
	EXPECT_EQ("recv: the second datagram", rmmsg(s[1], r, 1, MSG_DONTWAIT, NULL), 1);

	/* msg_len not writable: the first message's error. */
	struct mmsghdr *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(ro, 0, 4096);
	ro[0].msg_hdr.msg_iov = &si;
	ro[0].msg_hdr.msg_iovlen = 1;
	SETUP(mprotect(ro, 4096, PROT_READ));
	EXPECT_ERR("send: msg_len read-only", smmsg(s[0], ro, 1, 0), EFAULT);
	EXPECT_EQ("send: yet the datagram went", recv(s[1], bufs[0], 32, MSG_DONTWAIT), 2);
	munmap(ro, 4096);
	close(s[0]);
	close(s[1]);
}

static volatile int alarms;
static void on_alarm(int x)
{
	(void)x;
	alarms++;
}

/* A child that sends `n` datagrams to port, `gap_ms` apart, first after gap_ms. */
static void sender(int port, int n, int gap_ms)
{
	if (fork() == 0) {
		int c = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in a = loop_addr(port);
		connect(c, (struct sockaddr *)&a, sizeof a);
		for (int i = 0; i < n; i++) {
			usleep(gap_ms * 1000);
			char m[3] = { 'w', (char)('0' + i), 0 };
			send(c, m, 2, 0);
		}
		_exit(0);
	}
}

static void udp_waits(void)
{
	section("waits and timeouts");
	int s[2];
	udp_pair(s, 0);
	int port = port_of(s[1]);
	struct mmsghdr *r;
	int st;

	send_n(s[0], 2);
	r = rx(5, 16);
	EXPECT_EQ("WAITFORONE with two there", rmmsg(s[1], r, 5, MSG_WAITFORONE, NULL), 2);
	sender(port, 1, 100);
	r = rx(4, 16);
	EXPECT_EQ("WAITFORONE waits for one", rmmsg(s[1], r, 4, MSG_WAITFORONE, NULL), 1);
	EXPECT_STR("its bytes", bufs[0], "w0");
	wait(&st);

	sender(port, 3, 50);
	r = rx(3, 16);
	EXPECT_EQ("blocking batch waits for all", rmmsg(s[1], r, 3, 0, NULL), 3);
	EXPECT_STR("third bytes", bufs[2], "w2");
	EXPECT_EQ("third msg_len", r[2].msg_len, 2);
	wait(&st);

	send_n(s[0], 3);
	struct timespec t = { 5, 0 };
	r = rx(3, 16);
	EXPECT_EQ("timeout, all there", rmmsg(s[1], r, 3, 0, &t), 3);
	EXPECT_TRUE("time left written back", t.tv_sec <= 5 && (t.tv_sec < 5 || t.tv_nsec < 1000000000) &&
						      (t.tv_sec > 0 || t.tv_nsec > 0));
	send_n(s[0], 2);
	struct timespec z = { 0, 0 };
	r = rx(2, 16);
	EXPECT_EQ("zero timeout: one datagram", rmmsg(s[1], r, 2, 0, &z), 1);
	EXPECT_TRUE("zero left", z.tv_sec == 0 && z.tv_nsec == 0);
	r = rx(2, 16);
	EXPECT_EQ("the other still there", rmmsg(s[1], r, 2, MSG_DONTWAIT, NULL), 1);
	sender(port, 2, 300);
	struct timespec shortt = { 0, 100000000 };
	r = rx(3, 16);
	EXPECT_EQ("timeout checked after each datagram", rmmsg(s[1], r, 3, 0, &shortt), 1);
	EXPECT_TRUE("none left", shortt.tv_sec == 0 && shortt.tv_nsec == 0);
	r = rx(3, 16);
	EXPECT_EQ("the next one waits", rmmsg(s[1], r, 3, MSG_WAITFORONE, NULL), 1);
	wait(&st);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 0 }, { 0, 200000 } };
	send_n(s[0], 1);
	setitimer(ITIMER_REAL, &it, NULL);
	r = rx(3, 16);
	EXPECT_EQ("a signal ends a batch with its count", rmmsg(s[1], r, 3, 0, NULL), 1);
	/* The interrupted wait's error is kept as the socket's, and the next
	 * recvmmsg fails with it at once (Linux's is ERESTARTSYS, as is). */
	EXPECT_TRUE("the next: the interruption kept", sys6(SYS_recvmmsg, s[1], (long)r, 3, 0, 0, 0) < 0);
	setitimer(ITIMER_REAL, &it, NULL);
	EXPECT_ERR("a signal before any: EINTR", rmmsg(s[1], r, 3, 0, NULL), EINTR);
	EXPECT_EQ("both handled", alarms, 2);
	close(s[0]);
	close(s[1]);
}

static void tcp_batches(void)
{
	section("tcp");
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = loop_addr(0);
	SETUP(bind(l, (struct sockaddr *)&a, sizeof a));
	SETUP(listen(l, 4));
	int c = socket(AF_INET, SOCK_STREAM, 0);
	a = loop_addr(port_of(l));
	SETUP(connect(c, (struct sockaddr *)&a, sizeof a));
	int d = accept(l, NULL, NULL);
	struct iovec si[2] = { { "hello", 5 }, { "world", 5 } };
	struct mmsghdr v[2];
	memset(v, 0, sizeof v);
	v[0].msg_hdr.msg_iov = &si[0];
	v[0].msg_hdr.msg_iovlen = 1;
	v[1].msg_hdr.msg_iov = &si[1];
	v[1].msg_hdr.msg_iovlen = 1;
	EXPECT_EQ("stream sendmmsg", smmsg(c, v, 2, 0), 2);
	EXPECT_EQ("its msg_lens", v[0].msg_len + v[1].msg_len, 10);
	/* Both messages in the receiver's buffer first (a loopback
	 * segment may come later than its send returns). */
	char peek[16];
	for (int i = 0; i < 300 && recv(d, peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT) < 10; i++)
		usleep(10000);
	struct mmsghdr *r = rx(3, 4);
	EXPECT_EQ("stream recvmmsg, 4 bytes each, WAITFORONE", rmmsg(d, r, 3, MSG_WAITFORONE, NULL), 3);
	EXPECT_EQ("msg_lens", r[0].msg_len * 100 + r[1].msg_len * 10 + r[2].msg_len, 442);
	EXPECT_STR("the bytes in order", bufs[2], "ld");
	shutdown(c, SHUT_WR);
	r = rx(2, 4);
	EXPECT_EQ("end of stream: messages of 0", rmmsg(d, r, 2, 0, NULL), 2);
	EXPECT_EQ("msg_len 0", r[0].msg_len + r[1].msg_len, 0);
	close(d);
	EXPECT_ERR("to a closed peer", smmsg(c, v, 2, MSG_NOSIGNAL), EPIPE);
	close(c);
	close(l);
}

int main(void)
{
	abi_init();
	loopback_up();
	udp_batches();
	udp_errors();
	udp_waits();
	tcp_batches();
	return abi_done();
}
