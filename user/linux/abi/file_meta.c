/*
 * File attributes: umask, chmod/fchmod/fchmodat, chown/fchown/lchown/
 * fchownat (and the set-id bits a chown clears), utimensat, truncate and
 * ftruncate, fsync and fdatasync, and the permission checks a process that
 * is not root meets (open, access, faccessat, directories' search and write
 * bits, the sticky bit).
 */
#include "abi.h"

#include <sys/stat.h>
#include <time.h>

static unsigned mode_of(const char *name)
{
	struct stat st;
	return lstat(name, &st) == 0 ? st.st_mode & 07777 : 0xffff;
}

static void make(const char *name, int mode)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, mode);
	SETUP(fd);
	SETUP(write(fd, "0123456789", 10));
	close(fd);
}

static long size_of(const char *name)
{
	struct stat st;
	return stat(name, &st) == 0 ? (long)st.st_size : -1;
}

static int as_user(void *arg)
{
	(void)arg;
	setgid(1000);
	setuid(1000);
	EXPECT_ERR("open a 0600 root file for reading", open("private", O_RDONLY), EACCES);
	EXPECT_ERR("open a 0644 root file for writing", open("public", O_WRONLY), EACCES);
	int fd = open("public", O_RDONLY);
	EXPECT_TRUE("for reading: fine", fd >= 0);
	close(fd);
	EXPECT_ERR("O_NOATIME on a file it does not own", open("public", O_RDONLY | O_NOATIME), EPERM);
	EXPECT_ERR("access W_OK", access("public", W_OK), EACCES);
	EXPECT_OK("access R_OK", access("public", R_OK));
	EXPECT_ERR("access X_OK of a file without x", access("public", X_OK), EACCES);
	EXPECT_ERR("create in a 0755 root directory", open("new", O_WRONLY | O_CREAT, 0644), EACCES);
	EXPECT_ERR("open inside a 0700 directory", open("closed/inner", O_RDONLY), EACCES);
	EXPECT_ERR("stat inside it", access("closed/inner", F_OK), EACCES);
	EXPECT_ERR("chmod of a root file", chmod("public", 0777), EPERM);
	EXPECT_ERR("chown of a root file", chown("public", 1000, 1000), EPERM);
	EXPECT_OK("create in the sticky 1777 directory", close(open("sticky/mine", O_WRONLY | O_CREAT, 0644)));
	EXPECT_ERR("unlink root's file there", unlink("sticky/roots"), EPERM);
	EXPECT_OK("unlink its own", unlink("sticky/mine"));
	EXPECT_OK("utimensat(NULL) of a file it can write", utimensat(AT_FDCWD, "shared", NULL, 0));
	struct timespec t[2] = { { 5, 0 }, { 5, 0 } };
	EXPECT_ERR("utimensat with times of a file it does not own", utimensat(AT_FDCWD, "shared", t, 0), EPERM);
	EXPECT_ERR("truncate of a root file", truncate("public", 0), EACCES);
	SETUP(chdir("home"));
	fd = open("mine", O_WRONLY | O_CREAT, 0600);
	EXPECT_TRUE("create in a folder of its own", fd >= 0);
	close(fd);
	EXPECT_OK("O_NOATIME on its own file", close(open("mine", O_RDONLY | O_NOATIME)));
	EXPECT_ERR("chown its file to another user", chown("mine", 0, -1), EPERM);
	EXPECT_ERR("chgrp to a group it is not in", chown("mine", -1, 0), EPERM);
	EXPECT_OK("chgrp to its own group", chown("mine", -1, 1000));
	EXPECT_OK("chown to itself (no change)", chown("mine", 1000, -1));
	EXPECT_OK("chmod 02755 of its file in its group", chmod("mine", 02755));
	EXPECT_EQ("mode", mode_of("mine"), 02755);
	/* Not in the file's group: the set-group-id bit is dropped, silently. */
	EXPECT_OK("chmod 02755 of its file in root's group", chmod("theirs", 02755));
	EXPECT_EQ("mode", mode_of("theirs"), 0755);
	EXPECT_OK("write to it (mode 0755)", close(open("theirs", O_WRONLY)));
	chmod("theirs", 06755);
	fd = open("theirs", O_WRONLY);
	write(fd, "x", 1);
	close(fd);
	/* A write by a process without privilege clears set-user-id. */
	EXPECT_EQ("mode after a write", mode_of("theirs"), 0755);
	return 0;
}

