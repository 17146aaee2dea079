/*
 * Waiting for descriptors: poll, ppoll, select and pselect6 on pipes, files
 * and device files: the events each reports (POLLHUP, POLLERR, POLLNVAL),
 * timeouts (select and pselect6 write the time left back), a signal mask
 * that ppoll/pselect6 install for the wait, and the errors (select's EBADF
 * where poll reports POLLNVAL).
 */
#include "abi.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <time.h>

static const char *events(short ev)
{
	static char buf[128];
	buf[0] = 0;
	static const struct {
		short bit;
		const char *name;
	} names[] = { { POLLIN, "POLLIN" },	    { POLLPRI, "POLLPRI" },	  { POLLOUT, "POLLOUT" },
		      { POLLERR, "POLLERR" },	    { POLLHUP, "POLLHUP" },	  { POLLNVAL, "POLLNVAL" },
		      { POLLRDNORM, "POLLRDNORM" }, { POLLWRNORM, "POLLWRNORM" }, { POLLRDHUP, "POLLRDHUP" } };
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
		if (ev & names[i].bit) {
			size_t n = strlen(buf);
			snprintf(buf + n, sizeof buf - n, "%s%s", n ? "|" : "", names[i].name);
		}
	return buf[0] ? buf : "0";
}

static short poll_one(int fd, short want)
{
	struct pollfd p = { fd, want, 0 };
	poll(&p, 1, 0);
	return p.revents;
}

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static volatile int handled;

static void on_usr1(int s)
{
	(void)s;
	handled++;
}

