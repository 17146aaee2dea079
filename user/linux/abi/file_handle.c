/*
 * Unnamed files and file handles: open with O_TMPFILE (its flag rules, the
 * directory's errors, no entry, its bytes, its /proc/self/fd link, one
 * that outlives its directory and is shared by fork), linkat of it
 * (AT_EMPTY_PATH, /proc/self/fd followed, O_EXCL refusing, a pipe, a
 * directory); name_to_handle_at and open_by_handle_at (sizes, EOVERFLOW
 * with the size needed, bad flags, pointers and descriptors, files served
 * by no disk file system, a renamed file, a symbolic link, a directory
 * for writing, forged and stale handles, a foreign mount descriptor,
 * without CAP_DAC_READ_SEARCH).
 */
#include "abi.h"

#include <dirent.h>
#include <sys/statfs.h>

#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif
#define TMPFILE_BIT 020000000

struct handle {
	unsigned int bytes;
	int type;
	unsigned char f[128];
};

static long to_handle(int dfd, const char *path, struct handle *h, int *mnt, int flags)
{
	return syscall(SYS_name_to_handle_at, dfd, path, h, mnt, flags);
}

static long by_handle(int mfd, struct handle *h, int flags)
{
	return syscall(SYS_open_by_handle_at, mfd, h, flags);
}

