/*
 * splice, tee, vmsplice, copy_file_range and sendfile into a pipe: the
 * bytes they move (file to pipe, pipe to file, pipe to pipe, a socket pair
 * and a pipe, the process's memory), where positions and offsets end up,
 * and the errors in Linux's order: bad descriptors, ends that are not
 * pipes, offsets with pipes (ESPIPE), flags, zero length, a full pipe with
 * SPLICE_F_NONBLOCK (EAGAIN), a peer that closes (EPIPE, SIGPIPE, EOF),
 * a wait another process ends, and one a signal interrupts.
 */
#include "abi.h"
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

#define F_NONBLOCK 2 /* SPLICE_F_NONBLOCK */
#define F_MOVE 1
#define F_GIFT 8

static long do_splice(int in, loff_t *oi, int out, loff_t *oo, size_t len, unsigned f)
{
	return syscall(SYS_splice, in, oi, out, oo, len, f);
}

static long do_tee(int in, int out, size_t len, unsigned f)
{
	return syscall(SYS_tee, in, out, len, f);
}

static long do_vmsplice(int fd, const struct iovec *iov, unsigned long n, unsigned f)
{
	return syscall(SYS_vmsplice, fd, iov, n, f);
}

static long do_cfr(int in, loff_t *oi, int out, loff_t *oo, size_t len, unsigned f)
{
	return syscall(SYS_copy_file_range, in, oi, out, oo, len, f);
}

static int held(int fd)
{
	int n = -1;
	ioctl(fd, FIONREAD, &n);
	return n;
}

static int make_file(const char *name, const char *text)
{
	int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0 && text)
		write(fd, text, strlen(text));
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static volatile int sigpipes;
static void on_pipe(int s)
{
	(void)s;
	sigpipes++;
}

