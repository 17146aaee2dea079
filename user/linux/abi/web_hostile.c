/*
 * A web server under load and abuse: busybox httpd (the experiment's
 * server) on the loopback gets 10,000 requests ten at a time, then
 * clients that connect and vanish, stop half-way through a request, or
 * hold half-open connections, 500 connections at once, malformed and
 * truncated requests, and CGI programs killed while they answer. After
 * each, the server must still answer a plain request. At the end the
 * system must be back where it was before the load: on Tessera the
 * TCP/IP server's sockets and clients, the kernel's live resources and
 * the free memory (/proc/tessera/net, /proc/tessera/res, /proc/meminfo);
 * Linux, the reference, has no such files and skips that comparison.
 *
 * Every client waits at most WAIT_MS for the server, so that a server that
 * stopped answering fails a check instead of hanging the test.
 */
#include "abi.h"
#include "levels.h"
#include "sock.h"

#include <netinet/tcp.h>
#include <dirent.h>
#include <poll.h>
#include <time.h>

#define PORT 8091
#define WAIT_MS 20000
#define LOAD_N 10000
#define LOAD_C 10
#define MANY 500
#define MANY_PROCS 5
#define ANSWER_MAX 16384

static char root[512];
static pid_t server;
static char page[1025];
static char answer[ANSWER_MAX];

static void write_file(const char *path, const char *text, int mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	SETUP(fd);
	SETUP(write(fd, text, strlen(text)));
	close(fd);
}

/* ------------------------------------------------------------- clients */

static int open_conn(int nonblock)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct sockaddr_in a = loop_addr(PORT);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Waits for `events` on fd, at most WAIT_MS: 1 ready, 0 timed out. */
static int wait_for(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int r;
	do
		r = poll(&p, 1, WAIT_MS);
	while (r < 0 && errno == EINTR);
	return r > 0;
}

