/*
 * File locks that wait: F_SETLKW, F_OFD_SETLKW and flock without LOCK_NB
 * block while another owner's lock is in the way and go on when it goes
 * (unlock, close, the holder's end or its SIGKILL); a signal interrupts the
 * wait (EINTR, or the wait goes on with SA_RESTART); record locks find
 * deadlocks between processes (EDEADLK); an open file description's locks
 * (F_OFD_*) belong to it, not to its process; flock converts a lock by
 * giving the old one up first. Hostile: a waiter killed
 * while it waits leaves nothing behind, bad requests get Linux's errors.
 */
#include "abi.h"
#include <sys/file.h>
#include <sys/time.h>

#ifndef F_OFD_GETLK
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38
#endif

static const char *path = "lockfile";

static int lk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock f = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
	return fcntl(fd, cmd, &f);
}

/* The type of the lock F_GETLK (or F_OFD_GETLK: `cmd`) of `fd` finds in the
 * way over [start, start+len), and its l_pid through *pid. */
static int getlk(int fd, int cmd, short type, off_t start, off_t len, int *pid)
{
	struct flock f = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
	if (fcntl(fd, cmd, &f) == -1)
		return -1;
	if (pid)
		*pid = f.l_pid;
	return f.l_type;
}

static int open_rw(void)
{
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd == -1) {
		say("SETUP FAILED open: %s", errname(errno));
		exit(2);
	}
	return fd;
}

/* Whether a byte came on `fd` within `ms` milliseconds. */
static int came(int fd, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		char c;
		int fl = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		ssize_t n = read(fd, &c, 1);
		fcntl(fd, F_SETFL, fl);
		if (n == 1)
			return c;
		usleep(10000);
	}
	return 0;
}

/*
 * A child that opens the file and takes a lock with `cmd` (or flock with
 * `op` when cmd is 0), telling the parent on `tell` 'b' before and 'g'
 * after (or 'e' and the errno's value on failure); then it waits to be
 * told to end on `hold`.
 */
static pid_t waiter(int cmd, short type, int op, int tell[2], int hold[2])
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	/* The parent's descriptors go: a description shared with it would
	 * keep its locks past the parent's close. */
	for (int i = 3; i < 64; i++)
		if (i != tell[1] && (!hold || i != hold[0]))
			close(i);
	int fd = open_rw();
	char c = 'b';
	write(tell[1], &c, 1);
	int r = cmd ? lk(fd, cmd, type, 0, 10) : flock(fd, op);
	c = r == 0 ? 'g' : 'e';
	write(tell[1], &c, 1);
	if (r != 0) {
		c = (char)errno;
		write(tell[1], &c, 1);
	}
	if (hold)
		read(hold[0], &c, 1);
	_exit(0);
}

static void pipes(int tell[2], int hold[2])
{
	SETUP(pipe(tell));
	if (hold)
		SETUP(pipe(hold));
}

static void end_waiter(pid_t pid, int tell[2], int hold[2])
{
	if (hold) {
		write(hold[1], "x", 1);
		close(hold[0]);
		close(hold[1]);
	}
	wait_status(pid);
	close(tell[0]);
	close(tell[1]);
}

/* A waiter blocks while `fd`'s lock is in the way and goes on once
 * `release` ran. */
static void waits_then(const char *name, int cmd, int op, void (*release)(void *), void *arg)
{
	int tell[2], hold[2];
	char n[96];
	pipes(tell, hold);
	pid_t pid = waiter(cmd, F_WRLCK, op, tell, hold);
	snprintf(n, sizeof n, "%s: the waiter starts", name);
	EXPECT_EQ(n, came(tell[0], 2000), 'b');
	snprintf(n, sizeof n, "%s: it waits while the lock is held", name);
	EXPECT_EQ(n, came(tell[0], 300), 0);
	release(arg);
	snprintf(n, sizeof n, "%s: it gets the lock once it goes", name);
	EXPECT_EQ(n, came(tell[0], 5000), 'g');
	end_waiter(pid, tell, hold);
}

static void unlock_fd(void *arg)
{
	lk(*(int *)arg, F_SETLK, F_UNLCK, 0, 0);
}