int main(void)
{
	abi_init();
	static char buf[131072], big[131072];
	int p[2], q[2], s[2], fd, out;
	loff_t off, off2;

	signal(SIGPIPE, on_pipe);

	section("file to pipe to file");
	fd = make_file("src", "0123456789abcdefghij");
	SETUP(pipe(p));
	EXPECT_EQ("splice file -> pipe", do_splice(fd, NULL, p[1], NULL, 8, 0), 8);
	EXPECT_EQ("the pipe holds 8", held(p[0]), 8);
	EXPECT_EQ("the file position moved to 8", lseek(fd, 0, SEEK_CUR), 8);
	off = 15;
	EXPECT_EQ("splice file at offset 15 -> pipe", do_splice(fd, &off, p[1], NULL, 100, 0), 5);
	EXPECT_EQ("the offset moved to 20", off, 20);
	EXPECT_EQ("the position stayed at 8", lseek(fd, 0, SEEK_CUR), 8);
	EXPECT_EQ("at the file's end: 0", do_splice(fd, &off, p[1], NULL, 100, 0), 0);
	out = make_file("dst", NULL);
	EXPECT_EQ("splice pipe -> file", do_splice(p[0], NULL, out, NULL, 6, 0), 6);
	off2 = 100;
	EXPECT_EQ("splice pipe -> file at offset 100", do_splice(p[0], NULL, out, &off2, 100, 0), 7);
	EXPECT_EQ("the out offset moved to 107", off2, 107);
	EXPECT_EQ("the out position is 6", lseek(out, 0, SEEK_CUR), 6);
	EXPECT_EQ("pread the first part", pread(out, buf, 6, 0), 6);
	EXPECT_TRUE("the first bytes", memcmp(buf, "012345", 6) == 0);
	EXPECT_EQ("pread the second part", pread(out, buf, 7, 100), 7);
	EXPECT_TRUE("the next bytes, in order", memcmp(buf, "67fghij", 7) == 0);
	EXPECT_EQ("the pipe is empty", held(p[0]), 0);
	close(p[0]);
	close(p[1]);

	section("pipe to pipe, and tee");
	SETUP(pipe(p));
	SETUP(pipe(q));
	write(p[1], "hello world", 11);
	EXPECT_EQ("tee 5", do_tee(p[0], q[1], 5, 0), 5);
	EXPECT_EQ("tee leaves the source", held(p[0]), 11);
	EXPECT_EQ("tee copied into the other", held(q[0]), 5);
	EXPECT_EQ("splice pipe -> pipe", do_splice(p[0], NULL, q[1], NULL, 100, 0), 11);
	EXPECT_EQ("the source is empty", held(p[0]), 0);
	EXPECT_EQ("read them", read(q[0], buf, 100), 16);
	EXPECT_TRUE("tee's, then splice's", memcmp(buf, "hellohello world", 16) == 0);
	EXPECT_ERR("splice of a pipe into itself", do_splice(p[0], NULL, p[1], NULL, 1, 0), EINVAL);
	EXPECT_ERR("tee of a pipe into itself", do_tee(p[0], p[1], 1, 0), EINVAL);
	EXPECT_ERR("splice from an empty pipe, SPLICE_F_NONBLOCK",
		   do_splice(p[0], NULL, q[1], NULL, 1, F_NONBLOCK), EAGAIN);
	EXPECT_ERR("tee from an empty pipe, SPLICE_F_NONBLOCK", do_tee(p[0], q[1], 1, F_NONBLOCK), EAGAIN);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	EXPECT_ERR("splice from an empty O_NONBLOCK pipe", do_splice(p[0], NULL, out, NULL, 1, 0), EAGAIN);
	fcntl(p[0], F_SETFL, 0);
	write(p[1], "x", 1);
	EXPECT_EQ("SPLICE_F_MOVE and SPLICE_F_MORE are hints", do_splice(p[0], NULL, q[1], NULL, 1, F_MOVE | 4), 1);
	read(q[0], buf, 1);

	section("a full pipe");
	memset(big, 'b', sizeof big);
	fcntl(q[1], F_SETFL, O_NONBLOCK);
	int filled = 0;
	for (int k; (k = write(q[1], big, sizeof big)) > 0;)
		filled += k;
	fcntl(q[1], F_SETFL, 0);
	EXPECT_EQ("filled with 65536", filled, 65536);
	write(p[1], "abc", 3);
	EXPECT_ERR("splice into a full pipe, SPLICE_F_NONBLOCK",
		   do_splice(p[0], NULL, q[1], NULL, 3, F_NONBLOCK), EAGAIN);
	EXPECT_ERR("tee into a full pipe, SPLICE_F_NONBLOCK", do_tee(p[0], q[1], 3, F_NONBLOCK), EAGAIN);
	EXPECT_ERR("splice file -> full pipe, SPLICE_F_NONBLOCK",
		   do_splice(fd, NULL, q[1], NULL, 3, F_NONBLOCK), EAGAIN);
	struct iovec v = { big, 10 };
	EXPECT_ERR("vmsplice into a full pipe, SPLICE_F_NONBLOCK", do_vmsplice(q[1], &v, 1, F_NONBLOCK), EAGAIN);
	EXPECT_EQ("nothing left the source", held(p[0]), 3);
	EXPECT_EQ("the file position stayed", lseek(fd, 0, SEEK_CUR), 8);
	/* A reader in another process makes room: the waiting splice goes on. */
	pid_t r = fork();
	if (r == 0) {
		usleep(100 * 1000);
		_exit(read(q[0], buf, 65536) == 65536 ? 0 : 1);
	}
	EXPECT_EQ("a splice that waited for room", do_splice(p[0], NULL, q[1], NULL, 3, 0), 3);
	EXPECT_STATUS("the reader", wait_status(r), "exited 0");
	EXPECT_EQ("the 3 bytes arrived", read(q[0], buf, 10), 3);
	EXPECT_TRUE("in order", memcmp(buf, "abc", 3) == 0);

	section("a splice waiting for bytes");
	r = fork();
	if (r == 0) {
		usleep(100 * 1000);
		_exit(write(p[1], "late", 4) == 4 ? 0 : 1);
	}
	EXPECT_EQ("splice from an empty pipe waits for a writer", do_splice(p[0], NULL, q[1], NULL, 10, 0), 4);
	EXPECT_STATUS("the writer", wait_status(r), "exited 0");
	EXPECT_EQ("the bytes went on", read(q[0], buf, 10), 4);
	abi_alarm_in(100, 0);
	EXPECT_ERR("a signal ends a waiting splice", do_splice(p[0], NULL, q[1], NULL, 10, 0), EINTR);
	EXPECT_EQ("the handler ran", abi_alarms, 1);
	abi_alarm_in(100, 0);
	EXPECT_ERR("a signal ends a waiting tee", do_tee(p[0], q[1], 10, 0), EINTR);
	r = fork();
	if (r == 0) {
		usleep(200 * 1000);
		_exit(write(p[1], "r", 1) == 1 ? 0 : 1);
	}
	abi_alarm_in(50, 1);
	EXPECT_EQ("restarted under SA_RESTART", do_splice(p[0], NULL, q[1], NULL, 10, 0), 1);
	EXPECT_STATUS("the writer", wait_status(r), "exited 0");
	EXPECT_EQ("three alarms", abi_alarms, 3);
	read(q[0], buf, 10);

	section("vmsplice");
	struct iovec iv[3] = { { "ab", 2 }, { NULL, 0 }, { "cde", 3 } };
	EXPECT_EQ("vmsplice of three pieces", do_vmsplice(q[1], iv, 3, F_GIFT), 5);
	memset(buf, 0, 16);
	struct iovec ov[2] = { { buf, 1 }, { buf + 8, 8 } };
	EXPECT_EQ("vmsplice out of the read end", do_vmsplice(q[0], ov, 2, 0), 5);
	EXPECT_TRUE("into the pieces", buf[0] == 'a' && memcmp(buf + 8, "bcde", 4) == 0);
	EXPECT_EQ("zero pieces", do_vmsplice(q[1], iv, 0, 0), 0);
	EXPECT_EQ("pieces of zero bytes", do_vmsplice(q[1], &iv[1], 1, 0), 0);
	EXPECT_ERR("vmsplice from an empty pipe, SPLICE_F_NONBLOCK", do_vmsplice(q[0], ov, 2, F_NONBLOCK), EAGAIN);
	EXPECT_ERR("vmsplice of a bad vector", do_vmsplice(q[1], BAD_PTR, 1, 0), EFAULT);
	struct iovec bad = { BAD_PTR, 4 };
	EXPECT_ERR("vmsplice of a bad buffer", do_vmsplice(q[1], &bad, 1, 0), EFAULT);
	EXPECT_EQ("it left nothing", held(q[0]), 0);
	write(q[1], "zz", 2);
	EXPECT_ERR("vmsplice into a bad buffer", do_vmsplice(q[0], &bad, 1, 0), EFAULT);
	EXPECT_EQ("the bytes stayed", held(q[0]), 2);
	read(q[0], buf, 2);
	EXPECT_ERR("too many pieces", do_vmsplice(q[1], iv, 1025, 0), EINVAL);
	EXPECT_ERR("vmsplice of a file", do_vmsplice(out, iv, 1, 0), EBADF);
	EXPECT_ERR("vmsplice of a closed number", do_vmsplice(99, iv, 1, 0), EBADF);
	EXPECT_ERR("vmsplice with unknown flags", do_vmsplice(q[1], iv, 1, 16), EINVAL);

	section("errors");
	EXPECT_EQ("zero length, bad numbers", do_splice(99, NULL, 98, NULL, 0, 0), 0);
	EXPECT_ERR("unknown flags", do_splice(p[0], NULL, q[1], NULL, 1, 16), EINVAL);
	EXPECT_ERR("a closed number in", do_splice(99, NULL, q[1], NULL, 1, 0), EBADF);
	EXPECT_ERR("a closed number out", do_splice(p[0], NULL, 99, NULL, 1, 0), EBADF);
	EXPECT_ERR("from a write end", do_splice(q[1], NULL, out, NULL, 1, 0), EBADF);
	EXPECT_ERR("into a read end", do_splice(fd, NULL, p[0], NULL, 1, 0), EBADF);
	EXPECT_ERR("file to file", do_splice(fd, NULL, out, NULL, 1, 0), EINVAL);
	off = 0;
	EXPECT_ERR("an offset with the pipe in", do_splice(p[0], &off, out, NULL, 1, 0), ESPIPE);
	EXPECT_ERR("an offset with the pipe out", do_splice(fd, NULL, p[1], &off, 1, 0), ESPIPE);
	EXPECT_ERR("offsets with two pipes", do_splice(p[0], &off, q[1], &off, 1, 0), ESPIPE);
	EXPECT_ERR("a bad offset pointer", do_splice(fd, BAD_PTR, p[1], NULL, 1, 0), EFAULT);
	off = -1;
	EXPECT_ERR("a negative offset", do_splice(fd, &off, p[1], NULL, 1, 0), EINVAL);
	int app = open("app", O_WRONLY | O_CREAT | O_APPEND, 0644);
	write(p[1], "a", 1);
	EXPECT_ERR("into an O_APPEND file", do_splice(p[0], NULL, app, NULL, 1, 0), EINVAL);
	int dir = open(".", O_RDONLY | O_DIRECTORY);
	EXPECT_ERR("from a directory", do_splice(dir, NULL, q[1], NULL, 1, 0), EINVAL);
	EXPECT_ERR("tee of a file", do_tee(fd, q[1], 1, 0), EINVAL);
	EXPECT_ERR("tee into a file", do_tee(p[0], out, 1, 0), EINVAL);
	EXPECT_ERR("tee from a write end", do_tee(q[1], p[1], 1, 0), EBADF);
	EXPECT_ERR("tee with unknown flags", do_tee(p[0], q[1], 1, 16), EINVAL);
	EXPECT_EQ("tee of zero bytes", do_tee(99, 98, 0, 0), 0);
	EXPECT_EQ("the byte is still there", held(p[0]), 1);
	read(p[0], buf, 1);

	section("/dev/zero and /dev/null");
	int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
	/* Linux 6.1's /dev/zero has no splice_read (6.5 gave it one). */
	EXPECT_ERR("splice /dev/zero -> pipe", do_splice(zero, NULL, q[1], NULL, 100, 0), EINVAL);
	write(q[1], big, 100);
	EXPECT_EQ("splice pipe -> /dev/null", do_splice(q[0], NULL, null, NULL, 1000, 0), 100);
	EXPECT_EQ("all gone", held(q[0]), 0);

	section("a socket pair and a pipe");
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	write(p[1], "socket!", 7);
	EXPECT_EQ("pipe -> socket", do_splice(p[0], NULL, s[0], NULL, 100, 0), 7);
	EXPECT_EQ("socket -> pipe", do_splice(s[1], NULL, q[1], NULL, 100, 0), 7);
	EXPECT_EQ("read", read(q[0], buf, 100), 7);
	EXPECT_TRUE("the bytes", memcmp(buf, "socket!", 7) == 0);
	EXPECT_ERR("an empty socket, SPLICE_F_NONBLOCK", do_splice(s[1], NULL, q[1], NULL, 1, F_NONBLOCK), EAGAIN);
	off = 0;
	EXPECT_ERR("an offset with a socket in", do_splice(s[1], &off, q[1], NULL, 1, 0), EINVAL);
	close(s[0]);
	EXPECT_EQ("a closed peer: 0", do_splice(s[1], NULL, q[1], NULL, 1, 0), 0);
	close(s[1]);
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	shutdown(s[0], SHUT_WR);
	write(p[1], "x", 1);
	sigpipes = 0;
	EXPECT_ERR("into a socket shut for writing", do_splice(p[0], NULL, s[0], NULL, 1, 0), EPIPE);
	EXPECT_EQ("and SIGPIPE", sigpipes, 1);
	EXPECT_EQ("the byte stayed in the pipe", read(p[0], buf, 1), 1);
	shutdown(s[0], SHUT_RD);
	EXPECT_EQ("from a socket shut for reading: 0", do_splice(s[0], NULL, q[1], NULL, 1, 0), 0);
	close(s[0]);
	close(s[1]);

	section("a peer that closes");
	close(p[1]);
	EXPECT_EQ("no writer left: 0", do_splice(p[0], NULL, q[1], NULL, 10, 0), 0);
	EXPECT_EQ("tee with no writer left: 0", do_tee(p[0], q[1], 10, 0), 0);
	EXPECT_EQ("vmsplice out with no writer left: 0", do_vmsplice(p[0], ov, 2, 0), 0);
	close(q[0]);
	sigpipes = 0;
	EXPECT_ERR("splice into a pipe with no reader", do_splice(fd, NULL, q[1], NULL, 1, 0), EPIPE);
	EXPECT_ERR("vmsplice into a pipe with no reader", do_vmsplice(q[1], iv, 1, 0), EPIPE);
	EXPECT_EQ("two SIGPIPEs", sigpipes, 2);
	close(p[0]);
	close(q[1]);

	section("a peer that goes while a splice waits");
	SETUP(pipe(p));
	SETUP(pipe(q));
	r = fork();
	if (r == 0) {
		close(p[0]);
		usleep(100 * 1000);
		_exit(0);
	}
	close(p[1]);
	EXPECT_EQ("the last writer ends: 0", do_splice(p[0], NULL, q[1], NULL, 10, 0), 0);
	EXPECT_STATUS("the writer", wait_status(r), "exited 0");
	fcntl(q[1], F_SETFL, O_NONBLOCK);
	while (write(q[1], big, sizeof big) > 0)
		;
	fcntl(q[1], F_SETFL, 0);
	r = fork();
	if (r == 0) {
		close(q[1]);
		usleep(100 * 1000);
		_exit(0);
	}
	close(q[0]);
	sigpipes = 0;
	EXPECT_ERR("the last reader ends: EPIPE", do_vmsplice(q[1], iv, 1, 0), EPIPE);
	EXPECT_EQ("and SIGPIPE", sigpipes, 1);
	EXPECT_STATUS("the reader", wait_status(r), "exited 0");
	close(p[0]);
	close(q[1]);

	section("sendfile into a pipe");
	SETUP(pipe(p));
	off = 2;
	EXPECT_EQ("sendfile file -> pipe", syscall(SYS_sendfile, p[1], fd, &off, 5), 5);
	EXPECT_EQ("the offset moved", off, 7);
	EXPECT_EQ("the bytes", read(p[0], buf, 10), 5);
	EXPECT_TRUE("from the offset", memcmp(buf, "23456", 5) == 0);
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	while (write(p[1], big, sizeof big) > 0)
		;
	EXPECT_ERR("sendfile into a full O_NONBLOCK pipe", syscall(SYS_sendfile, p[1], fd, NULL, 1), EAGAIN);
	close(p[0]);
	close(p[1]);
	SETUP(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, s));
	while (write(s[1], "a", 1) == 1)
		;
	EXPECT_ERR("sendfile into a full non-blocking datagram socket", syscall(SYS_sendfile, s[1], fd, NULL, 1),
		   EAGAIN);
	close(s[0]);
	close(s[1]);

	section("copy_file_range");
	off = 4;
	off2 = 0;
	int cp = make_file("copy", NULL);
	EXPECT_EQ("copy 6 from offset 4", do_cfr(fd, &off, cp, &off2, 6, 0), 6);
	EXPECT_EQ("in offset", off, 10);
	EXPECT_EQ("out offset", off2, 6);
	EXPECT_EQ("positions stay", lseek(cp, 0, SEEK_CUR), 0);
	EXPECT_EQ("copy from the position", do_cfr(fd, NULL, cp, NULL, 100, 0), 12);
	EXPECT_EQ("the in position moved to the end", lseek(fd, 0, SEEK_CUR), 20);
	EXPECT_EQ("past the end: 0", do_cfr(fd, NULL, cp, NULL, 100, 0), 0);
	EXPECT_EQ("read back", pread(cp, buf, 100, 0), 12);
	EXPECT_TRUE("the bytes", memcmp(buf, "89abcdefghij", 12) == 0);
	EXPECT_ERR("flags", do_cfr(fd, NULL, cp, NULL, 1, 1), EINVAL);
	EXPECT_ERR("a closed number", do_cfr(99, NULL, cp, NULL, 1, 0), EBADF);
	EXPECT_ERR("into a directory", do_cfr(fd, NULL, dir, NULL, 1, 0), EISDIR);
	SETUP(pipe(p));
	EXPECT_ERR("into a pipe", do_cfr(fd, NULL, p[1], NULL, 1, 0), EINVAL);
	EXPECT_ERR("from a pipe", do_cfr(p[0], NULL, cp, NULL, 1, 0), EINVAL);
	EXPECT_ERR("into /dev/null", do_cfr(fd, NULL, null, NULL, 1, 0), EINVAL);
	int ro = open("copy", O_RDONLY);
	off = 0;
	EXPECT_ERR("into a read-only file", do_cfr(fd, &off, ro, NULL, 1, 0), EBADF);
	EXPECT_ERR("into an O_APPEND file", do_cfr(fd, &off, app, NULL, 1, 0), EBADF);
	off = 0;
	off2 = 4;
	EXPECT_ERR("overlapping ranges of one file", do_cfr(cp, &off, cp, &off2, 8, 0), EINVAL);
	off2 = 20;
	EXPECT_EQ("disjoint ranges of one file", do_cfr(cp, &off, cp, &off2, 8, 0), 8);
	off = 1;
	EXPECT_ERR("a length that wraps the offset", do_cfr(fd, &off, cp, NULL, (size_t)-1, 0), EOVERFLOW);
	EXPECT_ERR("a bad offset pointer", do_cfr(fd, BAD_PTR, cp, NULL, 1, 0), EFAULT);
	close(p[0]);
	close(p[1]);

	close(fd);
	close(out);
	close(app);
	close(dir);
	close(zero);
	close(null);
	close(cp);
	close(ro);
	return abi_done();
}
