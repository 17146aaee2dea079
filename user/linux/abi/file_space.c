/*
 * Space allocation and rename flags on ext2: fallocate (allocate, keep
 * size, punch a hole, zero a range) and musl's posix_fallocate; renameat2
 * with RENAME_NOREPLACE, RENAME_EXCHANGE (files and directories, across
 * directories: the `..` of a swapped directory and its parents' link
 * counts) and RENAME_WHITEOUT (the ext4 driver, which Linux mounts ext2
 * disks with, leaves a whiteout); Linux's errors in its order for bad
 * descriptors, ranges, modes, file kinds and flags.
 *
 * Linux's ext2 (the ext4 driver on a disk without extents) allocates no
 * block ahead: mode 0, KEEP_SIZE and ZERO_RANGE are EOPNOTSUPP there, and
 * Tessera's ext2 allocates. Those checks accept either answer and print
 * the same words for both; an allocation that succeeds must then be right
 * (the size, st_blocks, zeros where nothing was written).
 */
#include "abi.h"

#include <limits.h>
#include <sys/resource.h>
#include <sys/socket.h>

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#define FL_NO_HIDE_STALE 0x04
#define FL_COLLAPSE_RANGE 0x08
#define FL_ZERO_RANGE 0x10
#define FL_INSERT_RANGE 0x20
#define FL_UNSHARE_RANGE 0x40
#define KEEP FALLOC_FL_KEEP_SIZE
#define PUNCH FALLOC_FL_PUNCH_HOLE

#define NOREPLACE 1
#define EXCHANGE 2
#define WHITEOUT 4

static char buf[256 * 1024];

static long falloc(int fd, int mode, long off, long len)
{
	return syscall(SYS_fallocate, fd, mode, off, len);
}

