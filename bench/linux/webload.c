/*
 * The load generator of the web-server experiment (seed 000, figs. 5-10,
 * tables 4-5): ApacheBench's part, inside the machine.  Makes N HTTP/1.0
 * requests for PATH to 127.0.0.1:PORT with C clients at once (a poll loop
 * over C non-blocking connections; a new request starts as soon as one
 * ends), and checks each answer: status 200, the body as long as its
 * Content-Length says, and as long as -e says when given.
 *
 *   webload [-n N] [-c C] [-p PORT] [-e BYTES] [-l LABEL] [-x PREFIX]
 *           [-f PID] [-m FILE] [--short] PATH
 *
 *   -l LABEL   the metric's name (default "get"); -x PREFIX goes before it
 *   -f PID     also count page faults: the delta of fields 10 and 11
 *              (minflt, and cminflt: the faults of reaped children) of
 *              /proc/PID/stat (the server) and of field 11 of /proc/1/stat
 *              (init, which reaps the CGI programs: httpd's child that
 *              started one does not wait for it); and of "pgfault" in
 *              /proc/vmstat less this program's own faults, when the
 *              system has it
 *   -s FILE    read FILE (Tessera's /proc/tessera/cpu: CPU time by process;
 *              up to 4 files, -s again for each) just before the first
 *              request and just after the last answer (the first FILE
 *              read last before and first after), and print both copies
 *              after the figures as
 *              CPUSPLIT,<prefix><label>_c<C>,<before|after>,<FILE>,<line>
 *              (tools/bench/websplit.py makes the split of a request)
 *   -m FILE    sample the pool's memory ("pool memory: N KiB" in FILE)
 *              every 10 ms during the requests and for 500 ms after; the
 *              reads disturb the timing, so such a run prints only them
 *
 * Lines (time from CLOCK_MONOTONIC: under icount a path length):
 *   BENCH,web,<prefix><label>_c<C>,<param>,<total ns for N requests>,ns
 *   BENCH,web,<prefix><label>_c<C>_request,<param>,<mean ns per request>,ns
 *   BENCH,web,<prefix><label>_c<C>_request_max,<param>,<ns>,ns
 *   BENCH,web,<prefix><label>_c<C>_faults,<param>,<per request>,count
 *   BENCH,web,<prefix><label>_c<C>_pgfault,<param>,<per request>,count
 *   BENCH,webmem,<prefix><label>_c<C>,<ms since the first request>,<bytes>,bytes
 * <param> is -P's value (default empty).  A failed request prints
 * BENCH-ERROR and the program exits 1 after the burst.
 */
#include "bench.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#define MAX_CLIENTS 64
#define RESPONSE_MAX 65536
#define SAMPLE_NS 10000000ull
#define AFTER_NS 500000000ull
#define MAX_SAMPLES 4096

struct client {
	int fd;           /* -1: idle */
	size_t sent;      /* bytes of the request sent */
	size_t got;       /* bytes of the answer received */
	uint64_t start;
	char buf[RESPONSE_MAX];
};

static struct client clients[MAX_CLIENTS];
static char request[1024];
static size_t request_len;
static long expect_body = -1;
static long failures;

static void fail(const char *what, const char *detail)
{
	printf("BENCH-ERROR,web,%s: %s\n", what, detail);
	fflush(stdout);
	failures++;
}

/* Opens a connection; the connect goes on in the background. */
static void start(struct client *c, int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->start = now_ns();
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
		fail("connect", strerror(errno));
		close(fd);
		c->fd = -1;
		return;
	}
	c->fd = fd;
	c->sent = 0;
	c->got = 0;
}

/* Judges a whole answer: 0 when it is right. */
static int check(struct client *c)
{
	c->buf[c->got < RESPONSE_MAX ? c->got : RESPONSE_MAX - 1] = 0;
	if (c->got < 12 || strncmp(c->buf, "HTTP/1.", 7) != 0 || strncmp(c->buf + 9, "200", 3) != 0) {
		char line[64];
		snprintf(line, sizeof line, "%.40s (%zu bytes)", c->buf, c->got);
		for (char *p = line; *p; p++)
			if (*p == '\r' || *p == '\n' || *p == ',')
				*p = ' ';
		fail("status", line);
		return -1;
	}
	/* A CGI's own header lines may end in a bare newline. */
	char *end = strstr(c->buf, "\r\n\r\n"), *lf = strstr(c->buf, "\n\n");
	size_t gap = 4;
	if (lf && (!end || lf < end)) {
		end = lf;
		gap = 2;
	}
	if (!end) {
		fail("answer", "no end of header");
		return -1;
	}
	long body = (long)(c->got - (size_t)(end + gap - c->buf));
	char *cl = strcasestr(c->buf, "\r\nContent-Length:");
	if (cl && cl < end && strtol(cl + 17, NULL, 10) != body) {
		fail("answer", "body shorter or longer than its Content-Length");
		return -1;
	}
	if (expect_body >= 0 && body != expect_body) {
		char msg[64];
		snprintf(msg, sizeof msg, "body of %ld bytes, want %ld", body, expect_body);
		fail("answer", msg);
		return -1;
	}
	return 0;
}