int main(void)
{
	abi_init();

	section("umask");
	EXPECT_EQ("umask(077) returns the old mask", umask(077), 022);
	make("m077", 0666);
	EXPECT_EQ("a file created 0666 under umask 077", mode_of("m077"), 0600);
	SETUP(mkdir("d077", 0777));
	EXPECT_EQ("a directory created 0777", mode_of("d077"), 0700);
	EXPECT_EQ("umask(0)", umask(0), 077);
	make("m0", 0777);
	EXPECT_EQ("a file created 0777 under umask 0", mode_of("m0"), 0777);
	EXPECT_EQ("umask keeps only 0777", umask(0177777), 0);
	EXPECT_EQ("reads back", umask(022), 0777);

	section("chmod");
	make("f", 0644);
	EXPECT_OK("chmod 0750", chmod("f", 0750));
	EXPECT_EQ("mode", mode_of("f"), 0750);
	EXPECT_OK("chmod with type bits in the argument", chmod("f", 0100640));
	EXPECT_EQ("only the permission bits count", mode_of("f"), 0640);
	EXPECT_OK("chmod 07777", chmod("f", 07777));
	EXPECT_EQ("mode", mode_of("f"), 07777);
	int fd = open("f", O_RDONLY);
	EXPECT_OK("fchmod on a read-only descriptor", fchmod(fd, 0604));
	EXPECT_EQ("mode", mode_of("f"), 0604);
	close(fd);
	EXPECT_OK("fchmodat", fchmodat(AT_FDCWD, "f", 0644, 0));
	SETUP(symlink("f", "l"));
	EXPECT_OK("chmod through a symlink changes the target", chmod("l", 0600));
	EXPECT_EQ("target", mode_of("f"), 0600);
	EXPECT_EQ("the link itself", mode_of("l"), 0777);
	EXPECT_ERR("chmod of a missing file", chmod("missing", 0644), ENOENT);
	EXPECT_ERR("fchmod of a bad descriptor", fchmod(99, 0644), EBADF);

	section("chown");
	EXPECT_OK("chown 1000:2000", chown("f", 1000, 2000));
	struct stat st;
	stat("f", &st);
	EXPECT_TRUE("owner and group", st.st_uid == 1000 && st.st_gid == 2000);
	EXPECT_OK("chown -1:3000 changes the group only", chown("f", -1, 3000));
	stat("f", &st);
	EXPECT_TRUE("owner kept", st.st_uid == 1000 && st.st_gid == 3000);
	EXPECT_OK("lchown of the symlink", lchown("l", 5, 6));
	lstat("l", &st);
	EXPECT_TRUE("the link's owner changed", st.st_uid == 5 && st.st_gid == 6);
	stat("f", &st);
	EXPECT_TRUE("not the file's", st.st_uid == 1000);
	fd = open("f", O_RDONLY);
	EXPECT_OK("fchown", fchown(fd, 0, 0));
	close(fd);
	EXPECT_OK("fchownat AT_SYMLINK_NOFOLLOW", fchownat(AT_FDCWD, "l", 0, 0, AT_SYMLINK_NOFOLLOW));
	chmod("f", 06755);
	EXPECT_OK("chown of a set-id executable by root", chown("f", 1, 1));
	/* Linux clears set-user-id and set-group-id even when root chowns. */
	EXPECT_EQ("its mode after", mode_of("f"), 0755);
	chmod("f", 06644);
	chown("f", 2, 2);
	EXPECT_EQ("set-gid without group execute is not a set-gid program: kept", mode_of("f"), 02644);
	chown("f", 0, 0);
	EXPECT_ERR("chown of a missing file", chown("missing", 0, 0), ENOENT);

	section("utimensat");
	struct timespec t[2] = { { 1000000000, 123456789 }, { 1500000000, 5 } };
	EXPECT_OK("set both times", utimensat(AT_FDCWD, "f", t, 0));
	stat("f", &st);
	EXPECT_EQ("atime seconds", st.st_atim.tv_sec, 1000000000);
	EXPECT_EQ("atime nanoseconds", st.st_atim.tv_nsec, 123456789);
	EXPECT_EQ("mtime seconds", st.st_mtim.tv_sec, 1500000000);
	EXPECT_EQ("mtime nanoseconds", st.st_mtim.tv_nsec, 5);
	struct timespec omit[2] = { { 0, UTIME_OMIT }, { 7, 0 } };
	EXPECT_OK("UTIME_OMIT for atime", utimensat(AT_FDCWD, "f", omit, 0));
	stat("f", &st);
	EXPECT_TRUE("atime kept, mtime set", st.st_atim.tv_sec == 1000000000 && st.st_mtim.tv_sec == 7);
	struct timespec before;
	clock_gettime(CLOCK_REALTIME, &before);
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
	EXPECT_OK("UTIME_NOW for atime", utimensat(AT_FDCWD, "f", now, 0));
	stat("f", &st);
	EXPECT_TRUE("atime is now, mtime kept", st.st_atim.tv_sec >= before.tv_sec && st.st_mtim.tv_sec == 7);
	EXPECT_TRUE("ctime moved too", st.st_ctim.tv_sec >= before.tv_sec);
	EXPECT_OK("times NULL: both now", utimensat(AT_FDCWD, "f", NULL, 0));
	stat("f", &st);
	EXPECT_TRUE("mtime is now", st.st_mtim.tv_sec >= before.tv_sec);
	EXPECT_OK("AT_SYMLINK_NOFOLLOW sets the link's times", utimensat(AT_FDCWD, "l", t, AT_SYMLINK_NOFOLLOW));
	lstat("l", &st);
	EXPECT_EQ("the link's mtime", st.st_mtim.tv_sec, 1500000000);
	struct timespec bad[2] = { { 0, 1000000000 }, { 0, 0 } };
	EXPECT_ERR("nanoseconds of 10^9", utimensat(AT_FDCWD, "f", bad, 0), EINVAL);
	bad[0].tv_nsec = -1;
	EXPECT_ERR("negative nanoseconds", utimensat(AT_FDCWD, "f", bad, 0), EINVAL);
	EXPECT_ERR("an unknown flag", utimensat(AT_FDCWD, "f", t, 0x1), EINVAL);
	EXPECT_ERR("a missing file", utimensat(AT_FDCWD, "missing", t, 0), ENOENT);
	EXPECT_ERR("times from a bad pointer", syscall(SYS_utimensat, AT_FDCWD, "f", BAD_PTR, 0), EFAULT);
	fd = open("f", O_RDONLY);
	EXPECT_OK("utimensat(fd, NULL path)", syscall(SYS_utimensat, fd, NULL, t, 0));
	close(fd);
	struct timespec negative[2] = { { -1, 0 }, { -100, 0 } };
	EXPECT_OK("times before 1970", utimensat(AT_FDCWD, "f", negative, 0));
	stat("f", &st);
	EXPECT_EQ("mtime -100 is stored", st.st_mtim.tv_sec, -100);

	section("truncate");
	make("t", 0644);
	EXPECT_OK("truncate to 4", truncate("t", 4));
	EXPECT_EQ("size", size_of("t"), 4);
	EXPECT_OK("truncate to 100000", truncate("t", 100000));
	EXPECT_EQ("size", size_of("t"), 100000);
	fd = open("t", O_RDONLY);
	char buf[16];
	pread(fd, buf, 8, 0);
	EXPECT_TRUE("the old bytes, then zeros", memcmp(buf, "0123\0\0\0\0", 8) == 0);
	/* ftruncate wants a descriptor open for writing, and says EINVAL. */
	EXPECT_ERR("ftruncate of a read-only descriptor", ftruncate(fd, 0), EINVAL);
	close(fd);
	fd = open("t", O_RDWR);
	EXPECT_OK("ftruncate to 2", ftruncate(fd, 2));
	EXPECT_EQ("the offset is not moved", lseek(fd, 0, SEEK_CUR), 0);
	EXPECT_ERR("ftruncate to a negative length", ftruncate(fd, -1), EINVAL);
	close(fd);
	EXPECT_EQ("size", size_of("t"), 2);
	EXPECT_ERR("truncate of a directory", truncate(".", 0), EISDIR);
	EXPECT_ERR("truncate of a missing file", truncate("missing", 0), ENOENT);
	int p[2];
	SETUP(pipe(p));
	EXPECT_ERR("ftruncate of a pipe", ftruncate(p[1], 0), EINVAL);
	EXPECT_ERR("ftruncate of a bad descriptor", ftruncate(99, 0), EBADF);

	section("fsync and fdatasync");
	fd = open("t", O_RDWR);
	write(fd, "synced", 6);
	EXPECT_OK("fsync", fsync(fd));
	EXPECT_OK("fdatasync", fdatasync(fd));
	close(fd);
	fd = open("t", O_RDONLY);
	EXPECT_OK("fsync of a read-only descriptor", fsync(fd));
	close(fd);
	fd = open(".", O_RDONLY | O_DIRECTORY);
	EXPECT_OK("fsync of a directory", fsync(fd));
	close(fd);
	EXPECT_ERR("fsync of a pipe", fsync(p[0]), EINVAL);
	EXPECT_ERR("fsync of a bad descriptor", fsync(99), EBADF);
	fd = open("/dev/null", O_WRONLY);
	EXPECT_ERR("fsync of /dev/null", fsync(fd), EINVAL);
	close(fd);
	close(p[0]);
	close(p[1]);

	section("permissions for another user");
	make("private", 0600);
	make("public", 0644);
	make("shared", 0666);
	SETUP(chmod("shared", 0666));
	SETUP(mkdir("closed", 0700));
	make("closed/inner", 0644);
	SETUP(mkdir("sticky", 01777));
	SETUP(chmod("sticky", 01777));
	make("sticky/roots", 0666);
	SETUP(chmod(".", 0755));
	SETUP(mkdir("home", 0755));
	SETUP(chown("home", 1000, 1000));
	make("home/theirs", 0644);
	SETUP(chown("home/theirs", 1000, 0));
	EXPECT_STATUS("as uid 1000", in_child(as_user, NULL), "exited 0");
	SETUP(chmod("private", 0));
	EXPECT_OK("root reads a 0000 file", close(open("private", O_RDONLY)));
	EXPECT_ERR("root cannot execute a file without any x bit", access("private", X_OK), EACCES);
	chmod("private", 0100);
	EXPECT_OK("but can when any x bit is set", access("private", X_OK));
	EXPECT_ERR("access with bad mode bits", access("private", 0100), EINVAL);
	EXPECT_OK("faccessat AT_EACCESS", faccessat(AT_FDCWD, "public", R_OK, AT_EACCESS));
	EXPECT_ERR("access of a missing file", access("missing", F_OK), ENOENT);
	return abi_done();
}
