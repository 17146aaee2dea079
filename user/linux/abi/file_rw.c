/*
 * Reading and writing files: open and openat with their flags, close,
 * read, write, readv, writev, pread64, pwrite64, lseek (holes, SEEK_END,
 * O_APPEND), sendfile between files, posix_fadvise, the rule for the
 * lowest free descriptor, and the errors.
 * Everything happens in the program's own fresh folder on ext2.
 */
#include "abi.h"

#include <limits.h>
#include <sys/sendfile.h>
#include <sys/uio.h>

static char buf[65536];

static void send_file(void)
{
	section("sendfile");
	int in = open("sf-in", O_RDWR | O_CREAT, 0644);
	write(in, "0123456789", 10);
	lseek(in, 2, SEEK_SET);
	int out = open("sf-out", O_RDWR | O_CREAT | O_TRUNC, 0644);
	EXPECT_EQ("4 bytes from the file position", sendfile(out, in, NULL, 4), 4);
	EXPECT_EQ("the input position moved", lseek(in, 0, SEEK_CUR), 6);
	EXPECT_EQ("the output position moved", lseek(out, 0, SEEK_CUR), 4);
	off_t off = 7;
	EXPECT_EQ("from offset 7, 100 asked", sendfile(out, in, &off, 100), 3);
	EXPECT_EQ("the offset moved to the end", off, 10);
	EXPECT_EQ("the input position did not", lseek(in, 0, SEEK_CUR), 6);
	EXPECT_EQ("at the end: 0", sendfile(out, in, &off, 5), 0);
	EXPECT_EQ("0 bytes asked", sendfile(out, in, NULL, 0), 0);
	EXPECT_STR("the output", text_of("sf-out"), "2345789");
	off = -1;
	EXPECT_ERR("a negative offset", sendfile(out, in, &off, 1), EINVAL);
	EXPECT_ERR("an unreadable offset", syscall(SYS_sendfile, out, in, BAD_PTR, 1), EFAULT);
	void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_ERR("an offset in read-only memory", syscall(SYS_sendfile, out, in, ro, 1), EFAULT);
	munmap(ro, 4096);
	EXPECT_ERR("a closed input", sendfile(out, 999, NULL, 1), EBADF);
	EXPECT_ERR("a closed output", sendfile(999, in, NULL, 1), EBADF);
	int wo = open("sf-in", O_WRONLY);
	EXPECT_ERR("an input open only for writing", sendfile(out, wo, NULL, 1), EBADF);
	int ro_fd = open("sf-out", O_RDONLY);
	EXPECT_ERR("an output open only for reading", sendfile(ro_fd, in, NULL, 1), EBADF);
	int ap = open("sf-out", O_WRONLY | O_APPEND);
	EXPECT_ERR("an O_APPEND output", sendfile(ap, in, NULL, 1), EINVAL);
	int dir = open(".", O_RDONLY | O_DIRECTORY);
	EXPECT_ERR("a directory as input", sendfile(out, dir, NULL, 1), EINVAL);
	close(dir);
	close(ap);
	close(ro_fd);
	close(wo);
	close(out);
	close(in);
}

static void advice(void)
{
	section("posix_fadvise");
	int fd = open("adv", O_RDWR | O_CREAT, 0644);
	write(fd, "0123456789", 10);
	int known = 0;
	for (int a = 0; a <= 5; a++)
		known += syscall(SYS_fadvise64, fd, 0, 0, a) == 0;
	EXPECT_EQ("advice 0 to 5 on a file", known, 6);
	EXPECT_ERR("advice 6", syscall(SYS_fadvise64, fd, 0, 0, 6), EINVAL);
	EXPECT_ERR("advice -1", syscall(SYS_fadvise64, fd, 0, 0, -1), EINVAL);
	EXPECT_OK("a negative length", syscall(SYS_fadvise64, fd, 0, -1, 0));
	EXPECT_OK("past the end", syscall(SYS_fadvise64, fd, 1 << 20, 4096, 3));
	int p[2];
	pipe(p);
	EXPECT_ERR("on a pipe", syscall(SYS_fadvise64, p[0], 0, 0, 0), ESPIPE);
	EXPECT_ERR("on a pipe, unknown advice", syscall(SYS_fadvise64, p[1], 0, 0, 9), ESPIPE);
	close(p[0]);
	close(p[1]);
	EXPECT_ERR("a closed descriptor", syscall(SYS_fadvise64, 999, 0, 0, 0), EBADF);
	close(fd);
}