/* One step of a client whose socket poll found ready; 1 when its request ended. */
static int step(struct client *c, short revents)
{
	if (c->sent < request_len) {
		if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
			return 0;
		ssize_t n = send(c->fd, request + c->sent, request_len - c->sent, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINPROGRESS)
				return 0;
			fail("send", strerror(errno));
			return 1;
		}
		c->sent += (size_t)n;
		return 0;
	}
	for (;;) {
		if (c->got >= RESPONSE_MAX - 1) {
			fail("answer", "longer than the buffer");
			return 1;
		}
		ssize_t n = recv(c->fd, c->buf + c->got, RESPONSE_MAX - 1 - c->got, 0);
		if (n > 0) {
			c->got += (size_t)n;
			continue;
		}
		if (n == 0) {
			check(c);
			return 1;
		}
		if (errno == EAGAIN)
			return 0;
		fail("recv", strerror(errno));
		return 1;
	}
}

/* Field `field` (1-based) of /proc/PID/stat, after the command's ')'. */
static long stat_field(long pid, int field)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if (read_whole(path, buf, sizeof buf) <= 0)
		return -1;
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	int f = 2;
	for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " "))
		if (++f == field)
			return strtol(tok, NULL, 10);
	return -1;
}

static long server_faults(long pid)
{
	long own = stat_field(pid, 10), children = stat_field(pid, 11), orphans = stat_field(1, 11);
	return own < 0 || children < 0 || orphans < 0 ? -1 : own + children + orphans;
}

/* "pgfault N" of /proc/vmstat, -1 where there is none. */
static long vmstat_pgfault(void)
{
	static char buf[16384];
	if (read_whole("/proc/vmstat", buf, sizeof buf) <= 0)
		return -1;
	char *p = strstr(buf, "\npgfault ");
	return p ? strtol(p + 9, NULL, 10) : -1;
}

/* Bytes the pool holds, from the "pool memory: N KiB" line of FILE. */
static long pool_bytes(const char *file)
{
	static char buf[16384];
	if (read_whole(file, buf, sizeof buf) < 0)
		return -1;
	char *p = strstr(buf, "pool memory: ");
	return p ? strtol(p + 13, NULL, 10) * 1024 : -1;
}

static void print_lines(const char *metric, const char *when, const char *file, char *text)
{
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		printf("CPUSPLIT,%s,%s,%s,%s\n", metric, when, file, line);
}

#define SPLIT_FILES 4
static const char *split_files[SPLIT_FILES];
static int nsplit;
static char split_before[SPLIT_FILES][32768], split_after[SPLIT_FILES][32768];

struct sample {
	uint64_t at;
	long bytes;
};
static struct sample samples[MAX_SAMPLES];
static int nsamples;

static void take_sample(const char *file, uint64_t t0)
{
	if (!file || nsamples == MAX_SAMPLES)
		return;
	samples[nsamples].at = now_ns() - t0;
	samples[nsamples].bytes = pool_bytes(file);
	nsamples++;
}

static void usage(const char *self)
{
	fprintf(stderr,
		"usage: %s [-n N] [-c C] [-p PORT] [-e BYTES] [-l LABEL] [-x PREFIX] [-P PARAM] "
		"[-f PID] [-s FILE] [-m FILE] [--short] PATH\n",
		self);
	exit(2);
}