/* Entries of directory `path` other than . and .. */
static int entries(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static int same_file(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static int child_writes(void *arg)
{
	int fd = (int)(long)arg;
	return pwrite(fd, "child", 5, 100) == 5 ? 0 : 1;
}

static void tmpfile_open(void)
{
	section("O_TMPFILE");
	SETUP(mkdir("t", 0755));
	EXPECT_ERR("O_TMPFILE read-only", open("t", O_TMPFILE | O_RDONLY, 0600), EINVAL);
	EXPECT_ERR("O_TMPFILE with O_CREAT", open("t", O_TMPFILE | O_CREAT | O_RDWR, 0600), EINVAL);
	EXPECT_ERR("its bit without O_DIRECTORY", open("t", TMPFILE_BIT | O_RDWR, 0600), EINVAL);
	EXPECT_ERR("in a directory not there", open("none", O_TMPFILE | O_RDWR, 0600), ENOENT);
	int reg = open("t-reg", O_WRONLY | O_CREAT, 0644);
	close(reg);
	EXPECT_ERR("in a regular file", open("t-reg", O_TMPFILE | O_RDWR, 0600), ENOTDIR);
	EXPECT_ERR("in /proc", open("/proc", O_TMPFILE | O_RDWR, 0600), EOPNOTSUPP);

	int fd = open("t", O_TMPFILE | O_RDWR, 0640);
	EXPECT_TRUE("O_TMPFILE | O_RDWR opens", fd >= 0);
	struct stat st;
	fstat(fd, &st);
	EXPECT_TRUE("a regular file", S_ISREG(st.st_mode));
	EXPECT_EQ("no links", st.st_nlink, 0);
	EXPECT_EQ("its permissions", st.st_mode & 07777, 0640);
	EXPECT_EQ("no entry in its directory", entries("t"), 0);
	static char big[20000];
	for (int i = 0; i < (int)sizeof big; i++)
		big[i] = 'a' + i % 26;
	EXPECT_EQ("write", write(fd, big, sizeof big), sizeof big);
	static char back[20000];
	EXPECT_EQ("pread", pread(fd, back, sizeof back, 0), sizeof back);
	EXPECT_TRUE("reads what was written", memcmp(big, back, sizeof big) == 0);
	fstat(fd, &st);
	EXPECT_EQ("its size", st.st_size, sizeof big);
	char link[256], proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	EXPECT_TRUE("its /proc/self/fd link ends in (deleted)", n > 10 && strcmp(link + n - 10, " (deleted)") == 0);
	EXPECT_TRUE("... and names it #inode", strstr(link, "/t/#") != NULL);
	EXPECT_STATUS("a forked child writes it", in_child(child_writes, (void *)(long)fd), "exited 0");
	char five[6] = { 0 };
	pread(fd, five, 5, 100);
	EXPECT_STR("the parent reads that", five, "child");
	memcpy(big + 100, "child", 5);

	int wo = open("t", O_TMPFILE | O_WRONLY, 0600);
	EXPECT_TRUE("O_TMPFILE | O_WRONLY opens", wo >= 0);
	EXPECT_ERR("which is not readable", read(wo, back, 1), EBADF);
	close(wo);

	/* Its directory may go; the file stays. */
	SETUP(mkdir("gone", 0755));
	int g = open("gone", O_TMPFILE | O_RDWR, 0600);
	int gd = open("gone", O_RDONLY | O_DIRECTORY);
	SETUP(rmdir("gone"));
	EXPECT_EQ("writes after its directory went", pwrite(g, "still", 5, 0), 5);
	char s[6] = { 0 };
	pread(g, s, 5, 0);
	EXPECT_STR("and reads", s, "still");
	/* Linux's errno here depends on its version (ENOENT, EPERM). */
	EXPECT_TRUE("none in a directory removed while open", openat(gd, ".", O_TMPFILE | O_RDWR, 0600) == -1);
	close(gd);
	close(g);

	section("linkat of an unnamed file");
	EXPECT_OK("linkat AT_EMPTY_PATH", linkat(fd, "", AT_FDCWD, "t/named", AT_EMPTY_PATH));
	EXPECT_TRUE("the name is the file", same_file(fd, "t/named"));
	fstat(fd, &st);
	EXPECT_EQ("one link now", st.st_nlink, 1);
	EXPECT_EQ("one entry", entries("t"), 1);
	int again = open("t/named", O_RDONLY);
	EXPECT_EQ("opened by name, the bytes", pread(again, back, sizeof back, 0), sizeof back);
	EXPECT_TRUE("the same bytes", memcmp(big, back, sizeof big) == 0);
	close(again);
	EXPECT_OK("a second name", linkat(fd, "", AT_FDCWD, "t/second", AT_EMPTY_PATH));
	fstat(fd, &st);
	EXPECT_EQ("two links", st.st_nlink, 2);
	EXPECT_ERR("over an existing name", linkat(fd, "", AT_FDCWD, "t/named", AT_EMPTY_PATH), EEXIST);
	close(fd);
	struct stat named;
	EXPECT_OK("the named file outlives its close", stat("t/named", &named));
	EXPECT_EQ("with its size", named.st_size, sizeof big);

	int p = open("t", O_TMPFILE | O_RDWR, 0600);
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", p);
	EXPECT_ERR("linkat of /proc/self/fd without following", linkat(AT_FDCWD, proc, AT_FDCWD, "t/p0", 0), EXDEV);
	EXPECT_OK("linkat of /proc/self/fd AT_SYMLINK_FOLLOW", linkat(AT_FDCWD, proc, AT_FDCWD, "t/p", AT_SYMLINK_FOLLOW));
	EXPECT_TRUE("names it", same_file(p, "t/p"));
	close(p);

	int x = open("t", O_TMPFILE | O_RDWR | O_EXCL, 0600);
	EXPECT_TRUE("O_TMPFILE | O_EXCL opens", x >= 0);
	EXPECT_ERR("which linkat cannot name", linkat(x, "", AT_FDCWD, "t/x", AT_EMPTY_PATH), ENOENT);
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", x);
	EXPECT_ERR("nor through /proc/self/fd", linkat(AT_FDCWD, proc, AT_FDCWD, "t/x", AT_SYMLINK_FOLLOW), ENOENT);
	EXPECT_ERR("no name made", access("t/x", F_OK), ENOENT);
	close(x);

	int pipefd[2];
	SETUP(pipe(pipefd));
	EXPECT_ERR("linkat AT_EMPTY_PATH of a pipe", linkat(pipefd[0], "", AT_FDCWD, "t/pipe", AT_EMPTY_PATH), EXDEV);
	int dir = open("t", O_RDONLY | O_DIRECTORY);
	EXPECT_ERR("of a directory", linkat(dir, "", AT_FDCWD, "t/dir", AT_EMPTY_PATH), EPERM);
	EXPECT_ERR("of the working directory", linkat(AT_FDCWD, "", AT_FDCWD, "t/cwd", AT_EMPTY_PATH), EPERM);
	EXPECT_ERR("an empty path without AT_EMPTY_PATH", linkat(dir, "", AT_FDCWD, "t/e", 0), ENOENT);
	EXPECT_ERR("unknown flags", linkat(dir, "", AT_FDCWD, "t/e", 0x8000), EINVAL);
	close(dir);
	close(pipefd[0]);
	close(pipefd[1]);
}

static int unprivileged(void *arg)
{
	struct handle *h = arg;
	setuid(1000);
	EXPECT_ERR("open_by_handle_at without CAP_DAC_READ_SEARCH", by_handle(AT_FDCWD, h, O_RDONLY), EPERM);
	struct handle mine = { .bytes = 128 };
	int mnt;
	EXPECT_OK("name_to_handle_at needs no privilege", to_handle(AT_FDCWD, "h/moved", &mine, &mnt, 0));
	return 0;
}

static void handles(void)
{
	section("name_to_handle_at");
	SETUP(mkdir("h", 0755));
	int f = open("h/file", O_RDWR | O_CREAT, 0644);
	write(f, "handled", 7);
	struct handle h = { .bytes = 0 };
	int mnt = -1;
	EXPECT_ERR("no room", to_handle(AT_FDCWD, "h/file", &h, &mnt, 0), EOVERFLOW);
	EXPECT_EQ("gives the size needed", h.bytes, 8);
	EXPECT_TRUE("and the mount id", mnt != -1);
	h.bytes = 7;
	EXPECT_ERR("one byte short", to_handle(AT_FDCWD, "h/file", &h, &mnt, 0), EOVERFLOW);
	h.bytes = 129;
	EXPECT_ERR("more than MAX_HANDLE_SZ", to_handle(AT_FDCWD, "h/file", &h, &mnt, 0), EINVAL);
	h.bytes = 128;
	EXPECT_ERR("unknown flags", to_handle(AT_FDCWD, "h/file", &h, &mnt, 0x4000), EINVAL);
	EXPECT_ERR("a bad descriptor", to_handle(-1, "file", &h, &mnt, 0), EBADF);
	EXPECT_ERR("a file as directory", to_handle(f, "file", &h, &mnt, 0), ENOTDIR);
	EXPECT_ERR("an empty path without AT_EMPTY_PATH", to_handle(AT_FDCWD, "", &h, &mnt, 0), ENOENT);
	EXPECT_ERR("a bad path", to_handle(AT_FDCWD, BAD_PTR, &h, &mnt, 0), EFAULT);
	EXPECT_ERR("a bad handle", to_handle(AT_FDCWD, "h/file", BAD_PTR, &mnt, 0), EFAULT);
	EXPECT_ERR("a bad mount id", to_handle(AT_FDCWD, "h/file", &h, BAD_PTR, 0), EFAULT);
	EXPECT_ERR("a name not there", to_handle(AT_FDCWD, "h/none", &h, &mnt, 0), ENOENT);
	EXPECT_ERR("a /proc file", to_handle(AT_FDCWD, "/proc/self/status", &h, &mnt, 0), EOPNOTSUPP);
	int pipefd[2];
	SETUP(pipe(pipefd));
	EXPECT_ERR("a pipe", to_handle(pipefd[0], "", &h, &mnt, AT_EMPTY_PATH), EOPNOTSUPP);
	h.bytes = 128;
	EXPECT_OK("a file", to_handle(AT_FDCWD, "h/file", &h, &mnt, 0));
	EXPECT_EQ("its size", h.bytes, 8);
	EXPECT_EQ("its type (inode and generation)", h.type, 1);
	struct handle e = { .bytes = 128 };
	EXPECT_OK("of the descriptor (AT_EMPTY_PATH)", to_handle(f, "", &e, &mnt, AT_EMPTY_PATH));
	EXPECT_TRUE("the same handle", e.bytes == h.bytes && memcmp(e.f, h.f, h.bytes) == 0);
	int dir = open("h", O_RDONLY | O_DIRECTORY);
	struct handle r = { .bytes = 128 };
	EXPECT_OK("relative to a directory", to_handle(dir, "file", &r, &mnt, 0));
	EXPECT_TRUE("the same handle", memcmp(r.f, h.f, 8) == 0);
	SETUP(symlink("file", "h/link"));
	struct handle l = { .bytes = 128 }, lf = { .bytes = 128 };
	EXPECT_OK("a symbolic link itself", to_handle(AT_FDCWD, "h/link", &l, &mnt, 0));
	EXPECT_TRUE("is not its target", memcmp(l.f, h.f, 8) != 0);
	EXPECT_OK("followed (AT_SYMLINK_FOLLOW)", to_handle(AT_FDCWD, "h/link", &lf, &mnt, AT_SYMLINK_FOLLOW));
	EXPECT_TRUE("is its target", memcmp(lf.f, h.f, 8) == 0);
	struct handle d = { .bytes = 128 };
	EXPECT_OK("a directory", to_handle(dir, "", &d, &mnt, AT_EMPTY_PATH));

	section("open_by_handle_at");
	int o = by_handle(AT_FDCWD, &h, O_RDONLY);
	EXPECT_TRUE("opens", o >= 0);
	EXPECT_TRUE("the file", same_file(o, "h/file"));
	char buf[16] = { 0 };
	EXPECT_EQ("reads it", pread(o, buf, 7, 0), 7);
	EXPECT_STR("its bytes", buf, "handled");
	close(o);
	o = by_handle(dir, &h, O_RDWR | O_CLOEXEC);
	EXPECT_TRUE("with a directory as mount descriptor, O_RDWR", o >= 0);
	EXPECT_EQ("O_CLOEXEC", fcntl(o, F_GETFD), FD_CLOEXEC);
	EXPECT_EQ("writes it", pwrite(o, "H", 1, 0), 1);
	close(o);
	o = by_handle(f, &h, O_RDONLY);
	EXPECT_TRUE("with the file itself as mount descriptor", o >= 0);
	close(o);
	SETUP(rename("h/file", "h/moved"));
	o = by_handle(AT_FDCWD, &h, O_RDONLY);
	EXPECT_TRUE("after a rename", o >= 0 && same_file(o, "h/moved"));
	close(o);
	EXPECT_ERR("a symbolic link's, to read", by_handle(AT_FDCWD, &l, O_RDONLY), ELOOP);
	o = by_handle(AT_FDCWD, &l, O_PATH);
	EXPECT_TRUE("a symbolic link's, O_PATH", o >= 0);
	close(o);
	EXPECT_ERR("a directory's, to write", by_handle(AT_FDCWD, &d, O_RDWR), EISDIR);
	o = by_handle(AT_FDCWD, &d, O_RDONLY | O_DIRECTORY);
	EXPECT_TRUE("a directory's, to read", o >= 0);
	EXPECT_EQ("lists it", entries("h"), 2);
	close(o);

	EXPECT_ERR("a bad mount descriptor", by_handle(-1, &h, O_RDONLY), EBADF);
	EXPECT_ERR("a pipe as mount descriptor", by_handle(pipefd[0], &h, O_RDONLY), ESTALE);
	EXPECT_ERR("a bad handle pointer", by_handle(AT_FDCWD, BAD_PTR, O_RDONLY), EFAULT);
	struct handle z = { .bytes = 0, .type = 1 };
	EXPECT_ERR("a handle of no bytes", by_handle(AT_FDCWD, &z, O_RDONLY), EINVAL);
	z.bytes = 129;
	EXPECT_ERR("a handle of 129 bytes", by_handle(AT_FDCWD, &z, O_RDONLY), EINVAL);
	struct handle forged = h;
	forged.type = 0x77;
	EXPECT_ERR("an unknown type", by_handle(AT_FDCWD, &forged, O_RDONLY), ESTALE);
	forged = h;
	forged.bytes = 4;
	EXPECT_ERR("too short for its type", by_handle(AT_FDCWD, &forged, O_RDONLY), ESTALE);
	forged = h;
	unsigned int gen;
	memcpy(&gen, forged.f + 4, 4);
	gen = gen + 1 ? gen + 1 : 1;
	memcpy(forged.f + 4, &gen, 4);
	EXPECT_ERR("another generation", by_handle(AT_FDCWD, &forged, O_RDONLY), ESTALE);
	forged = h;
	unsigned int ino = 1;
	memcpy(forged.f, &ino, 4);
	EXPECT_ERR("a reserved inode", by_handle(AT_FDCWD, &forged, O_RDONLY), ESTALE);
	ino = 0xfffffff0u;
	memcpy(forged.f, &ino, 4);
	EXPECT_ERR("an inode past the last", by_handle(AT_FDCWD, &forged, O_RDONLY), ESTALE);

	/* An unnamed file has a handle too, good while it is open. */
	int t = open("h", O_TMPFILE | O_RDWR, 0600);
	struct handle th = { .bytes = 128 };
	EXPECT_OK("an unnamed file's handle", to_handle(t, "", &th, &mnt, AT_EMPTY_PATH));
	o = by_handle(AT_FDCWD, &th, O_RDONLY);
	EXPECT_TRUE("opens while it is open", o >= 0);
	close(o);

	EXPECT_STATUS("without privilege", in_child(unprivileged, &h), "exited 0");

	close(f);
	SETUP(unlink("h/moved"));
	EXPECT_ERR("a file removed", by_handle(AT_FDCWD, &h, O_RDONLY), ESTALE);
	close(t);
	close(dir);
	close(pipefd[0]);
	close(pipefd[1]);
}

int main(void)
{
	abi_init();
	tmpfile_open();
	handles();
	return abi_done();
}
