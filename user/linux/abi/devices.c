/*
 * Device files: /dev/null, /dev/zero, /dev/urandom (reads, writes, seeks,
 * what they are), /dev/tty without a controlling terminal, /dev/console,
 * and a terminal ioctl on a device that is not a terminal.
 */
#include "abi.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>

int main(void)
{
	abi_init();
	static char buf[8192];

	section("/dev/null");
	int fd = open("/dev/null", O_RDWR);
	EXPECT_TRUE("opens read-write", fd >= 0);
	EXPECT_EQ("read: end of file at once", read(fd, buf, sizeof buf), 0);
	EXPECT_EQ("write of 8192 bytes: all taken", write(fd, buf, sizeof buf), 8192);
	EXPECT_EQ("lseek to 100", lseek(fd, 100, SEEK_SET), 0);
	EXPECT_EQ("pread", pread(fd, buf, 10, 5), 0);
	EXPECT_EQ("write from a bad pointer is still taken", write(fd, BAD_PTR, 10), 10);
	struct termios t;
	EXPECT_ERR("TCGETS (not a terminal)", ioctl(fd, TCGETS, &t), ENOTTY);
	EXPECT_ERR("TIOCGPGRP", ioctl(fd, TIOCGPGRP, buf), ENOTTY);
	struct pollfd p = { fd, POLLIN | POLLOUT, 0 };
	poll(&p, 1, 0);
	EXPECT_TRUE("poll: readable and writable", p.revents == (POLLIN | POLLOUT));
	close(fd);
	EXPECT_ERR("O_DIRECTORY", open("/dev/null", O_RDONLY | O_DIRECTORY), ENOTDIR);
	EXPECT_ERR("O_CREAT|O_EXCL", open("/dev/null", O_RDWR | O_CREAT | O_EXCL, 0666), EEXIST);
	fd = open("/dev/null", O_WRONLY | O_TRUNC);
	EXPECT_TRUE("O_TRUNC is fine", fd >= 0);
	close(fd);

	section("/dev/zero");
	fd = open("/dev/zero", O_RDWR);
	memset(buf, 1, sizeof buf);
	EXPECT_EQ("read 8192", read(fd, buf, sizeof buf), 8192);
	int zero = 1;
	for (unsigned i = 0; i < sizeof buf; i++)
		zero &= buf[i] == 0;
	EXPECT_TRUE("zeros", zero);
	EXPECT_EQ("write is taken", write(fd, "abc", 3), 3);
	EXPECT_EQ("lseek", lseek(fd, 12345, SEEK_SET), 0);
	EXPECT_ERR("read into a bad pointer", read(fd, BAD_PTR, 10), EFAULT);
	close(fd);

	section("/dev/urandom");
	fd = open("/dev/urandom", O_RDONLY);
	unsigned char a[64], b[64];
	EXPECT_EQ("read 64", read(fd, a, 64), 64);
	EXPECT_EQ("read 64 more", read(fd, b, 64), 64);
	EXPECT_TRUE("they differ", memcmp(a, b, 64) != 0);
	int any = 0;
	for (int i = 0; i < 64; i++)
		any |= a[i];
	EXPECT_TRUE("not all zero", any);
	EXPECT_EQ("a large read is served whole", read(fd, buf, sizeof buf), 8192);
	close(fd);
	fd = open("/dev/urandom", O_WRONLY);
	EXPECT_EQ("a write (it mixes the bytes in)", write(fd, "entropy", 7), 7);
	close(fd);
	fd = open("/dev/random", O_RDONLY | O_NONBLOCK);
	EXPECT_EQ("/dev/random, non-blocking, once seeded", read(fd, a, 16), 16);
	close(fd);

	section("/dev/tty and /dev/console");
	/* This process leads a session without a controlling terminal. */
	EXPECT_ERR("/dev/tty without a controlling terminal", open("/dev/tty", O_RDWR), ENXIO);
	fd = open("/dev/console", O_WRONLY | O_NOCTTY);
	EXPECT_TRUE("/dev/console opens", fd >= 0);
	EXPECT_EQ("it is a terminal: TCGETS", ioctl(fd, TCGETS, &t), 0);
	close(fd);
	return abi_done();
}