/* Reads to the end of the stream: the bytes read, or -1 (errno set; ETIMEDOUT when the server went quiet). */
static long read_all(int fd, char *buf, size_t max)
{
	size_t got = 0;
	for (;;) {
		if (!wait_for(fd, POLLIN)) {
			errno = ETIMEDOUT;
			return -1;
		}
		ssize_t n = recv(fd, buf + got, max - 1 - got, MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
		if (got >= max - 1)
			break;
	}
	buf[got] = 0;
	return (long)got;
}

/*
 * One exchange: sends `len` bytes of `req` (shutting the sending side after
 * them when `shut`), reads the answer. Returns its status code, 0 when the
 * server closed without a word, -1 with errno on a failure.
 */
static int exchange(const char *req, size_t len, int shut, char *answer, size_t max)
{
	int fd = open_conn(0);
	if (fd < 0)
		return -1;
	size_t sent = 0;
	while (sent < len) {
		ssize_t n = send(fd, req + sent, len - sent, MSG_NOSIGNAL);
		if (n < 0) {
			/* The server may answer and close before it read all. */
			if (errno == EPIPE || errno == ECONNRESET)
				break;
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		sent += (size_t)n;
	}
	if (shut)
		shutdown(fd, SHUT_WR);
	long n = read_all(fd, answer, max);
	int e = errno;
	close(fd);
	if (n < 0) {
		errno = e;
		return -1;
	}
	if (n == 0)
		return 0;
	if (n < 12 || strncmp(answer, "HTTP/1.", 7) != 0)
		return 999;
	return atoi(answer + 9);
}

/* The body's length; a CGI's header may end in bare newlines. */
static long body_length(const char *answer)
{
	const char *end = strstr(answer, "\r\n\r\n"), *lf = strstr(answer, "\n\n");
	if (lf && (!end || lf < end))
		return (long)strlen(lf + 2);
	return end ? (long)strlen(end + 4) : -1;
}

/* A plain GET of the page: whether the server answers it whole. */
static int serves(void)
{
	static char answer[ANSWER_MAX];
	const char *req = "GET /index.html HTTP/1.0\r\n\r\n";
	return exchange(req, strlen(req), 0, answer, sizeof answer) == 200 &&
	       body_length(answer) == (long)strlen(page);
}

/* What an abusive exchange got, in words that are the same on every correct system. */
static const char *outcome(int status)
{
	static char buf[32];
	if (status == -1)
		return errno == ETIMEDOUT ? "no answer" : "reset";
	if (status == 0)
		return "closed";
	snprintf(buf, sizeof buf, "%d", status);
	return buf;
}

/* ------------------------------------------------------------- the load */

struct client {
	int fd;
	size_t sent, got;
	char buf[ANSWER_MAX];
};

static struct client load_clients[LOAD_C];

/*
 * N requests for `path`, C at once (a new one as soon as one ends), each
 * answer checked: status 200 and a body of `want` bytes. The failed ones.
 */
static long load(long n, int c, const char *path, long want)
{
	char req[256];
	size_t len = (size_t)snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
	long started = 0, done = 0, failed = 0;
	for (int i = 0; i < c; i++)
		load_clients[i].fd = -1;
	while (done < n) {
		struct pollfd p[LOAD_C];
		int k = 0;
		for (int i = 0; i < c; i++) {
			struct client *cl = &load_clients[i];
			if (cl->fd < 0 && started < n) {
				started++;
				cl->fd = open_conn(1);
				cl->sent = cl->got = 0;
				if (cl->fd < 0) {
					failed++;
					done++;
					continue;
				}
			}
			if (cl->fd >= 0) {
				p[k].fd = cl->fd;
				p[k].events = cl->sent < len ? POLLOUT : POLLIN;
				p[k].revents = 0;
				k++;
			}
		}
		if (k == 0)
			continue;
		int r = poll(p, (nfds_t)k, WAIT_MS);
		if (r == 0) {
			/* The server stopped answering: all that is left fails. */
			failed += n - done;
			break;
		}
		for (int i = 0, j = 0; i < c && j < k; i++) {
			struct client *cl = &load_clients[i];
			if (cl->fd < 0 || p[j].fd != cl->fd)
				continue;
			short ev = p[j++].revents;
			if (!ev)
				continue;
			int end = 0, bad = 0;
			if (cl->sent < len) {
				ssize_t s = send(cl->fd, req + cl->sent, len - cl->sent, MSG_NOSIGNAL);
				if (s > 0)
					cl->sent += (size_t)s;
				else if (s < 0 && errno != EAGAIN)
					end = bad = 1;
			} else {
				for (;;) {
					ssize_t m = recv(cl->fd, cl->buf + cl->got, sizeof cl->buf - 1 - cl->got, 0);
					if (m > 0 && cl->got + (size_t)m < sizeof cl->buf - 1) {
						cl->got += (size_t)m;
						continue;
					}
					if (m == 0) {
						cl->buf[cl->got] = 0;
						end = 1;
						bad = strncmp(cl->buf, "HTTP/1.", 7) != 0 || strncmp(cl->buf + 9, "200", 3) != 0 ||
						      body_length(cl->buf) != want;
					} else if (m > 0 || errno != EAGAIN) {
						end = bad = 1;
					}
					break;
				}
			}
			if (end) {
				close(cl->fd);
				cl->fd = -1;
				done++;
				failed += bad;
			}
		}
	}
	for (int i = 0; i < c; i++)
		if (load_clients[i].fd >= 0)
			close(load_clients[i].fd);
	return failed;
}

/* ------------------------------------------------------------- the server */

static void start_server(void)
{
	static const char *const paths[] = { "/usr/sbin/httpd", "/bin/httpd", "/sbin/httpd" };
	char port[32];
	snprintf(port, sizeof port, "127.0.0.1:%d", PORT);
	server = fork();
	SETUP(server);
	if (server == 0) {
		/* A group of its own: its children end with it at the end. */
		setpgid(0, 0);
		for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
			execl(paths[i], "httpd", "-f", "-p", port, "-h", root, (char *)NULL);
		execlp("busybox", "httpd", "-f", "-p", port, "-h", root, (char *)NULL);
		_exit(127);
	}
	long until = now_ms() + WAIT_MS;
	while (!serves() && now_ms() < until)
		sleep_ms(200);
}

/* Connections opened by the children: each holds its share open until told. */
static void many_connections(void)
{
	int go[2], ready[2];
	SETUP(pipe(go));
	SETUP(pipe(ready));
	pid_t kids[MANY_PROCS];
	for (int k = 0; k < MANY_PROCS; k++) {
		kids[k] = fork();
		SETUP(kids[k]);
		if (kids[k] != 0)
			continue;
		close(go[1]);
		int fds[MANY / MANY_PROCS], n = 0;
		for (int i = 0; i < MANY / MANY_PROCS; i++) {
			int fd = open_conn(1);
			if (fd >= 0)
				fds[n++] = fd;
		}
		/* Each has a second to finish connecting (or to be refused). */
		long until = now_ms() + 1000;
		while (now_ms() < until) {
			struct pollfd p[MANY / MANY_PROCS];
			for (int i = 0; i < n; i++)
				p[i] = (struct pollfd){ .fd = fds[i], .events = POLLOUT };
			poll(p, (nfds_t)n, 100);
		}
		char c = 'r';
		if (write(ready[1], &c, 1) != 1)
			_exit(2);
		/* Held open until the parent closes its end. */
		read(go[0], &c, 1);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	char c;
	int up = 0;
	for (int k = 0; k < MANY_PROCS; k++)
		up += read(ready[0], &c, 1) == 1;
	close(ready[0]);
	EXPECT_EQ("clients holding their connections", up, MANY_PROCS);
	close(go[1]);
	int clean = 0;
	for (int k = 0; k < MANY_PROCS; k++) {
		int st = 0;
		waitpid(kids[k], &st, 0);
		clean += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	EXPECT_EQ("clients that ended cleanly", clean, MANY_PROCS);
}

/* ------------------------------------------------------------- main */

/* ------------------------------------------------------------- the abuse */

static void go_away(void)
{
	for (int i = 0; i < 50; i++) {
		int fd = open_conn(0);
		if (fd >= 0)
			close(fd);
	}
	EXPECT_TRUE("50 connect and close: the server answers", serves());
	for (int i = 0; i < 50; i++) {
		int fd = open_conn(0);
		if (fd >= 0) {
			send(fd, "GET /index.ht", 13, MSG_NOSIGNAL);
			close(fd);
		}
	}
	EXPECT_TRUE("50 leave half a request: the server answers", serves());
	for (int i = 0; i < 50; i++) {
		int fd = open_conn(0);
		if (fd >= 0) {
			const char *req = i % 2 ? "GET /index.html HTTP/1.0\r\n\r\n" : "GET /cgi-bin/ok.cgi HTTP/1.0\r\n\r\n";
			send(fd, req, strlen(req), MSG_NOSIGNAL);
			/* Closing with the answer unread resets the connection. */
			struct linger lg = { 1, 0 };
			if (i % 3 == 0)
				setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
			close(fd);
		}
	}
	EXPECT_TRUE("50 ask and leave before the answer: the server answers", serves());
}

static void half_open(void)
{
	int held[40];
	for (int i = 0; i < 40; i++) {
		held[i] = open_conn(0);
		if (held[i] >= 0 && i % 2)
			send(held[i], "GET / HTTP/1.0\r\nHost: x\r\n", 25, MSG_NOSIGNAL);
		if (held[i] >= 0 && i % 4 == 3)
			shutdown(held[i], SHUT_RD);
	}
	EXPECT_TRUE("40 silent or unfinished connections held: the server answers", serves());
	for (int i = 0; i < 40; i++)
		if (held[i] >= 0)
			close(held[i]);
	EXPECT_TRUE("and after they close", serves());
}

static void five_hundred(void)
{
	many_connections();
	EXPECT_TRUE("the server answers after them", serves());
}

static void malformed(void)
{
	int st;
	static const struct {
		const char *name;
		const char *req;
		size_t len;
	} bad[] = {
		{ "an empty line", "\r\n\r\n", 4 },
		{ "no method", "/index.html HTTP/1.0\r\n\r\n", 24 },
		{ "an unknown method", "BREW /index.html HTTP/1.0\r\n\r\n", 29 },
		{ "no path", "GET\r\n\r\n", 7 },
		{ "a path out of the root", "GET /../../../etc/passwd HTTP/1.0\r\n\r\n", 37 },
		{ "a NUL in the path", "GET /index\0.html HTTP/1.0\r\n\r\n", 29 },
		{ "binary bytes", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\xff\xfe\r\n\r\n", 17 },
		{ "a negative Content-Length", "POST /cgi-bin/ok.cgi HTTP/1.0\r\nContent-Length: -5\r\n\r\n", 53 },
		{ "a huge Content-Length", "POST /cgi-bin/ok.cgi HTTP/1.0\r\nContent-Length: 99999999999999999999\r\n\r\n", 71 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int st = exchange(bad[i].req, bad[i].len, 1, answer, sizeof answer);
		char name[96];
		snprintf(name, sizeof name, "%s: an error, not a page", bad[i].name);
		EXPECT_TRUE(name, st != 200 && !(st == -1 && errno == ETIMEDOUT));
	}
	/* A request line longer than any buffer. */
	const char *odd = "GET /index.html HTTP/1.0\r\n: :\r\nX\r\n\r\n";
	st = exchange(odd, strlen(odd), 1, answer, sizeof answer);
	EXPECT_TRUE("header lines without a name: an answer", st > 0);
	static char longreq[70000];
	memcpy(longreq, "GET /", 5);
	memset(longreq + 5, 'a', sizeof longreq - 5);
	memcpy(longreq + sizeof longreq - 13, " HTTP/1.0\r\n\r\n", 13);
	st = exchange(longreq, sizeof longreq, 1, answer, sizeof answer);
	EXPECT_TRUE("a 70,000-byte request line: an error, not a page", st != 200 && !(st == -1 && errno == ETIMEDOUT));
	static char headers[40000];
	strcpy(headers, "GET /index.html HTTP/1.0\r\n");
	while (strlen(headers) < sizeof headers - 40)
		strcat(headers, "X-Filler: 0123456789012345678\r\n");
	strcat(headers, "\r\n");
	st = exchange(headers, strlen(headers), 1, answer, sizeof answer);
	EXPECT_TRUE("1,300 header lines: an answer", st != -1 || errno != ETIMEDOUT);
	EXPECT_TRUE("the server answers after them", serves());
}

static void truncated(void)
{
	static const char *const cut[] = {
		"G", "GET /index.html", "GET /index.html HTTP/1.0\r\n", "GET /index.html HTTP/1.0\r\nHost: 127.0",
		"POST /cgi-bin/ok.cgi HTTP/1.0\r\nContent-Length: 100\r\n\r\nonly ten..",
	};
	for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
		int s = exchange(cut[i], strlen(cut[i]), 1, answer, sizeof answer);
		char name[64];
		snprintf(name, sizeof name, "cut after %zu bytes: answered or closed", strlen(cut[i]));
		EXPECT_TRUE(name, !(s == -1 && errno == ETIMEDOUT));
	}
	EXPECT_TRUE("the server answers after them", serves());
}

static void killed_cgi(void)
{
	const char *die = "GET /cgi-bin/die.cgi HTTP/1.0\r\n\r\n";
	int st = exchange(die, strlen(die), 0, answer, sizeof answer);
	EXPECT_STR("killed before a word: the client gets", outcome(st), "closed");
	const char *late = "GET /cgi-bin/dielate.cgi HTTP/1.0\r\n\r\n";
	st = exchange(late, strlen(late), 0, answer, sizeof answer);
	EXPECT_TRUE("killed after a line: the client gets the line, then the end",
		    st == 200 && strstr(answer, "half an answer") != NULL);
	EXPECT_TRUE("the server answers after them", serves());
	EXPECT_EQ("CGI requests failed after all this", load(20, 4, "/cgi-bin/ok.cgi", 7), 0);
}

int main(void)
{
	abi_init();
	loopback_up();
	signal(SIGPIPE, SIG_IGN);

	SETUP(getcwd(root, sizeof root - 8) ? 0 : -1);
	strcat(root, "/www");
	SETUP(mkdir("www", 0755));
	SETUP(mkdir("www/cgi-bin", 0755));
	for (int i = 0; i < 16; i++)
		strcat(page, "<p>a page of sixteen lines, each sixty-four bytes long ...</p>\n");
	write_file("www/index.html", page, 0644);
	write_file("www/cgi-bin/ok.cgi", "#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho 'cgi ok'\n", 0755);
	/* Killed before a word, and killed after its header and a line. */
	write_file("www/cgi-bin/die.cgi", "#!/bin/sh\nkill -9 $$\n", 0755);
	write_file("www/cgi-bin/dielate.cgi",
		   "#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho 'half an answer'\nkill -9 $$\n", 0755);

	section("the server");
	start_server();
	EXPECT_TRUE("busybox httpd answers", serves());
	/* Everything the server touches once, before the level is taken. */
	EXPECT_EQ("warm-up requests failed", load(30, LOAD_C, "/index.html", (long)strlen(page)), 0);
	EXPECT_EQ("warm-up CGI requests failed", load(30, LOAD_C, "/cgi-bin/ok.cgi", 7), 0);
	struct level base;
	sleep_ms(500);
	take_level(&base);

	section("10000 requests, 10 at a time");
	EXPECT_EQ("failed requests", load(LOAD_N, LOAD_C, "/index.html", (long)strlen(page)), 0);
	EXPECT_EQ("failed CGI requests of 100", load(100, LOAD_C, "/cgi-bin/ok.cgi", 7), 0);
	expect_level("sockets, processes and memory back to their level", &base, &base);

	/*
	 * Each abuse twice: after the first round the exact counts must be
	 * back, and the second round must take no memory on top of the first.
	 */
	static const struct {
		const char *name;
		void (*run)(void);
	} parts[] = {
		{ "clients that go away", go_away },
		{ "half-open connections", half_open },
		{ "500 connections at once", five_hundred },
		{ "malformed requests", malformed },
		{ "truncated streams", truncated },
		{ "killed CGI programs", killed_cgi },
	};
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		section(parts[i].name);
		parts[i].run();
		struct level peak;
		char why[400];
		settle(&base, NULL, why, sizeof why);
		take_level(&peak);
		say("-- again");
		parts[i].run();
		expect_level("back to the level, nothing taken by the second round", &base, &peak);
	}

	/* Memory after the last round was judged above; the heaps keep their peak. */
	section("the end");
	expect_level("sockets and processes back to their level", &base, NULL);
	kill(-server, SIGTERM);
	int wst = 0;
	waitpid(server, &wst, 0);
	EXPECT_STATUS("the server ends when told", wst, "killed by SIGTERM");
	return abi_done();
}