int main(void)
{
	abi_init();
	int p[2];
	SETUP(pipe(p));
	struct pollfd pf[4];

	section("poll on a pipe");
	pf[0] = (struct pollfd){ p[0], POLLIN, 0 };
	EXPECT_EQ("empty pipe, timeout 0", poll(pf, 1, 0), 0);
	EXPECT_STR("revents", events(pf[0].revents), "0");
	EXPECT_STR("write end", events(poll_one(p[1], POLLIN | POLLOUT)), "POLLOUT");
	write(p[1], "ab", 2);
	EXPECT_STR("after a write, read end", events(poll_one(p[0], POLLIN | POLLRDNORM)), "POLLIN|POLLRDNORM");
	close(p[1]);
	EXPECT_STR("writer closed, data left", events(poll_one(p[0], POLLIN)), "POLLIN|POLLHUP");
	char c[2];
	read(p[0], c, 2);
	EXPECT_STR("writer closed, empty", events(poll_one(p[0], POLLIN)), "POLLHUP");
	EXPECT_STR("POLLHUP is reported even when not asked for", events(poll_one(p[0], 0)), "POLLHUP");
	close(p[0]);
	SETUP(pipe(p));
	close(p[0]);
	EXPECT_STR("reader closed, write end", events(poll_one(p[1], POLLOUT)), "POLLOUT|POLLERR");
	close(p[1]);
	SETUP(pipe(p));

	section("poll on other descriptors");
	int f = open("file", O_RDWR | O_CREAT, 0644);
	EXPECT_STR("a regular file", events(poll_one(f, POLLIN | POLLOUT)), "POLLIN|POLLOUT");
	int dn = open("/dev/null", O_RDWR);
	EXPECT_STR("/dev/null", events(poll_one(dn, POLLIN | POLLOUT)), "POLLIN|POLLOUT");
	pf[0] = (struct pollfd){ 99, POLLIN, 0 };
	pf[1] = (struct pollfd){ -1, POLLIN, 7 };
	pf[2] = (struct pollfd){ p[1], POLLOUT, 0 };
	EXPECT_EQ("a closed descriptor, a negative one and a ready one: count", poll(pf, 3, 0), 2);
	EXPECT_STR("closed: revents", events(pf[0].revents), "POLLNVAL");
	EXPECT_STR("negative: ignored, revents cleared", events(pf[1].revents), "0");
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	EXPECT_ERR("more descriptors than RLIMIT_NOFILE", poll(pf, rl.rlim_cur + 1, 0), EINVAL);
	EXPECT_ERR("a bad array", poll(BAD_PTR, 1, 0), EFAULT);
	long long t0 = now_ns();
	pf[0] = (struct pollfd){ p[0], POLLIN, 0 };
	EXPECT_EQ("a timeout of 50 ms on an empty pipe", poll(pf, 1, 50), 0);
	EXPECT_TRUE("took at least 50 ms", now_ns() - t0 >= 50000000);

	section("ppoll");
	struct timespec ts = { 0, 30000000 };
	t0 = now_ns();
	EXPECT_EQ("a 30 ms timeout", ppoll(pf, 1, &ts, NULL), 0);
	EXPECT_TRUE("took at least 30 ms", now_ns() - t0 >= 30000000);
	signal(SIGUSR1, on_usr1);
	sigset_t block, none;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	raise(SIGUSR1);
	sigemptyset(&none);
	handled = 0;
	struct timespec long_ts = { 10, 0 };
	EXPECT_ERR("with a mask that unblocks a pending signal", ppoll(pf, 1, &long_ts, &none), EINTR);
	EXPECT_EQ("the handler ran", handled, 1);
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	EXPECT_TRUE("the old mask is back", sigismember(&cur, SIGUSR1));
	struct timespec badts = { 0, 1000000000 };
	EXPECT_ERR("tv_nsec 10^9", ppoll(pf, 1, &badts, NULL), EINVAL);
	EXPECT_ERR("sigsetsize 4", syscall(SYS_ppoll, pf, 1, &ts, &none, 4), EINVAL);

	section("select");
	fd_set rs, ws, es;
	FD_ZERO(&rs);
	FD_ZERO(&ws);
	FD_ZERO(&es);
	FD_SET(p[0], &rs);
	FD_SET(p[1], &ws);
	FD_SET(p[0], &es);
	struct timeval tv = { 0, 0 };
	EXPECT_EQ("read end empty, write end ready", select(p[1] + 1, &rs, &ws, &es, &tv), 1);
	EXPECT_TRUE("only the write end is left in the sets",
		    !FD_ISSET(p[0], &rs) && FD_ISSET(p[1], &ws) && !FD_ISSET(p[0], &es));
	write(p[1], "x", 1);
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	tv = (struct timeval){ 2, 0 };
	/* Linux writes the time left back (musl's select hides it: raw call). */
	EXPECT_EQ("with data", syscall(SYS_select, p[0] + 1, &rs, NULL, NULL, &tv), 1);
	EXPECT_TRUE("the timeval now holds the time left (less than 2 s)",
		    tv.tv_sec < 2 && (tv.tv_sec > 0 || tv.tv_usec > 0));
	read(p[0], c, 1);
	tv = (struct timeval){ 0, 30000 };
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	EXPECT_EQ("30 ms timeout", syscall(SYS_select, p[0] + 1, &rs, NULL, NULL, &tv), 0);
	EXPECT_TRUE("the timeval is then zero", tv.tv_sec == 0 && tv.tv_usec == 0);
	int closed = dup(0);
	close(closed);
	FD_ZERO(&rs);
	FD_SET(closed, &rs);
	tv = (struct timeval){ 0, 0 };
	EXPECT_ERR("a closed descriptor in a set", select(closed + 1, &rs, NULL, NULL, &tv), EBADF);
	EXPECT_ERR("nfds -1", syscall(SYS_select, -1, NULL, NULL, NULL, &tv), EINVAL);
	tv = (struct timeval){ 0, -1 };
	EXPECT_ERR("a negative tv_usec", syscall(SYS_select, 1, NULL, NULL, NULL, &tv), EINVAL);
	tv = (struct timeval){ 0, 0 };
	EXPECT_EQ("no sets at all", select(0, NULL, NULL, NULL, &tv), 0);
	EXPECT_ERR("a bad set pointer", select(1, BAD_PTR, NULL, NULL, &tv), EFAULT);

	section("pselect6");
	struct {
		const sigset_t *ss;
		size_t len;
	} mask = { &none, 8 };
	raise(SIGUSR1);
	handled = 0;
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	struct timespec pts = { 10, 0 };
	EXPECT_ERR("with a mask that unblocks a pending signal",
		   syscall(SYS_pselect6, p[0] + 1, &rs, NULL, NULL, &pts, &mask), EINTR);
	EXPECT_EQ("the handler ran", handled, 1);
	write(p[1], "y", 1);
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	pts = (struct timespec){ 2, 0 };
	EXPECT_EQ("with data", syscall(SYS_pselect6, p[0] + 1, &rs, NULL, NULL, &pts, NULL), 1);
	EXPECT_TRUE("the raw call writes the time left back too", pts.tv_sec < 2);
	mask.len = 4;
	EXPECT_ERR("sigsetsize 4", syscall(SYS_pselect6, p[0] + 1, &rs, NULL, NULL, &pts, &mask), EINVAL);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	close(f);
	close(dn);
	return abi_done();
}