static long rename2(const char *a, const char *b, unsigned long flags)
{
	return syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static void pattern(char *p, long n, int seed)
{
	for (long i = 0; i < n; i++)
		p[i] = (char)((i * 7 + seed) | 1);
}

static int make(const char *name, long size, int seed)
{
	int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	pattern(buf, size, seed);
	for (long off = 0; off < size;) {
		long w = write(fd, buf + off, size - off);
		SETUP(w);
		off += w;
	}
	return fd;
}

static struct stat st_of(int fd)
{
	struct stat st;
	SETUP(fstat(fd, &st));
	return st;
}

/* Whether bytes off..off+len of fd are all zero. */
static int zeros(int fd, long off, long len)
{
	static char rd[256 * 1024];
	if (pread(fd, rd, len, off) != len)
		return 0;
	for (long i = 0; i < len; i++)
		if (rd[i])
			return 0;
	return 1;
}

/* Whether bytes off..off+len of fd are the pattern `seed` made there. */
static int same(int fd, long off, long len, int seed)
{
	static char rd[256 * 1024], want[256 * 1024];
	pattern(want, off + len, seed);
	return pread(fd, rd, len, off) == len && memcmp(rd, want + off, len) == 0;
}

#define EITHER "allocated, or EOPNOTSUPP as Linux's ext2"

/* An allocation of off..off+len with `mode` on a file of `size` bytes
 * whose first SEEDED bytes are pattern `seed` (zeros after them): EITHER
 * when it is refused with EOPNOTSUPP, or done right. */
#define SEEDED 5000L
static const char *allocation(int fd, int mode, long off, long len, long size, int seed)
{
	struct stat before = st_of(fd);
	errno = 0;
	long r = falloc(fd, mode, off, len);
	if (r == -1)
		return errno == EOPNOTSUPP ? EITHER : errname(errno);
	struct stat after = st_of(fd);
	long want = (mode & KEEP) || off + len <= size ? size : off + len;
	if (after.st_size != want)
		return "wrong size";
	/* The file had no hole before: its blocks now reach the range's end. */
	if (after.st_blocks * 512 < off + len || after.st_blocks < before.st_blocks)
		return "st_blocks does not cover the range";
	long kept = size < off ? size : off;
	if (!same(fd, 0, kept < SEEDED ? kept : SEEDED, seed) || (kept > SEEDED && !zeros(fd, SEEDED, kept - SEEDED)))
		return "bytes before the range changed";
	if ((mode & FL_ZERO_RANGE) && !zeros(fd, off, (off + len < want ? off + len : want) - off))
		return "the zeroed range is not zeros";
	if (!(mode & FL_ZERO_RANGE) && want > size && !zeros(fd, size, want - size))
		return "the new bytes are not zeros";
	return EITHER;
}

static void errors(void)
{
	section("fallocate: descriptors, ranges and modes, in Linux's order");
	int fd = make("f", 10000, 1);
	int ro = open("f", O_RDONLY);
	SETUP(ro);
	EXPECT_ERR("fd -1", falloc(-1, 0, 0, 10), EBADF);
	EXPECT_ERR("fd 999", falloc(999, 0, 0, 10), EBADF);
	EXPECT_ERR("len 0", falloc(fd, 0, 0, 0), EINVAL);
	EXPECT_ERR("len -1", falloc(fd, 0, 0, -1), EINVAL);
	EXPECT_ERR("offset -1", falloc(fd, 0, -1, 10), EINVAL);
	EXPECT_ERR("len 0 on a read-only descriptor (the range first)", falloc(ro, 0, 0, 0), EINVAL);
	EXPECT_ERR("unknown mode 0x80", falloc(fd, 0x80, 0, 10), EOPNOTSUPP);
	EXPECT_ERR("NO_HIDE_STALE", falloc(fd, FL_NO_HIDE_STALE, 0, 10), EOPNOTSUPP);
	EXPECT_ERR("mode with high bits", falloc(fd, 0x10000, 0, 10), EOPNOTSUPP);
	EXPECT_ERR("PUNCH_HOLE without KEEP_SIZE", falloc(fd, PUNCH, 0, 10), EOPNOTSUPP);
	EXPECT_ERR("PUNCH_HOLE|ZERO_RANGE|KEEP_SIZE", falloc(fd, PUNCH | FL_ZERO_RANGE | KEEP, 0, 10), EOPNOTSUPP);
	EXPECT_ERR("COLLAPSE_RANGE|KEEP_SIZE", falloc(fd, FL_COLLAPSE_RANGE | KEEP, 0, 4096), EINVAL);
	EXPECT_ERR("INSERT_RANGE|ZERO_RANGE", falloc(fd, FL_INSERT_RANGE | FL_ZERO_RANGE, 0, 4096), EINVAL);
	EXPECT_ERR("UNSHARE_RANGE|PUNCH_HOLE|KEEP_SIZE", falloc(fd, FL_UNSHARE_RANGE | PUNCH | KEEP, 0, 10), EINVAL);
	EXPECT_ERR("mode 0x80 on a read-only descriptor (the mode first)", falloc(ro, 0x80, 0, 10), EOPNOTSUPP);
	EXPECT_ERR("a read-only descriptor", falloc(ro, 0, 0, 10), EBADF);
	EXPECT_ERR("a read-only descriptor, PUNCH_HOLE", falloc(ro, PUNCH | KEEP, 0, 10), EBADF);
	int path = open("f", O_PATH);
	SETUP(path);
	EXPECT_ERR("an O_PATH descriptor", falloc(path, 0, 0, 10), EBADF);
	close(path);
	EXPECT_ERR("offset + len past the largest file", falloc(fd, 0, 1L << 60, 10), EFBIG);
	EXPECT_ERR("offset + len wraps", falloc(fd, 0, LONG_MAX - 5, 10), EFBIG);
	EXPECT_ERR("a punch past the largest file", falloc(fd, PUNCH | KEEP, 1L << 60, 10), EFBIG);
	EXPECT_ERR("COLLAPSE_RANGE alone (not on ext2)", falloc(fd, FL_COLLAPSE_RANGE, 0, 4096), EOPNOTSUPP);
	EXPECT_ERR("INSERT_RANGE alone (not on ext2)", falloc(fd, FL_INSERT_RANGE, 0, 4096), EOPNOTSUPP);
	EXPECT_ERR("UNSHARE_RANGE (not on ext2)", falloc(fd, FL_UNSHARE_RANGE, 0, 4096), EOPNOTSUPP);
	EXPECT_EQ("the file is untouched", st_of(fd).st_size, 10000);
	EXPECT_TRUE("and its bytes", same(fd, 0, 10000, 1));
	close(ro);
	close(fd);

	section("fallocate: what is not a regular file");
	int p[2];
	SETUP(pipe(p));
	EXPECT_ERR("a pipe's write end", falloc(p[1], 0, 0, 10), ESPIPE);
	EXPECT_ERR("a pipe's read end", falloc(p[0], 0, 0, 10), EBADF);
	EXPECT_ERR("a pipe's write end, bad range", falloc(p[1], 0, 0, 0), EINVAL);
	close(p[0]);
	close(p[1]);
	int null = open("/dev/null", O_WRONLY);
	SETUP(null);
	EXPECT_ERR("/dev/null", falloc(null, 0, 0, 10), ENODEV);
	close(null);
	int sv[2];
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	EXPECT_ERR("a socket", falloc(sv[0], 0, 0, 10), ENODEV);
	close(sv[0]);
	close(sv[1]);
	SETUP(mkdir("dir", 0755));
	int d = open("dir", O_RDONLY | O_DIRECTORY);
	SETUP(d);
	EXPECT_ERR("a directory (read-only)", falloc(d, 0, 0, 10), EBADF);
	close(d);
}

static void allocating(void)
{
	section("fallocate: allocating");
	int fd = make("a", SEEDED, 2);
	EXPECT_STR("mode 0 inside the file", allocation(fd, 0, 100, 3000, SEEDED, 2), EITHER);
	EXPECT_STR("mode 0 past the end", allocation(fd, 0, 3000, 100000, SEEDED, 2), EITHER);
	long size = st_of(fd).st_size;
	EXPECT_STR("KEEP_SIZE past the end", allocation(fd, KEEP, size, 65536, size, 2), EITHER);
	EXPECT_STR("ZERO_RANGE", allocation(fd, FL_ZERO_RANGE, 1000, 2000, size, 2), EITHER);
	errno = 0;
	int r = posix_fallocate(fd, 0, 300000);
	EXPECT_STR("posix_fallocate", r == 0 || r == EOPNOTSUPP ? EITHER : errname(r), EITHER);
	if (r == 0)
		EXPECT_TRUE("posix_fallocate: the size covers it", st_of(fd).st_size >= 300000);
	else
		EXPECT_TRUE("posix_fallocate: the size covers it", 1);
	EXPECT_ERR("posix_fallocate with len 0 (EINVAL as a return value)", (errno = posix_fallocate(fd, 0, 0)) ? -1 : 0,
		   EINVAL);
	close(fd);
	/* Blocks kept past a file's end are e2fsck's complaint on an ext2
	 * disk: none is left behind. */
	SETUP(unlink("a"));

	struct rlimit lim = {65536, RLIM_INFINITY}, old;
	SETUP(getrlimit(RLIMIT_FSIZE, &old));
	signal(SIGXFSZ, SIG_IGN);
	SETUP(setrlimit(RLIMIT_FSIZE, &lim));
	fd = make("small", 1000, 3);
	errno = 0;
	long rr = falloc(fd, 0, 0, 200000);
	int e = errno;
	EXPECT_STR("mode 0 past RLIMIT_FSIZE", rr == -1 && (e == EFBIG || e == EOPNOTSUPP) ? "refused" : result_text(rr, e),
		   "refused");
	EXPECT_EQ("and the size stays", st_of(fd).st_size, 1000);
	errno = 0;
	rr = falloc(fd, KEEP, 0, 200000);
	e = errno;
	EXPECT_STR("KEEP_SIZE past RLIMIT_FSIZE", rr == 0 || e == EOPNOTSUPP ? EITHER : errname(e), EITHER);
	SETUP(setrlimit(RLIMIT_FSIZE, &old));
	signal(SIGXFSZ, SIG_DFL);
	close(fd);
	SETUP(unlink("small"));
}

static void punching(void)
{
	section("fallocate: punching holes");
	long size = 200000;
	int fd = make("p", size, 4);
	SETUP(fsync(fd));
	struct stat before = st_of(fd);
	EXPECT_OK("PUNCH_HOLE|KEEP_SIZE over 100000 bytes", falloc(fd, PUNCH | KEEP, 30001, 100000));
	struct stat after = st_of(fd);
	EXPECT_EQ("the size stays", after.st_size, size);
	EXPECT_TRUE("st_blocks dropped by most of the range",
		    before.st_blocks - after.st_blocks >= (100000 - 2 * 65536) / 512);
	EXPECT_TRUE("the range reads as zeros", zeros(fd, 30001, 100000));
	EXPECT_TRUE("the bytes before it stay", same(fd, 0, 30001, 4));
	EXPECT_TRUE("the bytes after it stay", same(fd, 130001, size - 130001, 4));
	EXPECT_OK("a punch inside one block", falloc(fd, PUNCH | KEEP, 5, 10));
	EXPECT_TRUE("zeros there", zeros(fd, 5, 10));
	EXPECT_TRUE("and around it the bytes stay", same(fd, 0, 5, 4) && same(fd, 15, 30001 - 15, 4));
	EXPECT_OK("a punch past the end", falloc(fd, PUNCH | KEEP, size + 10000, 50000));
	EXPECT_OK("a punch over the end", falloc(fd, PUNCH | KEEP, size - 100, 50000));
	EXPECT_EQ("the size still stays", st_of(fd).st_size, size);
	EXPECT_TRUE("the last bytes are zeros", zeros(fd, size - 100, 100));
	pattern(buf, 4096, 9);
	EXPECT_EQ("a write into the hole", pwrite(fd, buf, 4096, 40000), 4096);
	EXPECT_TRUE("reads back", pread(fd, buf + 8192, 4096, 40000) == 4096 && memcmp(buf, buf + 8192, 4096) == 0);
	EXPECT_TRUE("zeros stay around it", zeros(fd, 30001, 40000 - 30001) && zeros(fd, 44096, 130001 - 44096));
	/* Holes found by lseek (block sizes differ: relations only). */
	long h = lseek(fd, 0, SEEK_HOLE);
	EXPECT_TRUE("SEEK_HOLE from 0: in the punched range's first block", h > 30000 && h <= 30001 + 4096);
	long dt = lseek(fd, h, SEEK_DATA);
	EXPECT_TRUE("SEEK_DATA from there: the block written into the hole", dt > 40000 - 4096 && dt <= 40000);
	h = lseek(fd, 44096, SEEK_HOLE);
	EXPECT_TRUE("SEEK_HOLE after that block", h >= 44096 && h < 44096 + 4096);
	dt = lseek(fd, h, SEEK_DATA);
	EXPECT_TRUE("SEEK_DATA: where the punch ended", dt > 130001 - 4096 && dt <= 130001);
	EXPECT_EQ("SEEK_HOLE near the end: the end", lseek(fd, size - 50, SEEK_HOLE), size);
	EXPECT_ERR("SEEK_DATA at the end", lseek(fd, size, SEEK_DATA), ENXIO);
	EXPECT_ERR("SEEK_HOLE past the end", lseek(fd, size + 1, SEEK_HOLE), ENXIO);
	EXPECT_ERR("SEEK_DATA at -1", lseek(fd, -1, SEEK_DATA), ENXIO);
	/* What another descriptor, and a fresh open, read. */
	int fd2 = open("p", O_RDONLY);
	SETUP(fd2);
	EXPECT_TRUE("another descriptor reads the zeros", zeros(fd2, 50000, 80001));
	close(fd2);
	close(fd);
}

static int dir_links(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (int)st.st_nlink : -1;
}

static int same_file(const char *a, const char *b)
{
	struct stat x, y;
	return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_ino == y.st_ino && x.st_dev == y.st_dev;
}

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	SETUP(write(fd, text, strlen(text)));
	close(fd);
}