/* A description a fork shares: the processes' writes through it never land
 * at the same offset (Linux serializes them on the description). */
static void shared_offset(void)
{
	section("one description written by two processes");
	int fd = open("shared", O_RDWR | O_CREAT | O_TRUNC, 0644);
	pid_t c = fork();
	char rec[8];
	for (int i = 0; i < 300; i++) {
		snprintf(rec, sizeof rec, "%c%03d\n", c == 0 ? 'c' : 'p', i);
		if (write(fd, rec, 5) != 5)
			break;
	}
	if (c == 0)
		_exit(0);
	int status;
	waitpid(c, &status, 0);
	EXPECT_STATUS("the child", status, "exited 0");
	EXPECT_EQ("the offset: both processes' bytes", lseek(fd, 0, SEEK_CUR), 3000);
	static char all[3001];
	EXPECT_EQ("pread of the file", pread(fd, all, 3000, 0), 3000);
	int p = 0, k = 0, whole = 1;
	for (int i = 0; i < 3000; i += 5) {
		int n = -1;
		if (all[i + 4] != '\n' || sscanf(all + i + 1, "%3d", &n) != 1)
			whole = 0;
		else if (all[i] == 'p' && n == p)
			p++;
		else if (all[i] == 'c' && n == k)
			k++;
		else
			whole = 0;
	}
	EXPECT_TRUE("every record whole and in its writer's order", whole);
	EXPECT_EQ("the parent's records", p, 300);
	EXPECT_EQ("the child's records", k, 300);
	close(fd);
}