static void close_fd(void *arg)
{
	close(*(int *)arg);
}

static void flock_un(void *arg)
{
	flock(*(int *)arg, LOCK_UN);
}

static void kill_pid(void *arg)
{
	kill(*(pid_t *)arg, SIGKILL);
}

static void ofd_unlock(void *arg)
{
	lk(*(int *)arg, F_OFD_SETLK, F_UNLCK, 0, 0);
}

/* A child that takes a write lock over [0, 10) and holds it until killed;
 * its pid, once it holds it. */
static pid_t holder(void)
{
	int p[2];
	SETUP(pipe(p));
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open_rw();
		lk(fd, F_SETLK, F_WRLCK, 0, 10);
		write(p[1], "h", 1);
		for (;;)
			pause();
	}
	char c;
	read(p[0], &c, 1);
	close(p[0]);
	close(p[1]);
	return pid;
}

static void wakes(void)
{
	section("wakes");
	int fd = open_rw();
	EXPECT_OK("F_SETLK write [0,10)", lk(fd, F_SETLK, F_WRLCK, 0, 10));
	waits_then("F_SETLKW, unlock", F_SETLKW, 0, unlock_fd, &fd);

	EXPECT_OK("F_SETLK again", lk(fd, F_SETLK, F_WRLCK, 0, 10));
	int other = open_rw();
	waits_then("F_SETLKW, close of another descriptor", F_SETLKW, 0, close_fd, &other);

	pid_t h = holder();
	waits_then("F_SETLKW, the holder killed", F_SETLKW, 0, kill_pid, &h);
	wait_status(h);

	EXPECT_OK("flock LOCK_EX", flock(fd, LOCK_EX));
	waits_then("flock LOCK_EX, LOCK_UN", 0, LOCK_EX, flock_un, &fd);
	EXPECT_OK("flock LOCK_SH", flock(fd, LOCK_SH));
	int dup1 = dup(fd);
	close(fd);
	waits_then("flock LOCK_EX, the last descriptor closed", 0, LOCK_EX, close_fd, &dup1);
}

/* flock converts by giving up the old lock first: two holders of a shared
 * lock that both want it exclusive do not wait for each other. */
static void conversion(void)
{
	section("flock conversion");
	int fd = open_rw(), tell[2];
	SETUP(pipe(tell));
	EXPECT_OK("LOCK_SH", flock(fd, LOCK_SH));
	pid_t pid = fork();
	if (pid == 0) {
		int c = open_rw();
		write(tell[1], flock(c, LOCK_SH) == 0 ? "s" : "e", 1);
		write(tell[1], flock(c, LOCK_EX) == 0 ? "g" : "e", 1);
		_exit(0);
	}
	EXPECT_EQ("another description's LOCK_SH", came(tell[0], 2000), 's');
	EXPECT_EQ("its LOCK_EX waits", came(tell[0], 300), 0);
	EXPECT_OK("LOCK_EX|LOCK_NB here: the waiter gave its shared lock up", flock(fd, LOCK_EX | LOCK_NB));
	EXPECT_EQ("the waiter waits on", came(tell[0], 300), 0);
	EXPECT_OK("LOCK_UN", flock(fd, LOCK_UN));
	EXPECT_EQ("the waiter gets it", came(tell[0], 5000), 'g');
	wait_status(pid);
	close(tell[0]);
	close(tell[1]);
	close(fd);
}