static void renaming(void)
{
	section("renameat2: flags");
	put("x", "x");
	put("y", "y");
	EXPECT_ERR("unknown flag 8", rename2("x", "z", 8), EINVAL);
	EXPECT_OK("a flag in the upper half (flags is an int)", rename2("x", "x", 1UL << 32));
	EXPECT_ERR("NOREPLACE|EXCHANGE", rename2("x", "y", NOREPLACE | EXCHANGE), EINVAL);
	EXPECT_ERR("WHITEOUT|EXCHANGE", rename2("x", "y", WHITEOUT | EXCHANGE), EINVAL);
	EXPECT_ERR("flags before names: unknown flag, bad pointer",
		   syscall(SYS_renameat2, AT_FDCWD, (char *)1, AT_FDCWD, "z", 8), EINVAL);
	EXPECT_ERR("a bad pointer", syscall(SYS_renameat2, AT_FDCWD, (char *)1, AT_FDCWD, "z", 0), EFAULT);
	EXPECT_ERR("a bad pointer, EXCHANGE", syscall(SYS_renameat2, AT_FDCWD, "x", AT_FDCWD, (char *)1, EXCHANGE),
		   EFAULT);

	section("renameat2: RENAME_NOREPLACE");
	EXPECT_ERR("onto an existing file", rename2("x", "y", NOREPLACE), EEXIST);
	EXPECT_STR("which keeps its bytes", text_of("y"), "y");
	EXPECT_STR("and the source stays", text_of("x"), "x");
	SETUP(mkdir("e", 0755));
	EXPECT_ERR("onto an empty directory", rename2("x", "e", NOREPLACE), EEXIST);
	SETUP(symlink("nowhere", "dangling"));
	EXPECT_ERR("onto a dangling symbolic link", rename2("x", "dangling", NOREPLACE), EEXIST);
	EXPECT_ERR("a missing source", rename2("none", "z", NOREPLACE), ENOENT);
	EXPECT_OK("onto a free name", rename2("x", "z", NOREPLACE));
	EXPECT_STR("moved", text_of("z"), "x");
	EXPECT_ERR("the old name is gone", access("x", F_OK), ENOENT);

	section("renameat2: RENAME_EXCHANGE of files");
	EXPECT_OK("two files", rename2("z", "y", EXCHANGE));
	EXPECT_STR("z holds y's bytes", text_of("z"), "y");
	EXPECT_STR("y holds z's bytes", text_of("y"), "x");
	EXPECT_ERR("with a missing target", rename2("y", "none", EXCHANGE), ENOENT);
	EXPECT_ERR("with a missing source", rename2("none", "y", EXCHANGE), ENOENT);
	EXPECT_OK("a name with itself", rename2("y", "y", EXCHANGE));
	SETUP(link("y", "y2"));
	EXPECT_OK("two names of one file", rename2("y", "y2", EXCHANGE));
	EXPECT_TRUE("still one file", same_file("y", "y2"));
	EXPECT_OK("a file and a symbolic link", rename2("z", "dangling", EXCHANGE));
	EXPECT_STR("the file under the link's name", text_of("dangling"), "y");
	char target[64] = {0};
	EXPECT_EQ("the link under the file's name", readlink("z", target, sizeof target - 1), 7);
	EXPECT_ERR(".", rename2(".", "y", EXCHANGE), EBUSY);

	section("renameat2: RENAME_EXCHANGE of directories");
	SETUP(mkdir("d1", 0755));
	SETUP(mkdir("d2", 0755));
	SETUP(mkdir("d2/sub", 0755));
	SETUP(mkdir("d2/sub/inner", 0755));
	put("d1/file", "file");
	int l1 = dir_links("d1"), l2 = dir_links("d2");
	EXPECT_OK("a file for a directory in another", rename2("d1/file", "d2/sub", EXCHANGE));
	EXPECT_EQ("d1 gained a subdirectory", dir_links("d1") - l1, 1);
	EXPECT_EQ("d2 lost one", dir_links("d2") - l2, -1);
	EXPECT_TRUE("the directory's .. is d1", same_file("d1/file/..", "d1"));
	EXPECT_STR("the file is in d2", text_of("d2/sub"), "file");
	EXPECT_TRUE("what the directory holds came along", same_file("d1/file/inner/..", "d1/file"));
	SETUP(mkdir("d2/other", 0755));
	l1 = dir_links("d1");
	l2 = dir_links("d2");
	EXPECT_OK("two directories across parents", rename2("d1/file", "d2/other", EXCHANGE));
	EXPECT_EQ("d1's links stay", dir_links("d1") - l1, 0);
	EXPECT_EQ("d2's links stay", dir_links("d2") - l2, 0);
	EXPECT_TRUE("the first's .. is d2", same_file("d2/other/..", "d2"));
	EXPECT_TRUE("the second's .. is d1", same_file("d1/file/..", "d1"));
	EXPECT_TRUE("and inner moved with it", same_file("d2/other/inner/..", "d2/other"));
	EXPECT_ERR("a directory with its own subdirectory", rename2("d2", "d2/other", EXCHANGE), EINVAL);
	EXPECT_ERR("a subdirectory with its ancestor", rename2("d2/other/inner", "d2", EXCHANGE), EINVAL);
	EXPECT_OK("a directory and a non-empty one (no emptiness asked)", rename2("d1", "d2", EXCHANGE));
	EXPECT_TRUE("swapped", access("d1/other/inner", F_OK) == 0 && access("d2/file", F_OK) == 0);

	section("renameat2: RENAME_WHITEOUT");
	put("w", "w");
	put("w3", "w3");
	EXPECT_ERR("NOREPLACE|WHITEOUT onto an existing file", rename2("w", "w3", NOREPLACE | WHITEOUT), EEXIST);
	EXPECT_OK("on ext2 (the ext4 driver makes one)", rename2("w", "w2", WHITEOUT));
	EXPECT_STR("the file moved", text_of("w2"), "w");
	struct stat st;
	EXPECT_OK("the old name is there", lstat("w", &st));
	EXPECT_TRUE("a character device 0:0 without permissions",
		    S_ISCHR(st.st_mode) && st.st_rdev == 0 && (st.st_mode & 07777) == 0);
	EXPECT_ERR("which opens as no device", open("w", O_RDONLY), ENXIO);
	EXPECT_OK("and is unlinked as a file", unlink("w"));
	EXPECT_OK("over an existing file", rename2("w2", "w3", WHITEOUT));
	EXPECT_STR("which it replaced", text_of("w3"), "w");
	EXPECT_OK("a whiteout left there too", lstat("w2", &st));
}

int main(void)
{
	abi_init();
	errors();
	allocating();
	punching();
	renaming();
	return abi_done();
}