int main(void)
{
	abi_init();

	section("standard descriptors");
	EXPECT_TRUE("0, 1, 2 are open", fcntl(0, F_GETFD) >= 0 && fcntl(1, F_GETFD) >= 0 && fcntl(2, F_GETFD) >= 0);
	EXPECT_ERR("descriptor 3 is not (nothing leaked into the program)", fcntl(3, F_GETFD), EBADF);

	section("open and create");
	EXPECT_ERR("open a missing file", open("missing", O_RDONLY), ENOENT);
	int fd = open("f", O_WRONLY | O_CREAT | O_EXCL, 0644);
	EXPECT_EQ("O_CREAT|O_EXCL: the lowest free descriptor", fd, 3);
	EXPECT_ERR("O_CREAT|O_EXCL again", open("f", O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	EXPECT_EQ("write", write(fd, "hello world", 11), 11);
	EXPECT_ERR("read on a write-only descriptor", read(fd, buf, 1), EBADF);
	EXPECT_OK("close", close(fd));
	EXPECT_ERR("close again", close(fd), EBADF);
	EXPECT_ERR("close(-1)", close(-1), EBADF);
	fd = open("f", O_RDONLY);
	EXPECT_ERR("write on a read-only descriptor", write(fd, "x", 1), EBADF);
	EXPECT_EQ("read 100 from an 11-byte file", read(fd, buf, 100), 11);
	EXPECT_EQ("read at end of file", read(fd, buf, 100), 0);
	EXPECT_EQ("read of 0 bytes", read(fd, buf, 0), 0);
	lseek(fd, 0, SEEK_SET);
	EXPECT_ERR("read into a bad pointer", read(fd, BAD_PTR, 1), EFAULT);
	close(fd);
	fd = open("f", O_WRONLY | O_TRUNC);
	close(fd);
	EXPECT_STR("O_TRUNC empties it", text_of("f"), "");
	int a = open("f", O_RDONLY), b = open("f", O_RDONLY);
	close(a);
	int c = open("f", O_RDONLY);
	EXPECT_TRUE("a closed descriptor's number is used again", c == a && b == a + 1);
	close(b);
	close(c);
	EXPECT_ERR("O_DIRECTORY on a file", open("f", O_RDONLY | O_DIRECTORY), ENOTDIR);
	EXPECT_ERR("a directory for writing", open(".", O_WRONLY), EISDIR);
	EXPECT_ERR("O_CREAT of a directory's name", open(".", O_RDONLY | O_CREAT, 0644), EISDIR);
	EXPECT_ERR("a path through a file", open("f/x", O_RDONLY), ENOTDIR);
	EXPECT_ERR("O_CREAT in a missing folder", open("nodir/x", O_WRONLY | O_CREAT, 0644), ENOENT);
	EXPECT_ERR("an empty path", open("", O_RDONLY), ENOENT);
	EXPECT_ERR("a bad path pointer", open(BAD_PTR, O_RDONLY), EFAULT);
	memset(buf, 'n', 256);
	buf[256] = 0;
	EXPECT_ERR("a name of 256 characters", open(buf, O_RDONLY | O_CREAT, 0644), ENAMETOOLONG);
	buf[255] = 0;
	EXPECT_ERR("a name of 255 characters, missing", open(buf, O_RDONLY), ENOENT);
	fd = open(buf, O_WRONLY | O_CREAT, 0644);
	EXPECT_TRUE("and created", fd >= 0);
	close(fd);
	unlink(buf);
	for (int i = 0; i < PATH_MAX + 10; i += 2) {
		buf[i] = 'd';
		buf[i + 1] = '/';
	}
	buf[PATH_MAX + 10] = 0;
	EXPECT_ERR("a path of 4106 characters", open(buf, O_RDONLY), ENAMETOOLONG);
	/* Access mode 3 opens for neither reading nor writing (ioctl only). */
	fd = open("f", 3);
	EXPECT_TRUE("access mode 3 opens", fd >= 0);
	EXPECT_ERR("and cannot read", read(fd, buf, 1), EBADF);
	EXPECT_ERR("nor write", write(fd, buf, 1), EBADF);
	close(fd);

	section("openat");
	SETUP(mkdir("sub", 0755));
	int dir = open("sub", O_RDONLY | O_DIRECTORY);
	fd = openat(dir, "g", O_WRONLY | O_CREAT, 0644);
	EXPECT_TRUE("create relative to a directory descriptor", fd >= 0);
	write(fd, "in sub", 6);
	close(fd);
	EXPECT_STR("it is in that directory", text_of("sub/g"), "in sub");
	fd = openat(AT_FDCWD, "sub/g", O_RDONLY);
	EXPECT_TRUE("AT_FDCWD is the current directory", fd >= 0);
	close(fd);
	fd = openat(12345, "/dev/null", O_RDONLY);
	EXPECT_TRUE("an absolute path ignores the descriptor", fd >= 0);
	close(fd);
	EXPECT_ERR("a bad directory descriptor", openat(12345, "g", O_RDONLY), EBADF);
	fd = open("f", O_RDONLY);
	EXPECT_ERR("a file as the directory", openat(fd, "g", O_RDONLY), ENOTDIR);
	close(fd);
	close(dir);

	section("offsets, holes and O_APPEND");
	fd = open("h", O_RDWR | O_CREAT, 0644);
	EXPECT_EQ("lseek SEEK_SET 10000", lseek(fd, 10000, SEEK_SET), 10000);
	EXPECT_EQ("write past the end", write(fd, "end", 3), 3);
	EXPECT_EQ("lseek SEEK_END", lseek(fd, 0, SEEK_END), 10003);
	EXPECT_EQ("lseek SEEK_CUR -3", lseek(fd, -3, SEEK_CUR), 10000);
	EXPECT_EQ("lseek SEEK_END -10003", lseek(fd, -10003, SEEK_END), 0);
	memset(buf, 1, 10003);
	EXPECT_EQ("read the whole file", read(fd, buf, 20000), 10003);
	int zeros = 1;
	for (int i = 0; i < 10000; i++)
		zeros &= buf[i] == 0;
	EXPECT_TRUE("the hole reads zero", zeros);
	EXPECT_ERR("lseek to a negative offset", lseek(fd, -1, SEEK_SET), EINVAL);
	EXPECT_ERR("lseek with a bad whence", lseek(fd, 0, 7), EINVAL);
	EXPECT_EQ("lseek far past the end is allowed", lseek(fd, 1L << 40, SEEK_SET), 1L << 40);
	EXPECT_EQ("read there", read(fd, buf, 10), 0);
	close(fd);
	fd = open("app", O_WRONLY | O_CREAT | O_APPEND, 0644);
	write(fd, "one ", 4);
	lseek(fd, 0, SEEK_SET);
	write(fd, "two", 3);
	EXPECT_EQ("O_APPEND: the offset after writing is the end", lseek(fd, 0, SEEK_CUR), 7);
	EXPECT_EQ("pwrite with O_APPEND", pwrite(fd, "3", 1, 0), 1);
	close(fd);
	/* Linux appends a pwrite on an O_APPEND descriptor, whatever the offset. */
	EXPECT_STR("writes went to the end", text_of("app"), "one two3");
	int p[2];
	SETUP(pipe(p));
	EXPECT_ERR("lseek on a pipe", lseek(p[0], 0, SEEK_CUR), ESPIPE);
	EXPECT_ERR("pread on a pipe", pread(p[0], buf, 1, 0), ESPIPE);
	EXPECT_ERR("pwrite on a pipe", pwrite(p[1], buf, 1, 0), ESPIPE);
	close(p[0]);
	close(p[1]);

	section("pread64 and pwrite64");
	fd = open("p", O_RDWR | O_CREAT, 0644);
	write(fd, "0123456789", 10);
	EXPECT_EQ("pread 4 at 3", pread(fd, buf, 4, 3), 4);
	buf[4] = 0;
	EXPECT_STR("the bytes", buf, "3456");
	EXPECT_EQ("the offset is unchanged", lseek(fd, 0, SEEK_CUR), 10);
	EXPECT_EQ("pwrite 2 at 1", pwrite(fd, "ab", 2, 1), 2);
	EXPECT_EQ("pread past the end", pread(fd, buf, 4, 100), 0);
	EXPECT_ERR("pread at a negative offset", pread(fd, buf, 1, -1), EINVAL);
	EXPECT_ERR("pwrite at a negative offset", pwrite(fd, buf, 1, -1), EINVAL);
	EXPECT_ERR("pwrite from a bad pointer", pwrite(fd, BAD_PTR, 1, 0), EFAULT);
	close(fd);
	EXPECT_STR("the file", text_of("p"), "0ab3456789");

	section("readv and writev");
	fd = open("v", O_RDWR | O_CREAT, 0644);
	struct iovec iov[3] = { { "abc", 3 }, { "", 0 }, { "defgh", 5 } };
	EXPECT_EQ("writev of 3 + 0 + 5 bytes", writev(fd, iov, 3), 8);
	lseek(fd, 0, SEEK_SET);
	char x[2], y[10];
	struct iovec in[2] = { { x, 2 }, { y, 10 } };
	EXPECT_EQ("readv into 2 + 10", readv(fd, in, 2), 8);
	EXPECT_TRUE("filled in order", memcmp(x, "ab", 2) == 0 && memcmp(y, "cdefgh", 6) == 0);
	EXPECT_EQ("preadv at 6", preadv(fd, in, 2, 6), 2);
	EXPECT_TRUE("the bytes", memcmp(x, "gh", 2) == 0);
	EXPECT_EQ("pwritev at 1", pwritev(fd, iov, 1, 1), 3);
	EXPECT_ERR("writev with a negative count", syscall(SYS_writev, fd, iov, -1), EINVAL);
	EXPECT_ERR("writev with 1025 vectors", syscall(SYS_writev, fd, iov, 1025), EINVAL);
	EXPECT_ERR("readv with a bad vector pointer", syscall(SYS_readv, fd, BAD_PTR, 1), EFAULT);
	struct iovec bad[2] = { { "ok", 2 }, { BAD_PTR, 4 } };
	lseek(fd, 0, SEEK_END);
	/* The part before the bad buffer is written and counted. */
	EXPECT_EQ("writev whose second buffer is bad", writev(fd, bad, 2), 2);
	EXPECT_EQ("writev of nothing", writev(fd, iov, 0), 0);
	close(fd);
	EXPECT_STR("the file", text_of("v"), "aabcefghok");

	shared_offset();
	send_file();
	advice();

	return abi_done();
}