int main(int argc, char **argv)
{
	long n = 100, conc = 1, port = 80, fault_pid = 0;
	const char *label = "get", *prefix = "", *param = "", *pool_file = NULL, *path = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--short") == 0) {
			n = 10;
			continue;
		}
		if (a[0] != '-') {
			if (path)
				usage(argv[0]);
			path = a;
			continue;
		}
		if (!v || a[1] == 0 || a[2] != 0)
			usage(argv[0]);
		i++;
		switch (a[1]) {
		case 'n': n = strtol(v, NULL, 10); break;
		case 'c': conc = strtol(v, NULL, 10); break;
		case 'p': port = strtol(v, NULL, 10); break;
		case 'e': expect_body = strtol(v, NULL, 10); break;
		case 'l': label = v; break;
		case 'x': prefix = v; break;
		case 'P': param = v; break;
		case 'f': fault_pid = strtol(v, NULL, 10); break;
		case 'm': pool_file = v; break;
		case 's':
			if (nsplit == SPLIT_FILES)
				usage(argv[0]);
			split_files[nsplit++] = v;
			break;
		default: usage(argv[0]);
		}
	}
	if (!path || path[0] != '/' || n < 1 || conc < 1 || conc > MAX_CLIENTS || port < 1 || port > 65535 ||
	    strlen(path) > 512)
		usage(argv[0]);
	request_len = (size_t)snprintf(request, sizeof request,
				       "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: webload\r\n\r\n", path);
	for (long i = 0; i < conc; i++)
		clients[i].fd = -1;

	long server0 = fault_pid ? server_faults(fault_pid) : -1;
	long vm0 = fault_pid ? vmstat_pgfault() : -1;
	long self0 = minflt_self();
	for (int i = nsplit - 1; i >= 0; i--)
		read_whole(split_files[i], split_before[i], sizeof split_before[i]);
	uint64_t t0 = now_ns(), next_sample = 0, worst = 0, sum = 0;
	long started = 0, done = 0;
	take_sample(pool_file, t0);
	next_sample = SAMPLE_NS;
	struct pollfd pfd[MAX_CLIENTS];
	while (done < n) {
		int k = 0;
		for (long i = 0; i < conc; i++) {
			struct client *c = &clients[i];
			if (c->fd < 0 && started < n) {
				started++;
				start(c, (int)port);
				if (c->fd < 0) {
					done++;
					continue;
				}
			}
			if (c->fd >= 0) {
				pfd[k].fd = c->fd;
				pfd[k].events = c->sent < request_len ? POLLOUT : POLLIN;
				pfd[k].revents = 0;
				k++;
			}
		}
		if (k == 0)
			break;
		int timeout = pool_file ? 10 : 30000;
		int r = poll(pfd, (nfds_t)k, timeout);
		if (r < 0 && errno != EINTR)
			die("poll");
		if (r == 0 && !pool_file) {
			fail("poll", "no answer in 30 s");
			break;
		}
		for (long i = 0, j = 0; i < conc; i++) {
			struct client *c = &clients[i];
			if (c->fd < 0 || pfd[j].fd != c->fd)
				continue;
			short ev = pfd[j++].revents;
			if (ev && step(c, ev)) {
				uint64_t took = now_ns() - c->start;
				sum += took;
				if (took > worst)
					worst = took;
				close(c->fd);
				c->fd = -1;
				done++;
			}
		}
		if (pool_file && now_ns() - t0 >= next_sample) {
			take_sample(pool_file, t0);
			next_sample += SAMPLE_NS;
		}
	}
	uint64_t t1 = now_ns();
	for (int i = 0; i < nsplit; i++)
		read_whole(split_files[i], split_after[i], sizeof split_after[i]);
	long self1 = minflt_self();
	if (fault_pid) {
		/* The last CGI programs end, and are reaped, after their answers. */
		struct timespec ts = { 0, 200000000 };
		nanosleep(&ts, NULL);
	}
	long server1 = fault_pid ? server_faults(fault_pid) : -1;
	long vm1 = fault_pid ? vmstat_pgfault() : -1;
	/* After the burst: what the pool keeps, and what reduce gives back. */
	while (pool_file && now_ns() - t1 < AFTER_NS) {
		struct timespec ts = { 0, (long)SAMPLE_NS };
		nanosleep(&ts, NULL);
		take_sample(pool_file, t0);
	}

	char metric[256];
	snprintf(metric, sizeof metric, "%s%s_c%ld", prefix, label, conc);
	for (int i = 0; i < nsamples; i++)
		printf("BENCH,webmem,%s,%llu,%ld,bytes\n", metric, (unsigned long long)(samples[i].at / 1000000),
		       samples[i].bytes);
	fflush(stdout);
	if (pool_file)
		return failures ? 1 : 0;
	for (int i = 0; i < nsplit; i++) {
		print_lines(metric, "before", split_files[i], split_before[i]);
		print_lines(metric, "after", split_files[i], split_after[i]);
	}
	fflush(stdout);
	report("web", metric, param, (double)(t1 - t0), "ns");
	char m2[300];
	snprintf(m2, sizeof m2, "%s_request", metric);
	report("web", m2, param, (double)sum / (double)n, "ns");
	snprintf(m2, sizeof m2, "%s_request_max", metric);
	report("web", m2, param, (double)worst, "ns");
	if (server0 >= 0 && server1 >= 0) {
		snprintf(m2, sizeof m2, "%s_faults", metric);
		report_count("web", m2, param, (double)(server1 - server0) / (double)n);
	}
	if (vm0 >= 0 && vm1 >= 0) {
		snprintf(m2, sizeof m2, "%s_pgfault", metric);
		report_count("web", m2, param, (double)(vm1 - vm0 - (self1 - self0)) / (double)n);
	}
	return failures ? 1 : 0;
}
