/*
 * POSIX message queues: mq_open and its name, attribute and permission
 * errors, mq_unlink, mq_timedsend and mq_timedreceive (priority order,
 * sizes, access modes, O_NONBLOCK, absolute timeouts, a signal), mq_notify
 * (SIGEV_SIGNAL's siginfo, SIGEV_NONE, one registration per queue),
 * mq_getsetattr, poll, fork and close-on-exec, a queue that outlives its
 * name, /proc/sys/fs/mqueue, and hostile use: bad descriptors and
 * pointers, huge sizes, RLIMIT_MSGQUEUE, a receiver killed while it waits,
 * a flood to a queue nobody reads.
 */
#include "abi.h"
#include <mqueue.h>
#include <poll.h>
#include <pwd.h>
#include <sys/resource.h>
#include <time.h>

/* The kernel's own calls: the name without libc's leading '/'. */
static long k_open(const char *name, int oflag, int mode, struct mq_attr *attr)
{
	long r = sys6(SYS_mq_open, (long)name, oflag, mode, (long)attr, 0, 0);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

static long k_call(long n, long a, long b, long c, long d, long e)
{
	long r = sys6(n, a, b, c, d, e, 0);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

static long curmsgs(mqd_t q)
{
	struct mq_attr a;
	if (mq_getattr(q, &a) != 0)
		return -1;
	return a.mq_curmsgs;
}

static struct timespec in_ms(long ms)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += (ms % 1000) * 1000000;
	t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return t;
}

static void names(void)
{
	section("names and attributes");
	char longname[300];
	EXPECT_ERR("empty name", k_open("", O_CREAT | O_RDWR, 0600, NULL), ENOENT);
	EXPECT_ERR("name with a slash", k_open("a/b", O_CREAT | O_RDWR, 0600, NULL), EACCES);
	EXPECT_ERR("name ..", k_open("..", O_CREAT | O_RDWR, 0600, NULL), EACCES);
	memset(longname, 'a', 256);
	longname[256] = 0;
	EXPECT_ERR("256-byte name", k_open(longname, O_CREAT | O_RDWR, 0600, NULL), ENAMETOOLONG);
	longname[255] = 0;
	EXPECT_ERR("255-byte name, absent", k_open(longname, O_RDWR, 0600, NULL), ENOENT);
	long q = k_open(longname, O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	EXPECT_TRUE("255-byte name made", q >= 0);
	close(q);
	EXPECT_OK("255-byte name unlinked", k_call(SYS_mq_unlink, (long)longname, 0, 0, 0, 0));
	EXPECT_ERR("bad name pointer", k_open(BAD_PTR, O_CREAT | O_RDWR, 0600, NULL), EFAULT);
	EXPECT_ERR("bad attr pointer", k_open("abi_mq", O_CREAT | O_RDWR, 0600, BAD_PTR), EFAULT);
	EXPECT_ERR("unlink bad pointer", k_call(SYS_mq_unlink, (long)BAD_PTR, 0, 0, 0, 0), EFAULT);
	EXPECT_ERR("unlink absent", mq_unlink("/abi_mq_absent"), ENOENT);

	struct mq_attr a = {.mq_maxmsg = 0, .mq_msgsize = 16};
	EXPECT_ERR("maxmsg 0", mq_open("/abi_mq", O_CREAT | O_RDWR, 0600, &a), EINVAL);
	a.mq_maxmsg = 1, a.mq_msgsize = -1;
	EXPECT_ERR("msgsize -1", mq_open("/abi_mq", O_CREAT | O_RDWR, 0600, &a), EINVAL);
	a.mq_maxmsg = 65537, a.mq_msgsize = 1;
	EXPECT_ERR("maxmsg past the hard limit", mq_open("/abi_mq", O_CREAT | O_RDWR, 0600, &a), EINVAL);
	a.mq_maxmsg = 1, a.mq_msgsize = (16 << 20) + 1;
	EXPECT_ERR("msgsize past the hard limit", mq_open("/abi_mq", O_CREAT | O_RDWR, 0600, &a), EINVAL);
	a.mq_maxmsg = 65536, a.mq_msgsize = 16 << 20;
	EXPECT_ERR("past RLIMIT_MSGQUEUE", mq_open("/abi_mq", O_CREAT | O_RDWR, 0600, &a), EMFILE);

	mqd_t m = mq_open("/abi_mq", O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	EXPECT_TRUE("made with defaults", m >= 0);
	struct mq_attr g;
	EXPECT_OK("getattr", mq_getattr(m, &g));
	EXPECT_EQ("default maxmsg", g.mq_maxmsg, 10);
	EXPECT_EQ("default msgsize", g.mq_msgsize, 8192);
	EXPECT_EQ("flags", g.mq_flags, 0);
	EXPECT_ERR("O_EXCL of an existing one", mq_open("/abi_mq", O_CREAT | O_EXCL | O_RDWR, 0600, NULL), EEXIST);
	EXPECT_ERR("O_WRONLY|O_RDWR of an existing one", mq_open("/abi_mq", O_WRONLY | O_RDWR), EINVAL);
	mqd_t m2 = mq_open("/abi_mq", O_RDONLY);
	EXPECT_TRUE("opened again", m2 >= 0);
	EXPECT_TRUE("close-on-exec", (fcntl(m2, F_GETFD) & FD_CLOEXEC) != 0);
	mq_close(m2);
	mq_close(m);
	EXPECT_OK("unlinked", mq_unlink("/abi_mq"));
}

static void transfer(void)
{
	section("send and receive");
	struct mq_attr a = {.mq_maxmsg = 4, .mq_msgsize = 16};
	mqd_t q = mq_open("/abi_mq", O_CREAT | O_EXCL | O_RDWR, 0600, &a);
	SETUP(q);
	char buf[64];
	unsigned prio = 99;
	EXPECT_OK("send 1 at 1", mq_send(q, "one", 3, 1));
	EXPECT_OK("send 2 at 5", mq_send(q, "two", 3, 5));
	EXPECT_OK("send 3 at 1", mq_send(q, "three", 5, 1));
	EXPECT_OK("send 4 at 0", mq_send(q, "four", 4, 0));
	EXPECT_EQ("curmsgs", curmsgs(q), 4);
	EXPECT_EQ("first is the highest", mq_receive(q, buf, sizeof buf, &prio), 3);
	EXPECT_TRUE("  two at 5", memcmp(buf, "two", 3) == 0 && prio == 5);
	EXPECT_EQ("then the older of 1", mq_receive(q, buf, sizeof buf, &prio), 3);
	EXPECT_TRUE("  one at 1", memcmp(buf, "one", 3) == 0 && prio == 1);
	EXPECT_EQ("then the newer of 1", mq_receive(q, buf, sizeof buf, &prio), 5);
	EXPECT_TRUE("  three at 1", memcmp(buf, "three", 5) == 0 && prio == 1);
	EXPECT_EQ("last", mq_receive(q, buf, sizeof buf, NULL), 4);
	EXPECT_OK("empty message", mq_send(q, "", 0, 0));
	EXPECT_EQ("empty received", mq_receive(q, buf, sizeof buf, NULL), 0);

	EXPECT_ERR("message too long", mq_send(q, buf, 17, 0), EMSGSIZE);
	EXPECT_ERR("huge length", k_call(SYS_mq_timedsend, q, (long)buf, 1L << 40, 0, 0), EMSGSIZE);
	EXPECT_ERR("buffer too short", mq_receive(q, buf, 15, NULL), EMSGSIZE);
	EXPECT_ERR("priority MQ_PRIO_MAX", mq_send(q, buf, 1, 32768), EINVAL);
	EXPECT_ERR("bad descriptor", mq_send(-1, buf, 1, 0), EBADF);
	EXPECT_ERR("closed descriptor", mq_send(1000, buf, 1, 0), EBADF);
	int p[2];
	SETUP(pipe(p));
	EXPECT_ERR("a pipe", mq_send(p[1], buf, 1, 0), EBADF);
	EXPECT_ERR("receive from a pipe", mq_receive(p[0], buf, sizeof buf, NULL), EBADF);
	EXPECT_ERR("getattr of a pipe", mq_getattr(p[0], &a), EBADF);
	close(p[0]);
	close(p[1]);
	mqd_t ro = mq_open("/abi_mq", O_RDONLY), wo = mq_open("/abi_mq", O_WRONLY);
	EXPECT_ERR("send on O_RDONLY", mq_send(ro, buf, 1, 0), EBADF);
	EXPECT_ERR("receive on O_WRONLY", mq_receive(wo, buf, sizeof buf, NULL), EBADF);
	EXPECT_ERR("send from a bad buffer", mq_send(q, BAD_PTR, 4, 0), EFAULT);
	EXPECT_EQ("nothing queued by it", curmsgs(q), 0);
	EXPECT_OK("send for a bad buffer", mq_send(wo, "lost", 4, 0));
	EXPECT_ERR("receive into a bad buffer", mq_receive(ro, BAD_PTR, 64, NULL), EFAULT);
	EXPECT_EQ("the message is lost", curmsgs(q), 0);
	EXPECT_OK("send for a bad priority pointer", mq_send(wo, "x", 1, 0));
	EXPECT_ERR("bad priority pointer", mq_receive(ro, buf, 64, BAD_PTR), EFAULT);
	EXPECT_EQ("that one is lost too", curmsgs(q), 0);

	struct timespec t = in_ms(0);
	t.tv_nsec = 1000000000;
	EXPECT_ERR("tv_nsec 1e9", mq_timedreceive(q, buf, sizeof buf, NULL, &t), EINVAL);
	t.tv_nsec = 0, t.tv_sec = -1;
	EXPECT_ERR("tv_sec -1", mq_timedreceive(q, buf, sizeof buf, NULL, &t), EINVAL);
	EXPECT_ERR("bad timeout pointer", k_call(SYS_mq_timedreceive, q, (long)buf, 64, 0, 8), EFAULT);
	t = in_ms(-1000);
	EXPECT_ERR("past deadline, empty", mq_timedreceive(q, buf, sizeof buf, NULL, &t), ETIMEDOUT);
	t = in_ms(100);
	EXPECT_ERR("deadline in 100 ms, empty", mq_timedreceive(q, buf, sizeof buf, NULL, &t), ETIMEDOUT);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	EXPECT_TRUE("  not before it", now.tv_sec > t.tv_sec || (now.tv_sec == t.tv_sec && now.tv_nsec >= t.tv_nsec));
	for (int i = 0; i < 4; i++)
		mq_send(q, "f", 1, 0);
	t = in_ms(-1000);
	EXPECT_ERR("past deadline, full", mq_timedsend(q, "f", 1, 0, &t), ETIMEDOUT);
	EXPECT_EQ("past deadline, a message there", mq_timedreceive(q, buf, sizeof buf, NULL, &t), 1);

	struct mq_attr na = {.mq_flags = O_NONBLOCK}, old;
	EXPECT_OK("setattr O_NONBLOCK", mq_setattr(q, &na, &old));
	EXPECT_EQ("  old flags", old.mq_flags, 0);
	EXPECT_EQ("  curmsgs", old.mq_curmsgs, 3);
	EXPECT_OK("send to fill", mq_send(q, "f", 1, 0));
	EXPECT_ERR("full, O_NONBLOCK", mq_send(q, "f", 1, 0), EAGAIN);
	EXPECT_EQ("F_GETFL sees O_NONBLOCK", fcntl(q, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	na.mq_flags = O_NONBLOCK | O_APPEND;
	EXPECT_ERR("setattr other flags", mq_setattr(q, &na, NULL), EINVAL);
	EXPECT_ERR("setattr bad pointer", k_call(SYS_mq_getsetattr, q, 8, 0, 0, 0), EFAULT);
	for (int i = 0; i < 4; i++)
		mq_receive(q, buf, sizeof buf, NULL);
	EXPECT_ERR("empty, O_NONBLOCK", mq_receive(q, buf, sizeof buf, NULL), EAGAIN);
	EXPECT_OK("getattr", mq_getattr(q, &old));
	EXPECT_EQ("  flags", old.mq_flags, O_NONBLOCK);
	mq_close(ro);
	mq_close(wo);
	mq_close(q);
	mq_unlink("/abi_mq");
}

static void on_usr1(int s, siginfo_t *si, void *uc)
{
	(void)s, (void)si, (void)uc;
}

static volatile sig_atomic_t got_sig, got_code, got_value, got_pid_ok;

static void on_note(int s, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = s;
	got_code = si->si_code;
	got_value = si->si_value.sival_int;
	got_pid_ok = si->si_pid == getpid() && si->si_uid == getuid();
}

static void waiting(void)
{
	section("waiting");
	struct mq_attr a = {.mq_maxmsg = 2, .mq_msgsize = 16};
	mqd_t q = mq_open("/abi_mq", O_CREAT | O_EXCL | O_RDWR, 0600, &a);
	SETUP(q);
	char buf[16];
	pid_t c = fork();
	if (c == 0) {
		unsigned prio = 0;
		ssize_t n = mq_receive(q, buf, sizeof buf, &prio);
		_exit(n == 5 && prio == 7 && memcmp(buf, "hello", 5) == 0 ? 0 : 1);
	}
	usleep(100000);
	EXPECT_OK("send to a waiting receiver", mq_send(q, "hello", 5, 7));
	EXPECT_STATUS("  the child got it", wait_status(c), "exited 0");

	c = fork();
	if (c == 0) {
		mq_send(q, "a", 1, 0);
		mq_send(q, "b", 1, 0);
		_exit(mq_send(q, "c", 1, 0) == 0 ? 0 : 1);
	}
	usleep(100000);
	EXPECT_EQ("forked sender filled it", curmsgs(q), 2);
	EXPECT_EQ("receive makes room", mq_receive(q, buf, sizeof buf, NULL), 1);
	EXPECT_STATUS("  the waiting sender went on", wait_status(c), "exited 0");
	while (curmsgs(q) > 0)
		mq_receive(q, buf, sizeof buf, NULL);

	struct sigaction sa = {.sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO};
	sigaction(SIGUSR1, &sa, NULL);
	pid_t me = getpid();
	c = fork();
	if (c == 0) {
		usleep(100000);
		kill(me, SIGUSR1);
		_exit(0);
	}
	EXPECT_ERR("a signal ends a waiting receive", mq_receive(q, buf, sizeof buf, NULL), EINTR);
	wait_status(c);

	c = fork();
	if (c == 0) {
		mq_receive(q, buf, sizeof buf, NULL);
		_exit(3);
	}
	usleep(100000);
	kill(c, SIGKILL);
	EXPECT_STATUS("receiver killed while waiting", wait_status(c), "killed by SIGKILL");
	EXPECT_OK("send after it", mq_send(q, "kept", 4, 0));
	EXPECT_EQ("  the message stays", curmsgs(q), 1);
	mq_receive(q, buf, sizeof buf, NULL);

	section("poll");
	struct pollfd pf = {.fd = q, .events = POLLIN | POLLOUT};
	EXPECT_EQ("empty", poll(&pf, 1, 0) == 1 ? pf.revents : -1, POLLOUT);
	mq_send(q, "x", 1, 0);
	EXPECT_EQ("one message", poll(&pf, 1, 0) == 1 ? pf.revents : -1, POLLIN | POLLOUT);
	mq_send(q, "x", 1, 0);
	EXPECT_EQ("full", poll(&pf, 1, 0) == 1 ? pf.revents : -1, POLLIN);
	mq_receive(q, buf, sizeof buf, NULL);
	mq_receive(q, buf, sizeof buf, NULL);
	c = fork();
	if (c == 0) {
		usleep(100000);
		_exit(mq_send(q, "y", 1, 0) == 0 ? 0 : 1);
	}
	pf.events = POLLIN;
	EXPECT_EQ("poll waits for another process's send", poll(&pf, 1, 5000), 1);
	EXPECT_EQ("  readable", pf.revents, POLLIN);
	wait_status(c);
	mq_receive(q, buf, sizeof buf, NULL);

	section("notify");
	struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2};
	ev.sigev_value.sival_int = 42;
	sa.sa_sigaction = on_note;
	sigaction(SIGUSR2, &sa, NULL);
	EXPECT_OK("register", mq_notify(q, &ev));
	EXPECT_ERR("register again", mq_notify(q, &ev), EBUSY);
	c = fork();
	if (c == 0)
		_exit(mq_notify(q, &ev) == -1 && errno == EBUSY ? 0 : 1);
	EXPECT_STATUS("another process: EBUSY", wait_status(c), "exited 0");
	c = fork();
	if (c == 0)
		_exit(mq_notify(q, NULL) == 0 ? 0 : 1);
	EXPECT_STATUS("another process's NULL is no error", wait_status(c), "exited 0");
	EXPECT_OK("send to the empty queue", mq_send(q, "n", 1, 0));
	EXPECT_EQ("  signal", got_sig, SIGUSR2);
	EXPECT_EQ("  si_code SI_MESGQ", got_code, SI_MESGQ);
	EXPECT_EQ("  si_value", got_value, 42);
	EXPECT_TRUE("  si_pid and si_uid the sender's", got_pid_ok);
	got_sig = 0;
	EXPECT_OK("a second message", mq_send(q, "n", 1, 0));
	EXPECT_EQ("  no signal (fired once, queue not empty)", got_sig, 0);
	EXPECT_OK("register after it fired", mq_notify(q, &ev));
	EXPECT_OK("remove with NULL", mq_notify(q, NULL));
	EXPECT_OK("register again", mq_notify(q, &ev));
	close(dup(q));
	EXPECT_OK("closing a descriptor of it removed it", mq_notify(q, &ev));
	mq_receive(q, buf, sizeof buf, NULL);
	mq_receive(q, buf, sizeof buf, NULL);
	c = fork();
	if (c == 0) {
		ssize_t n = mq_receive(q, buf, sizeof buf, NULL);
		_exit(n == 1 ? 0 : 1);
	}
	usleep(100000);
	got_sig = 0;
	EXPECT_OK("send to a waiting receiver", mq_send(q, "w", 1, 0));
	EXPECT_STATUS("  it got the message", wait_status(c), "exited 0");
	EXPECT_EQ("  and no signal", got_sig, 0);
	EXPECT_ERR("  the registration stays", mq_notify(q, &ev), EBUSY);
	mq_notify(q, NULL);
	ev.sigev_notify = SIGEV_NONE;
	EXPECT_OK("SIGEV_NONE", mq_notify(q, &ev));
	EXPECT_OK("  send", mq_send(q, "n", 1, 0));
	EXPECT_EQ("  no signal", got_sig, 0);
	EXPECT_OK("  registration gone", mq_notify(q, &ev));
	mq_notify(q, NULL);
	mq_receive(q, buf, sizeof buf, NULL);
	ev.sigev_notify = 99;
	EXPECT_ERR("bad sigev_notify", mq_notify(q, &ev), EINVAL);
	ev.sigev_notify = SIGEV_SIGNAL, ev.sigev_signo = 65;
	EXPECT_ERR("signal 65", mq_notify(q, &ev), EINVAL);
	ev.sigev_signo = SIGUSR2;
	EXPECT_ERR("bad sigevent pointer", k_call(SYS_mq_notify, q, 8, 0, 0, 0), EFAULT);
	EXPECT_ERR("bad descriptor", mq_notify(-1, &ev), EBADF);
	EXPECT_ERR("bad sigev_notify before bad descriptor", k_call(SYS_mq_notify, -1, (long)&(struct sigevent){.sigev_notify = 99}, 0, 0, 0), EINVAL);
	mq_close(q);
	mq_unlink("/abi_mq");
}

static void lifetime(void)
{
	section("lifetime and limits");
	mqd_t q = mq_open("/abi_mq", O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	SETUP(q);
	mq_send(q, "kept", 4, 3);
	EXPECT_OK("unlink while open", mq_unlink("/abi_mq"));
	EXPECT_ERR("  the name is gone", mq_open("/abi_mq", O_RDWR), ENOENT);
	char buf[8192];
	unsigned prio;
	EXPECT_EQ("  the queue is not", mq_receive(q, buf, sizeof buf, &prio), 4);
	mqd_t n = mq_open("/abi_mq", O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	EXPECT_TRUE("  a new one by that name", n >= 0);
	EXPECT_EQ("  it is empty", curmsgs(n), 0);
	mq_close(q);
	mq_close(n);
	mq_unlink("/abi_mq");

	/* A queue costs maxmsg * msgsize and Linux's bookkeeping: the
	 * default one 82,880 bytes, nine of them in 819,200. */
	mqd_t many[16];
	int made = 0;
	char name[32];
	for (; made < 16; made++) {
		snprintf(name, sizeof name, "/abi_mq_%d", made);
		many[made] = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
		if (many[made] < 0)
			break;
	}
	EXPECT_EQ("queues under RLIMIT_MSGQUEUE", made, 9);
	EXPECT_STR("  then", errname(errno), "EMFILE");
	for (int i = 0; i < made; i++) {
		snprintf(name, sizeof name, "/abi_mq_%d", i);
		mq_close(many[i]);
		mq_unlink(name);
	}
	q = mq_open("/abi_mq", O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	EXPECT_TRUE("the charge came back", q >= 0);

	/* A flood for a queue nobody reads: full at maxmsg, then EAGAIN. */
	mqd_t f = mq_open("/abi_mq", O_WRONLY | O_NONBLOCK);
	int sent = 0;
	memset(buf, 'z', sizeof buf);
	while (sent < 100000 && mq_send(f, buf, 8192, 0) == 0)
		sent++;
	EXPECT_EQ("flood stops at maxmsg", sent, 10);
	EXPECT_STR("  with", errname(errno), "EAGAIN");
	mq_close(f);
	mq_close(q);
	EXPECT_OK("unlinked full", mq_unlink("/abi_mq"));

	char text[64];
	read_text("/proc/sys/fs/mqueue/msg_max", text, sizeof text);
	EXPECT_STR("msg_max", text, "10\n");
	read_text("/proc/sys/fs/mqueue/msgsize_max", text, sizeof text);
	EXPECT_STR("msgsize_max", text, "8192\n");
	read_text("/proc/sys/fs/mqueue/queues_max", text, sizeof text);
	EXPECT_STR("queues_max", text, "256\n");
	int fd = open("/proc/sys/fs/mqueue/msg_max", O_WRONLY);
	EXPECT_ERR("msg_max 0", write(fd, "0\n", 2), EINVAL);
	EXPECT_EQ("msg_max 20", write(fd, "20\n", 3), 3);
	close(fd);
	read_text("/proc/sys/fs/mqueue/msg_max", text, sizeof text);
	EXPECT_STR("  read back", text, "20\n");
	fd = open("/proc/sys/fs/mqueue/msg_max", O_WRONLY);
	write(fd, "10\n", 3);
	close(fd);

	/* Another user: the settings bind it, the mode keeps it out. */
	q = mq_open("/abi_mq", O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	pid_t c = fork();
	if (c == 0) {
		struct passwd *pw = getpwnam("nobody");
		if (setuid(pw ? pw->pw_uid : 65534) != 0)
			_exit(9);
		int bad = 0;
		if (!(mq_open("/abi_mq", O_RDONLY) == -1 && errno == EACCES))
			bad |= 1;
		if (!(mq_unlink("/abi_mq") == -1 && errno == EACCES))
			bad |= 2;
		struct mq_attr a = {.mq_maxmsg = 11, .mq_msgsize = 8};
		if (!(mq_open("/abi_mq_u", O_CREAT | O_RDWR, 0600, &a) == -1 && errno == EINVAL))
			bad |= 4;
		_exit(bad);
	}
	EXPECT_STATUS("another user: EACCES, EACCES, EINVAL", wait_status(c), "exited 0");
	fd = open("/proc/sys/fs/mqueue/queues_max", O_WRONLY);
	write(fd, "1\n", 2);
	close(fd);
	c = fork();
	if (c == 0) {
		if (setuid(65534) != 0)
			_exit(9);
		_exit(mq_open("/abi_mq_u", O_CREAT | O_RDWR, 0600, NULL) == -1 && errno == ENOSPC ? 0 : 1);
	}
	EXPECT_STATUS("queues_max 1: ENOSPC for another user", wait_status(c), "exited 0");
	mqd_t r = mq_open("/abi_mq_r", O_CREAT | O_RDWR, 0600, NULL);
	EXPECT_TRUE("  not for root", r >= 0);
	mq_close(r);
	mq_unlink("/abi_mq_r");
	fd = open("/proc/sys/fs/mqueue/queues_max", O_WRONLY);
	write(fd, "256\n", 4);
	close(fd);
	mq_close(q);
	mq_unlink("/abi_mq");
}

int main(void)
{
	abi_init();
	umask(022);
	names();
	transfer();
	waiting();
	lifetime();
	return abi_done();
}
