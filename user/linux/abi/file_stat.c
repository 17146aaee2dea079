/*
 * The stat family (stat, fstat, lstat, newfstatat with AT_SYMLINK_NOFOLLOW
 * and AT_EMPTY_PATH) and statx: modes, sizes, link counts, owners, block
 * counts on the ext2 disk (4 KiB blocks), device numbers of device files,
 * relations between the calls, and the errors. fstat of an open file after
 * each kind of change, by the same process and by another, through either
 * of two descriptors (on Tessera the kernel answers it from attributes
 * the file server keeps in the file's cache, which every change must
 * reach first).
 */
#include "abi.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

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

/* fstat of `fd` (the raw call) gives the bytes stat of `name` gives. */
static int agrees(int fd, const char *name)
{
	struct stat a, b;
	memset(&a, 0x55, sizeof a);
	memset(&b, 0xaa, sizeof b);
	if (syscall(SYS_fstat, fd, &a) != 0 || stat(name, &b) != 0)
		return 0;
	return memcmp(&a, &b, sizeof a) == 0;
}

/* fstat twice: whatever the system keeps of the attributes is there. */
static void warm(int fd)
{
	struct stat st;
	syscall(SYS_fstat, fd, &st);
	syscall(SYS_fstat, fd, &st);
}

static int changer_fd;

/* Another process changes the file through a descriptor it inherited. */
static int child_changes(void *arg)
{
	(void)arg;
	if (fchmod(changer_fd, 0600) != 0 || ftruncate(changer_fd, 10) != 0 ||
	    pwrite(changer_fd, "child", 5, 10) != 5)
		return 1;
	return 0;
}

/* Another process sees the mode its parent set (0604): exits with 0. */
static int child_mode(void *arg)
{
	struct stat st;
	(void)arg;
	if (syscall(SYS_fstat, changer_fd, &st) != 0)
		return 2;
	return (st.st_mode & 0777) == 0604 ? 0 : 1;
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

	section("fstat after changes");
	make("cf", 100);
	int w = open("cf", O_RDWR);
	int r = open("cf", O_RDONLY);
	SETUP(w);
	SETUP(r);
	struct stat sa, sb;
	syscall(SYS_fstat, r, &sa);
	EXPECT_OK("fstat again", syscall(SYS_fstat, r, &sb));
	EXPECT_TRUE("the same bytes", memcmp(&sa, &sb, sizeof sa) == 0);
	EXPECT_OK("fstat of the file's other open", syscall(SYS_fstat, w, &sb));
	EXPECT_TRUE("the same bytes", memcmp(&sa, &sb, sizeof sa) == 0);
	EXPECT_OK("fstatat(fd, \"\", AT_EMPTY_PATH)", syscall(SYS_newfstatat, r, "", &sb, AT_EMPTY_PATH));
	EXPECT_TRUE("the same bytes", memcmp(&sa, &sb, sizeof sa) == 0);
	EXPECT_TRUE("as stat of its name", agrees(r, "cf"));
	char byte;
	EXPECT_EQ("pread of a byte", pread(r, &byte, 1, 0), 1);
	EXPECT_TRUE("after a read", agrees(r, "cf"));
	warm(r);
	EXPECT_EQ("write of 3 bytes", write(w, "abc", 3), 3);
	EXPECT_TRUE("after a write", agrees(r, "cf"));
	warm(r);
	EXPECT_EQ("pwrite past the end", pwrite(w, "x", 1, 5000), 1);
	fstat(r, &sa);
	EXPECT_EQ("its size", sa.st_size, 5001);
	EXPECT_TRUE("after it", agrees(r, "cf"));
	warm(r);
	EXPECT_OK("ftruncate to 10", ftruncate(w, 10));
	fstat(r, &sa);
	EXPECT_EQ("its size", sa.st_size, 10);
	EXPECT_TRUE("after it", agrees(r, "cf"));
	warm(r);
	EXPECT_OK("fchmod 0640", fchmod(w, 0640));
	fstat(r, &sa);
	EXPECT_EQ("its mode", sa.st_mode, 0100640);
	EXPECT_TRUE("after it", agrees(r, "cf"));
	warm(r);
	EXPECT_OK("fchown 1 2", fchown(w, 1, 2));
	fstat(r, &sa);
	say("its owner: %u %u", sa.st_uid, sa.st_gid);
	EXPECT_TRUE("after it", agrees(r, "cf"));
	warm(r);
	struct timespec ts[2] = {{1000000000, 123456789}, {1500000000, 987654321}};
	EXPECT_OK("utimensat", utimensat(AT_FDCWD, "cf", ts, 0));
	fstat(r, &sa);
	say("its times: %lld.%09ld %lld.%09ld", (long long)sa.st_atim.tv_sec, sa.st_atim.tv_nsec,
	    (long long)sa.st_mtim.tv_sec, sa.st_mtim.tv_nsec);
	EXPECT_TRUE("after it", agrees(r, "cf"));
	warm(r);
	EXPECT_OK("link", link("cf", "cf2"));
	fstat(r, &sa);
	EXPECT_EQ("its links", sa.st_nlink, 2);
	EXPECT_TRUE("after it", agrees(r, "cf"));
	warm(r);
	EXPECT_OK("unlink of the link", unlink("cf2"));
	fstat(r, &sa);
	EXPECT_EQ("its links", sa.st_nlink, 1);
	EXPECT_TRUE("after it", agrees(r, "cf"));
	warm(r);
	EXPECT_OK("rename", rename("cf", "cf3"));
	EXPECT_TRUE("after it", agrees(r, "cf3"));
	warm(r);
	/* Whether or not the file system takes it: the times agree. */
	fsetxattr(w, "user.test", "v", 1, 0);
	EXPECT_TRUE("after fsetxattr", agrees(r, "cf3"));
	warm(r);
	changer_fd = w;
	EXPECT_STATUS("another process changes it", in_child(child_changes, 0), "exited 0");
	fstat(r, &sa);
	say("then: mode 0%o size %lld", sa.st_mode, (long long)sa.st_size);
	EXPECT_TRUE("after it", agrees(r, "cf3"));
	warm(r);
	changer_fd = r;
	EXPECT_OK("fchmod 0604", fchmod(w, 0604));
	EXPECT_STATUS("another process's fstat sees it", in_child(child_mode, 0), "exited 0");
	EXPECT_ERR("fstat into a bad buffer", syscall(SYS_fstat, r, BAD_PTR), EFAULT);
	EXPECT_ERR("fstatat(fd, \"\", AT_EMPTY_PATH) into a bad buffer",
		   syscall(SYS_newfstatat, r, "", BAD_PTR, AT_EMPTY_PATH), EFAULT);
	EXPECT_ERR("fstatat(fd, bad path, AT_EMPTY_PATH)", syscall(SYS_newfstatat, r, BAD_PTR, &sa, AT_EMPTY_PATH),
		   EFAULT);
	EXPECT_ERR("fstatat(fd, \"\", AT_EMPTY_PATH | an unknown flag)",
		   syscall(SYS_newfstatat, r, "", &sa, AT_EMPTY_PATH | 0x1), EINVAL);
	EXPECT_ERR("fstatat(fd, \"x\", AT_EMPTY_PATH) of a file", syscall(SYS_newfstatat, r, "x", &sa, AT_EMPTY_PATH),
		   ENOTDIR);
	close(w);
	EXPECT_TRUE("with one descriptor left", agrees(r, "cf3"));
	close(r);
	EXPECT_ERR("fstat of the closed descriptor", syscall(SYS_fstat, r, &sa), EBADF);

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
