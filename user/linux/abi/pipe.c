/*
 * Pipes under hostile use: bad pointers (EFAULT, nothing lost), the wrong
 * end, a writer killed in the middle of a write, pipes whose holders all
 * die, readiness of a pipe another process fills (poll, epoll), the open
 * file description's O_NONBLOCK shared across fork and dup, a number
 * replaced by dup2, readv and writev, an interrupted read (EINTR, or
 * restarted under SA_RESTART), EPIPE, what fstat and /proc say.
 */
#include "abi.h"
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>

/* A child that writes `c` into `fd` after `ms` milliseconds. */
static pid_t write_later(int fd, char c, int ms)
{
	pid_t pid = fork();
	if (pid == 0) {
		usleep(ms * 1000);
		_exit(write(fd, &c, 1) == 1 ? 0 : 1);
	}
	return pid;
}

int main(void)
{
	abi_init();
	int p[2], q[2], st, n = 0;
	static char buf[65536];

	section("bad pointers lose nothing");
	SETUP(pipe(p));
	EXPECT_ERR("write from a bad pointer", write(p[1], BAD_PTR, 10), EFAULT);
	EXPECT_OK("FIONREAD", ioctl(p[0], FIONREAD, &n));
	EXPECT_EQ("nothing went in", n, 0);
	EXPECT_ERR("write from a kernel address", write(p[1], (void *)0xffffffff80000000UL, 1), EFAULT);
	EXPECT_EQ("a write of 5", write(p[1], "hello", 5), 5);
	EXPECT_ERR("read into a bad pointer", read(p[0], BAD_PTR, 5), EFAULT);
	EXPECT_ERR("read into a kernel address", read(p[0], (void *)0xffffffff80000000UL, 5), EFAULT);
	EXPECT_EQ("the bytes are still there", read(p[0], buf, 5), 5);
	EXPECT_TRUE("the same bytes", memcmp(buf, "hello", 5) == 0);
	EXPECT_ERR("readv with a bad vector", readv(p[0], BAD_PTR, 1), EFAULT);
	EXPECT_ERR("writev with a bad vector", writev(p[1], BAD_PTR, 1), EFAULT);
	EXPECT_ERR("read of the write end", read(p[1], buf, 1), EBADF);
	EXPECT_ERR("write to the read end", write(p[0], "x", 1), EBADF);
	close(p[0]);
	close(p[1]);

	section("a writer killed in the middle of a write");
	SETUP(pipe(p));
	pid_t w = fork();
	if (w == 0) {
		static char big[256 * 1024];
		close(p[0]);
		memset(big, 'k', sizeof big);
		write(p[1], big, sizeof big);
		_exit(0);
	}
	close(p[1]);
	for (int i = 0; i < 2000 && n < 65536; i++) {
		usleep(1000);
		ioctl(p[0], FIONREAD, &n);
	}
	EXPECT_EQ("the pipe filled, the writer waits", n, 65536);
	kill(w, SIGKILL);
	waitpid(w, &st, 0);
	EXPECT_STATUS("the writer", st, "killed by SIGKILL");
	long total = 0;
	ssize_t r;
	while ((r = read(p[0], buf, sizeof buf)) > 0)
		total += r;
	EXPECT_EQ("what it wrote is read", total, 65536);
	EXPECT_EQ("then end of file", r, 0);
	close(p[0]);

	section("pipes whose holders all die");
	for (int i = 0; i < 40; i++) {
		SETUP(pipe(p));
		pid_t c = fork();
		if (c == 0)
			_exit(write(p[1], "x", 1) == 1 ? 0 : 1);
		if (i % 2)
			close(p[0]);
		close(p[1]);
		waitpid(c, &st, 0);
		if (!(i % 2))
			close(p[0]);
	}
	SETUP(pipe(p));
	EXPECT_EQ("then a pipe takes the lowest numbers again", p[0], 3);
	close(p[0]);
	close(p[1]);

	section("readiness of a pipe another process fills");
	SETUP(pipe(p));
	pid_t c = write_later(p[1], 'r', 20);
	struct pollfd pf = { p[0], POLLIN, 0 };
	EXPECT_EQ("poll waits for the child's byte", poll(&pf, 1, 5000), 1);
	EXPECT_EQ("POLLIN", pf.revents, POLLIN);
	waitpid(c, &st, 0);
	EXPECT_EQ("read it", read(p[0], buf, 1), 1);
	close(p[1]);
	pf.revents = 0;
	EXPECT_EQ("no writer left: ready at once", poll(&pf, 1, 0), 1);
	EXPECT_EQ("POLLHUP", pf.revents, POLLHUP);
	close(p[0]);
	SETUP(pipe(p));
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 7 }, got;
	EXPECT_OK("epoll_ctl ADD", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	c = write_later(p[1], 'e', 20);
	EXPECT_EQ("epoll_wait waits for the child's byte", epoll_wait(ep, &got, 1, 5000), 1);
	EXPECT_EQ("its data", got.data.u32, 7);
	waitpid(c, &st, 0);
	pf.fd = p[1];
	pf.events = POLLOUT;
	EXPECT_EQ("the write end: room", poll(&pf, 1, 0), 1);
	close(p[0]);
	pf.revents = 0;
	poll(&pf, 1, 0);
	EXPECT_EQ("no reader left: POLLERR", pf.revents & (POLLERR | POLLOUT), POLLERR | POLLOUT);
	close(p[1]);
	int sp[2];
	SETUP(pipe(sp));
	char byte = 'x';
	struct iovec one = { &byte, 1 };
	EXPECT_ERR("pwritev2 at an offset to the read end (no offsets before no writing)",
		   syscall(SYS_pwritev2, sp[0], &one, 1, 0, 0, 0), ESPIPE);
	EXPECT_ERR("preadv2 at an offset", syscall(SYS_preadv2, sp[0], &one, 1, 0, 0, 0), ESPIPE);
	EXPECT_ERR("pwrite to the write end", pwrite(sp[1], "x", 1, 0), ESPIPE);
	close(sp[0]);
	close(sp[1]);
	int opath = open(".", O_PATH);
	EXPECT_ERR("epoll_ctl of an O_PATH descriptor", epoll_ctl(ep, EPOLL_CTL_ADD, opath, &ev), EBADF);
	int reg = open("epoll-file", O_RDWR | O_CREAT, 0600);
	EXPECT_ERR("epoll_ctl of a regular file", epoll_ctl(ep, EPOLL_CTL_ADD, reg, &ev), EPERM);
	close(reg);
	unlink("epoll-file");
	int zero = open("/dev/zero", O_RDONLY);
	EXPECT_ERR("epoll_ctl of /dev/zero", epoll_ctl(ep, EPOLL_CTL_ADD, zero, &ev), EPERM);
	close(zero);
	int null = open("/dev/null", O_RDONLY);
	EXPECT_ERR("epoll_ctl of /dev/null", epoll_ctl(ep, EPOLL_CTL_ADD, null, &ev), EPERM);
	close(null);
	close(opath);
	close(ep);

	section("O_NONBLOCK belongs to the open file description");
	SETUP(pipe(p));
	c = fork();
	if (c == 0)
		_exit(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0 ? 0 : 1);
	waitpid(c, &st, 0);
	EXPECT_TRUE("the parent sees the child's F_SETFL", fcntl(p[0], F_GETFL) & O_NONBLOCK);
	EXPECT_ERR("so its read does not wait", read(p[0], buf, 1), EAGAIN);
	int d = dup(p[0]);
	EXPECT_OK("F_SETFL through a dup", fcntl(d, F_SETFL, 0));
	EXPECT_TRUE("the original sees it", !(fcntl(p[0], F_GETFL) & O_NONBLOCK));
	close(d);
	SETUP(pipe(q));
	EXPECT_EQ("dup2 over the only write end", dup2(q[0], p[1]), p[1]);
	EXPECT_EQ("the pipe is at its end", read(p[0], buf, 1), 0);
	EXPECT_EQ("the number leads to the other pipe now", write(q[1], "z", 1), 1);
	EXPECT_EQ("read through it", read(p[1], buf, 1), 1);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);

	section("readv and writev");
	SETUP(pipe(p));
	struct iovec iv[3] = { { "ab", 2 }, { "", 0 }, { "cde", 3 } };
	EXPECT_EQ("writev", writev(p[1], iv, 3), 5);
	char x1[2], x2[10];
	struct iovec ov[2] = { { x1, 2 }, { x2, 10 } };
	EXPECT_EQ("readv takes what is there", readv(p[0], ov, 2), 5);
	EXPECT_TRUE("in order", memcmp(x1, "ab", 2) == 0 && memcmp(x2, "cde", 3) == 0);
	EXPECT_ERR("readv of 1025 pieces", readv(p[0], ov, 1025), EINVAL);
	EXPECT_ERR("pread", pread(p[0], buf, 1, 0), ESPIPE);
	EXPECT_ERR("lseek", lseek(p[0], 0, SEEK_SET), ESPIPE);

	section("an interrupted read");
	abi_alarm_in(20, 0);
	EXPECT_ERR("without SA_RESTART", read(p[0], buf, 1), EINTR);
	abi_alarms = 0;
	c = write_later(p[1], 's', 100);
	abi_alarm_in(20, 1);
	EXPECT_EQ("with SA_RESTART: restarted until the byte came", read(p[0], buf, 1), 1);
	EXPECT_TRUE("the handler ran", abi_alarms == 1);
	waitpid(c, &st, 0);

	section("no reader left");
	signal(SIGPIPE, SIG_IGN);
	close(p[0]);
	EXPECT_ERR("write", write(p[1], "x", 1), EPIPE);
	EXPECT_ERR("writev", writev(p[1], iv, 3), EPIPE);
	EXPECT_EQ("a write of nothing", write(p[1], "", 0), 0);
	close(p[1]);
	signal(SIGPIPE, SIG_DFL);

	section("what it is");
	SETUP(pipe(p));
	struct stat s;
	EXPECT_OK("fstat", fstat(p[0], &s));
	EXPECT_TRUE("a FIFO", S_ISFIFO(s.st_mode));
	struct stat s2;
	fstat(p[1], &s2);
	EXPECT_TRUE("both ends: the same inode", s.st_ino == s2.st_ino);
	char path[64], link[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
	ssize_t ln = readlink(path, link, sizeof link - 1);
	link[ln > 0 ? ln : 0] = 0;
	EXPECT_TRUE("/proc/self/fd names it pipe:[...]", strncmp(link, "pipe:[", 6) == 0);
	EXPECT_EQ("F_GETFL of the write end", fcntl(p[1], F_GETFL), O_WRONLY);
	close(p[0]);
	close(p[1]);
	return abi_done();
}
