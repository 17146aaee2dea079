/*
 * The stat family (stat, fstat, lstat, newfstatat with AT_SYMLINK_NOFOLLOW
 * and AT_EMPTY_PATH) and statx: modes, sizes, link counts, owners, block
 * counts on the ext2 disk (4 KiB blocks), device numbers of device files,
 * relations between the calls, and the errors.
 */
#include "abi.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

/* statx's structure (musl 1.2.3 has no statx). */
struct statx_ts {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t reserved;
};
struct statx_buf {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, spare0;
	uint64_t ino, size, blocks, attributes_mask;
	struct statx_ts atime, btime, ctime, mtime;
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t spare[14];
};
#define STATX_BASIC_STATS 0x7ffU
#define AT_STATX_FORCE_SYNC 0x2000
#define AT_STATX_DONT_SYNC 0x4000

static void show(const char *what, const struct stat *st)
{
	say("%s: mode 0%o nlink %lu uid %u gid %u size %lld blksize %ld blocks %lld", what, st->st_mode,
	    (unsigned long)st->st_nlink, st->st_uid, st->st_gid, (long long)st->st_size, (long)st->st_blksize,
	    (long long)st->st_blocks);
}

static int same(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_mode == b->st_mode && a->st_size == b->st_size &&
	       a->st_nlink == b->st_nlink && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void make(const char *name, long size)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	static char block[8192];
	memset(block, 'z', sizeof block);
	for (long done = 0; done < size;) {
		long n = size - done < (long)sizeof block ? size - done : (long)sizeof block;
		SETUP(write(fd, block, n));
		done += n;
	}
	close(fd);
}