static void deadlock(void)
{
	section("deadlock");
	int fd = open_rw();
	EXPECT_OK("parent locks [0,1)", lk(fd, F_SETLK, F_WRLCK, 0, 1));
	int tell[2];
	SETUP(pipe(tell));
	pid_t pid = fork();
	if (pid == 0) {
		int cfd = open_rw();
		lk(cfd, F_SETLK, F_WRLCK, 1, 1);
		write(tell[1], "b", 1);
		int r = lk(cfd, F_SETLKW, F_WRLCK, 0, 1);
		write(tell[1], r == 0 ? "g" : "e", 1);
		_exit(0);
	}
	EXPECT_EQ("the child holds [1,2)", came(tell[0], 2000), 'b');
	EXPECT_EQ("it waits for [0,1)", came(tell[0], 300), 0);
	EXPECT_ERR("F_SETLKW [1,2) closes the cycle", lk(fd, F_SETLKW, F_WRLCK, 1, 1), EDEADLK);
	EXPECT_ERR("F_SETLK [1,2) is just in the way", lk(fd, F_SETLK, F_WRLCK, 1, 1), EAGAIN);
	EXPECT_OK("F_SETLKW [5,6) closes none", lk(fd, F_SETLKW, F_WRLCK, 5, 1));
	EXPECT_OK("unlock [0,1)", lk(fd, F_SETLK, F_UNLCK, 0, 1));
	EXPECT_EQ("the child gets it", came(tell[0], 5000), 'g');
	wait_status(pid);
	close(tell[0]);
	close(tell[1]);
	close(fd);
}

static volatile int alarms;
static void on_alarm(int s)
{
	(void)s;
	alarms++;
}

static void tick(int restart)
{
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = restart ? SA_RESTART : 0};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {.it_value = {.tv_usec = 200000}};
	setitimer(ITIMER_REAL, &it, NULL);
}

/* In a child (the lock held by the parent): the wait `cmd`/`op` ends by
 * SIGALRM without SA_RESTART; with it, it goes on until the parent lets go.
 */
static int intr_child(void *arg)
{
	int op = *(int *)arg;
	int fd = open_rw();
	alarms = 0;
	tick(0);
	int r = op ? flock(fd, op) : lk(fd, F_SETLKW, F_WRLCK, 0, 10);
	int e = errno;
	if (r != -1 || e != EINTR || alarms != 1)
		return 1;
	tick(1);
	/* The parent unlocks after 1.5 s: the wait survives the signal. */
	r = op ? flock(fd, op) : lk(fd, F_SETLKW, F_WRLCK, 0, 10);
	if (r != 0 || alarms != 2)
		return 2;
	return 0;
}

static void interrupts(void)
{
	section("signals");
	int fd = open_rw();
	for (int i = 0; i < 2; i++) {
		int op = i ? LOCK_EX : 0;
		if (op)
			flock(fd, LOCK_EX);
		else
			lk(fd, F_SETLK, F_WRLCK, 0, 10);
		pid_t pid = spawn_fn(intr_child, &op);
		usleep(1500000);
		if (op)
			flock(fd, LOCK_UN);
		else
			lk(fd, F_SETLK, F_UNLCK, 0, 0);
		int st = wait_status(pid);
		EXPECT_STATUS(op ? "flock: EINTR, then SA_RESTART waits on" : "F_SETLKW: EINTR, then SA_RESTART waits on",
			      st, "exited 0");
	}
	close(fd);
}