int main(void)
{
	abi_init();
	struct stat st, st2;

	section("a regular file");
	make("file", 5000);
	EXPECT_OK("stat", stat("file", &st));
	show("file of 5000 bytes", &st);
	int fd = open("file", O_RDONLY);
	EXPECT_OK("fstat", fstat(fd, &st2));
	EXPECT_TRUE("fstat agrees", same(&st, &st2));
	EXPECT_OK("fstatat(fd, \"\", AT_EMPTY_PATH)", fstatat(fd, "", &st2, AT_EMPTY_PATH));
	EXPECT_TRUE("it agrees", same(&st, &st2));
	EXPECT_ERR("fstatat(fd, \"\") without AT_EMPTY_PATH", fstatat(fd, "", &st2, 0), ENOENT);
	EXPECT_OK("lstat of a file", lstat("file", &st2));
	EXPECT_TRUE("is stat", same(&st, &st2));
	close(fd);
	make("empty", 0);
	stat("empty", &st);
	show("empty file", &st);
	int sp = open("sparse", O_WRONLY | O_CREAT, 0644);
	pwrite(sp, "x", 1, 1 << 20);
	close(sp);
	stat("sparse", &st);
	/* One data block and the indirect block that points to it. */
	show("1 byte at 1 MiB", &st);
	make("big", 100000);
	stat("big", &st);
	show("100000 bytes", &st);

	section("directories");
	SETUP(mkdir("d", 0755));
	stat("d", &st);
	show("empty directory", &st);
	SETUP(mkdir("d/sub", 0700));
	stat("d", &st);
	EXPECT_EQ("its link count with a subdirectory", st.st_nlink, 3);
	stat("d/sub", &st2);
	show("mkdir with mode 0700", &st2);
	EXPECT_TRUE("same device as the file", st.st_dev == st2.st_dev);

	section("links");
	SETUP(link("file", "hard"));
	stat("file", &st);
	stat("hard", &st2);
	EXPECT_TRUE("a hard link has the same inode", st.st_ino == st2.st_ino);
	EXPECT_EQ("nlink", st.st_nlink, 2);
	SETUP(symlink("file", "sym"));
	EXPECT_OK("lstat of a symlink", lstat("sym", &st2));
	show("symlink to \"file\"", &st2);
	EXPECT_OK("stat follows it", stat("sym", &st2));
	EXPECT_TRUE("to the file", st.st_ino == st2.st_ino);
	EXPECT_OK("fstatat AT_SYMLINK_NOFOLLOW", fstatat(AT_FDCWD, "sym", &st2, AT_SYMLINK_NOFOLLOW));
	EXPECT_TRUE("is the link", S_ISLNK(st2.st_mode));
	SETUP(symlink("missing", "dangling"));
	EXPECT_ERR("stat of a dangling symlink", stat("dangling", &st2), ENOENT);
	EXPECT_OK("lstat of it", lstat("dangling", &st2));
	SETUP(symlink("loop1", "loop2"));
	SETUP(symlink("loop2", "loop1"));
	EXPECT_ERR("stat of a symlink loop", stat("loop1", &st2), ELOOP);

	section("device files and pipes");
	EXPECT_OK("stat /dev/null", stat("/dev/null", &st));
	say("/dev/null: %s major %u minor %u mode 0%o", S_ISCHR(st.st_mode) ? "character device" : "other",
	    major(st.st_rdev), minor(st.st_rdev), st.st_mode & 07777);
	stat("/dev/zero", &st);
	say("/dev/zero: major %u minor %u", major(st.st_rdev), minor(st.st_rdev));
	stat("/dev/urandom", &st);
	say("/dev/urandom: major %u minor %u", major(st.st_rdev), minor(st.st_rdev));
	stat("/dev/tty", &st);
	say("/dev/tty: major %u minor %u", major(st.st_rdev), minor(st.st_rdev));
	stat("file", &st2);
	EXPECT_EQ("a regular file's st_rdev", st2.st_rdev, 0);
	int p[2];
	SETUP(pipe(p));
	write(p[1], "abc", 3);
	EXPECT_OK("fstat of a pipe", fstat(p[0], &st));
	say("pipe: mode 0%o size %lld nlink %lu", st.st_mode, (long long)st.st_size, (unsigned long)st.st_nlink);
	fstat(p[1], &st2);
	EXPECT_TRUE("both ends are one inode", st.st_ino == st2.st_ino);
	close(p[0]);
	close(p[1]);

	section("statx");
	struct statx_buf sx;
	memset(&sx, 0xff, sizeof sx);
	EXPECT_OK("statx(file, STATX_BASIC_STATS)", syscall(SYS_statx, AT_FDCWD, "file", 0, STATX_BASIC_STATS, &sx));
	stat("file", &st);
	EXPECT_TRUE("the mask has the basic fields", (sx.mask & STATX_BASIC_STATS) == STATX_BASIC_STATS);
	EXPECT_TRUE("it agrees with stat", sx.ino == st.st_ino && sx.size == (uint64_t)st.st_size &&
						   sx.mode == st.st_mode && sx.nlink == st.st_nlink &&
						   sx.blocks == (uint64_t)st.st_blocks && sx.blksize == st.st_blksize &&
						   sx.mtime.tv_sec == st.st_mtim.tv_sec &&
						   sx.mtime.tv_nsec == st.st_mtim.tv_nsec);
	EXPECT_TRUE("device numbers agree", makedev(sx.dev_major, sx.dev_minor) == st.st_dev);
	EXPECT_OK("statx of a symlink, AT_SYMLINK_NOFOLLOW",
		  syscall(SYS_statx, AT_FDCWD, "sym", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx));
	EXPECT_TRUE("is the link", S_ISLNK(sx.mode));
	fd = open("file", O_RDONLY);
	EXPECT_OK("statx(fd, \"\", AT_EMPTY_PATH)", syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx));
	EXPECT_TRUE("is the file", sx.ino == st.st_ino);
	close(fd);
	EXPECT_OK("statx /dev/null", syscall(SYS_statx, AT_FDCWD, "/dev/null", 0, STATX_BASIC_STATS, &sx));
	say("statx /dev/null: rdev %u:%u", sx.rdev_major, sx.rdev_minor);
	EXPECT_ERR("statx with a reserved mask bit",
		   syscall(SYS_statx, AT_FDCWD, "file", 0, 0x80000000U, &sx), EINVAL);
	EXPECT_ERR("statx with both sync flags",
		   syscall(SYS_statx, AT_FDCWD, "file", AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &sx),
		   EINVAL);
	EXPECT_ERR("statx with an unknown flag", syscall(SYS_statx, AT_FDCWD, "file", 0x1, STATX_BASIC_STATS, &sx),
		   EINVAL);
	EXPECT_ERR("statx of a missing file", syscall(SYS_statx, AT_FDCWD, "missing", 0, STATX_BASIC_STATS, &sx),
		   ENOENT);
	EXPECT_ERR("statx to a bad buffer", syscall(SYS_statx, AT_FDCWD, "file", 0, STATX_BASIC_STATS, BAD_PTR),
		   EFAULT);

	section("errors");
	EXPECT_ERR("stat of a missing file", stat("missing", &st), ENOENT);
	EXPECT_ERR("stat through a file", stat("file/x", &st), ENOTDIR);
	EXPECT_ERR("stat of \"file/\"", stat("file/", &st), ENOTDIR);
	EXPECT_OK("stat of \"d/\"", stat("d/", &st));
	EXPECT_ERR("stat of a bad path", stat(BAD_PTR, &st), EFAULT);
	EXPECT_ERR("stat into a bad buffer", syscall(SYS_newfstatat, AT_FDCWD, "file", BAD_PTR, 0), EFAULT);
	EXPECT_ERR("fstat of a bad descriptor", fstat(99, &st), EBADF);
	EXPECT_ERR("fstatat with an unknown flag", fstatat(AT_FDCWD, "file", &st, 0x1), EINVAL);
	EXPECT_ERR("fstatat relative to a file", fstatat(open("file", O_RDONLY), "x", &st, 0), ENOTDIR);
	return abi_done();
}