static void ofd(void)
{
	section("open file description locks");
	int a = open_rw(), b = open_rw(), pid = 0;
	EXPECT_OK("F_OFD_SETLK write on a", lk(a, F_OFD_SETLK, F_WRLCK, 0, 10));
	EXPECT_OK("again on a (its own)", lk(a, F_OFD_SETLK, F_WRLCK, 0, 10));
	EXPECT_ERR("F_OFD_SETLK on b, same process", lk(b, F_OFD_SETLK, F_RDLCK, 5, 1), EAGAIN);
	EXPECT_ERR("the process's F_SETLK", lk(b, F_SETLK, F_RDLCK, 5, 1), EAGAIN);
	EXPECT_EQ("F_OFD_GETLK on b: type", getlk(b, F_OFD_GETLK, F_RDLCK, 0, 0, &pid), F_WRLCK);
	EXPECT_EQ("F_OFD_GETLK on b: l_pid", pid, -1);
	EXPECT_EQ("F_GETLK: type", getlk(b, F_GETLK, F_RDLCK, 0, 0, &pid), F_WRLCK);
	EXPECT_EQ("F_GETLK: l_pid", pid, -1);
	EXPECT_EQ("F_OFD_GETLK on a: its own", getlk(a, F_OFD_GETLK, F_WRLCK, 0, 0, NULL), F_UNLCK);
	EXPECT_OK("F_OFD_SETLK on b past it", lk(b, F_OFD_SETLK, F_WRLCK, 10, 5));
	struct flock f = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_pid = 1};
	EXPECT_ERR("F_OFD_SETLK l_pid 1", fcntl(b, F_OFD_SETLK, &f), EINVAL);
	EXPECT_ERR("F_OFD_GETLK l_pid 1", fcntl(b, F_OFD_GETLK, &f), EINVAL);
	EXPECT_ERR("F_OFD_SETLKW l_pid 1", fcntl(b, F_OFD_SETLKW, &f), EINVAL);
	EXPECT_ERR("F_OFD_SETLKW bad pointer", fcntl(b, F_OFD_SETLKW, BAD_PTR), EFAULT);
	f.l_pid = 0;
	f.l_whence = 7;
	EXPECT_ERR("F_OFD_SETLKW bad whence", fcntl(b, F_OFD_SETLKW, &f), EINVAL);
	EXPECT_ERR("F_OFD_SETLKW on a bad descriptor", lk(999, F_OFD_SETLKW, F_WRLCK, 0, 1), EBADF);
	int ro = open(path, O_RDONLY);
	EXPECT_ERR("F_OFD_SETLKW write on a read-only one", lk(ro, F_OFD_SETLKW, F_WRLCK, 0, 1), EBADF);
	close(ro);

	int d = dup(a);
	close(d);
	EXPECT_ERR("a duplicate's close keeps it", lk(b, F_OFD_SETLK, F_RDLCK, 5, 1), EAGAIN);
	int st = fork();
	if (st == 0)
		_exit(lk(a, F_OFD_SETLK, F_WRLCK, 0, 10) == 0 ? 0 : 1);
	EXPECT_STATUS("a fork's child shares the description's lock", wait_status(st), "exited 0");
	EXPECT_ERR("its end keeps it", lk(b, F_OFD_SETLK, F_RDLCK, 5, 1), EAGAIN);
	waits_then("F_OFD_SETLKW, F_OFD_SETLK unlock", F_OFD_SETLKW, 0, ofd_unlock, &a);
	EXPECT_OK("F_OFD_SETLK write on a again", lk(a, F_OFD_SETLK, F_WRLCK, 0, 10));
	waits_then("F_OFD_SETLKW, the last close", F_OFD_SETLKW, 0, close_fd, &a);
	close(b);
}

static void hostile(void)
{
	section("hostile");
	int fd = open_rw();
	lk(fd, F_SETLK, F_WRLCK, 0, 10);
	int tell[2];
	SETUP(pipe(tell));
	pid_t pid = waiter(F_SETLKW, F_WRLCK, 0, tell, NULL);
	EXPECT_EQ("a waiter starts", came(tell[0], 2000), 'b');
	EXPECT_EQ("and waits", came(tell[0], 300), 0);
	kill(pid, SIGKILL);
	EXPECT_STATUS("killed while it waits", wait_status(pid), "killed by SIGKILL");
	lk(fd, F_SETLK, F_UNLCK, 0, 0);
	usleep(100000);
	int st = fork();
	if (st == 0) {
		int cfd = open_rw();
		_exit(lk(cfd, F_SETLK, F_WRLCK, 0, 10) == 0 ? 0 : 1);
	}
	EXPECT_STATUS("its request vanished: the lock is free", wait_status(st), "exited 0");
	EXPECT_ERR("flock bad operation", flock(fd, LOCK_EX | LOCK_SH), EINVAL);
	EXPECT_ERR("F_SETLKW bad pointer", fcntl(fd, F_SETLKW, BAD_PTR), EFAULT);
	EXPECT_ERR("F_SETLKW bad type", lk(fd, F_SETLKW, 9, 0, 1), EINVAL);
	EXPECT_ERR("F_SETLKW before the start", lk(fd, F_SETLKW, F_WRLCK, -5, 1), EINVAL);
	close(tell[0]);
	close(tell[1]);
	close(fd);
}

int main(void)
{
	abi_init();
	unlink(path);
	wakes();
	conversion();
	deadlock();
	interrupts();
	ofd();
	hostile();
	unlink(path);
	return abi_done();
}
