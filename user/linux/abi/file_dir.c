/*
 * Directories: mkdir, rmdir, getdents64 (entries sorted before printing:
 * their order is the file system's business), chdir, fchdir and getcwd
 * (the raw call, which returns the length), and the errors.
 */
#include "abi.h"

#include <dirent.h>

struct entry {
	char name[64];
	unsigned char type;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static const char *type_name(unsigned char t)
{
	switch (t) {
	case DT_REG: return "reg";
	case DT_DIR: return "dir";
	case DT_LNK: return "lnk";
	case DT_FIFO: return "fifo";
	case DT_CHR: return "chr";
	case DT_UNKNOWN: return "unknown";
	default: return "other";
	}
}

/* All entries of a directory through getdents64 with a buffer of `size`. */
static int list(const char *path, size_t size, struct entry *out, int max, int *calls)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -1;
	static char buf[65536];
	int n = 0;
	*calls = 0;
	for (;;) {
		long got = syscall(SYS_getdents64, fd, buf, size);
		(*calls)++;
		if (got <= 0)
			break;
		for (long off = 0; off < got;) {
			struct dirent *d = (struct dirent *)(buf + off);
			if (n < max) {
				snprintf(out[n].name, sizeof out[n].name, "%.*s", (int)sizeof out[n].name - 1, d->d_name);
				out[n].type = d->d_type;
			}
			n++;
			off += d->d_reclen;
		}
	}
	close(fd);
	if (n <= max)
		qsort(out, n, sizeof *out, by_name);
	return n;
}

static void show_list(const char *path)
{
	struct entry e[64];
	int calls;
	int n = list(path, 65536, e, 64, &calls);
	char line[1024] = "";
	for (int i = 0; i < n && i < 64; i++) {
		size_t len = strlen(line);
		if (snprintf(line + len, sizeof line - len, "%s%s(%s)", i ? " " : "", e[i].name, type_name(e[i].type)) >=
		    (int)(sizeof line - len))
			break;
	}
	say("%s: %s", path, line);
}

static void make(const char *name)
{
	int fd = open(name, O_WRONLY | O_CREAT, 0644);
	SETUP(fd);
	close(fd);
}

int main(void)
{
	abi_init();

	section("mkdir and getdents64");
	EXPECT_OK("mkdir d", mkdir("d", 0755));
	show_list("d");
	make("d/file");
	EXPECT_OK("mkdir d/sub", mkdir("d/sub", 0755));
	SETUP(symlink("file", "d/link"));
	SETUP(mkfifo("d/fifo", 0644));
	show_list("d");
	for (int i = 0; i < 300; i++) {
		char name[32];
		snprintf(name, sizeof name, "d/many/%03d", i);
		if (i == 0)
			SETUP(mkdir("d/many", 0755));
		make(name);
	}
	struct entry e[400];
	int calls;
	int n = list("d/many", 65536, e, 400, &calls);
	EXPECT_EQ("300 files and . and ..", n, 302);
	int in_order = 1;
	for (int i = 2; i < n; i++) {
		char want[16];
		snprintf(want, sizeof want, "%03d", i - 2);
		in_order &= strcmp(e[i].name, want) == 0;
	}
	EXPECT_TRUE("every name once", in_order && strcmp(e[0].name, ".") == 0 && strcmp(e[1].name, "..") == 0);
	n = list("d/many", 128, e, 400, &calls);
	EXPECT_EQ("the same through a 128-byte buffer", n, 302);
	EXPECT_TRUE("in many calls", calls > 50);
	int fd = open("d", O_RDONLY | O_DIRECTORY);
	char small[16];
	EXPECT_ERR("a buffer too small for one entry", syscall(SYS_getdents64, fd, small, sizeof small), EINVAL);
	EXPECT_ERR("into a bad buffer", syscall(SYS_getdents64, fd, BAD_PTR, 4096), EFAULT);
	close(fd);
	fd = open("d/file", O_RDONLY);
	static char buf[4096];
	EXPECT_ERR("getdents64 of a file", syscall(SYS_getdents64, fd, buf, sizeof buf), ENOTDIR);
	close(fd);
	EXPECT_ERR("getdents64 of a bad descriptor", syscall(SYS_getdents64, 99, buf, sizeof buf), EBADF);
	fd = open("d", O_RDONLY | O_DIRECTORY);
	long first = syscall(SYS_getdents64, fd, buf, sizeof buf);
	EXPECT_TRUE("a read of the whole directory", first > 0);
	EXPECT_EQ("then end of directory", syscall(SYS_getdents64, fd, buf, sizeof buf), 0);
	EXPECT_EQ("lseek to 0 rewinds", lseek(fd, 0, SEEK_SET), 0);
	EXPECT_TRUE("the same bytes again", syscall(SYS_getdents64, fd, buf, sizeof buf) == first);
	close(fd);
	/* An entry removed while the directory is open for reading. */
	fd = open("d", O_RDONLY | O_DIRECTORY);
	SETUP(rmdir("d/sub"));
	SETUP(unlink("d/fifo"));
	n = 0;
	for (long got; (got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;)
		for (long off = 0; off < got; off += ((struct dirent *)(buf + off))->d_reclen)
			n++;
	EXPECT_EQ("removed entries are not listed", n, 5);
	close(fd);

	section("mkdir errors");
	EXPECT_ERR("mkdir of an existing name", mkdir("d", 0755), EEXIST);
	EXPECT_ERR("mkdir of an existing file", mkdir("d/file", 0755), EEXIST);
	EXPECT_ERR("mkdir in a missing folder", mkdir("missing/x", 0755), ENOENT);
	EXPECT_ERR("mkdir through a file", mkdir("d/file/x", 0755), ENOTDIR);
	SETUP(symlink("nowhere", "dl"));
	EXPECT_ERR("mkdir of a dangling symlink's name", mkdir("dl", 0755), EEXIST);
	EXPECT_OK("mkdir with a trailing slash", mkdir("t/", 0755));
	EXPECT_ERR("mkdir of \"\"", mkdir("", 0755), ENOENT);
	EXPECT_OK("mkdirat", mkdirat(AT_FDCWD, "d/at", 0755));

	section("rmdir");
	EXPECT_ERR("rmdir of a non-empty directory", rmdir("d"), ENOTEMPTY);
	EXPECT_ERR("rmdir of a file", rmdir("d/file"), ENOTDIR);
	SETUP(symlink("d/at", "ld"));
	EXPECT_ERR("rmdir of a symlink to a directory", rmdir("ld"), ENOTDIR);
	EXPECT_ERR("rmdir of \".\"", rmdir("d/at/."), EINVAL);
	EXPECT_ERR("rmdir of \"..\"", rmdir("d/at/.."), ENOTEMPTY);
	EXPECT_ERR("rmdir of a missing name", rmdir("nothing"), ENOENT);
	EXPECT_OK("rmdir with a trailing slash", rmdir("d/at/"));
	EXPECT_OK("unlinkat AT_REMOVEDIR", unlinkat(AT_FDCWD, "t", AT_REMOVEDIR));
	EXPECT_ERR("unlinkat AT_REMOVEDIR of a file", unlinkat(AT_FDCWD, "d/file", AT_REMOVEDIR), ENOTDIR);
	EXPECT_ERR("unlinkat with an unknown flag", unlinkat(AT_FDCWD, "d/file", 0x1), EINVAL);

	section("chdir and getcwd");
	char cwd[4096], start[4096];
	long len = syscall(SYS_getcwd, start, sizeof start);
	EXPECT_TRUE("raw getcwd returns the length with the NUL", len == (long)strlen(start) + 1);
	EXPECT_OK("chdir d", chdir("d"));
	syscall(SYS_getcwd, cwd, sizeof cwd);
	EXPECT_TRUE("getcwd ends in /d", strlen(cwd) == strlen(start) + 2 && strcmp(cwd + strlen(start), "/d") == 0);
	EXPECT_OK("chdir ..", chdir(".."));
	syscall(SYS_getcwd, cwd, sizeof cwd);
	EXPECT_TRUE("back where we started", strcmp(cwd, start) == 0);
	EXPECT_ERR("chdir to a file", chdir("d/file"), ENOTDIR);
	EXPECT_ERR("chdir to a missing folder", chdir("missing"), ENOENT);
	EXPECT_ERR("getcwd into too small a buffer", syscall(SYS_getcwd, cwd, 2), ERANGE);
	EXPECT_ERR("getcwd of size 0", syscall(SYS_getcwd, cwd, 0), ERANGE);
	EXPECT_ERR("getcwd into a bad buffer", syscall(SYS_getcwd, BAD_PTR, sizeof cwd), EFAULT);
	fd = open("d", O_RDONLY | O_DIRECTORY);
	EXPECT_OK("fchdir", fchdir(fd));
	syscall(SYS_getcwd, cwd, sizeof cwd);
	EXPECT_TRUE("getcwd after fchdir ends in /d", strcmp(cwd + strlen(start), "/d") == 0);
	close(fd);
	fd = open("file", O_RDONLY | O_CREAT, 0644);
	chdir("..");
	EXPECT_ERR("fchdir to a file", fchdir(fd), ENOTDIR);
	EXPECT_ERR("fchdir to a bad descriptor", fchdir(99), EBADF);
	close(fd);
	SETUP(mkdir("gone", 0755));
	SETUP(chdir("gone"));
	SETUP(rmdir("../gone"));
	/* The removed folder is still the working directory, but has no name. */
	EXPECT_ERR("getcwd in a removed directory", syscall(SYS_getcwd, cwd, sizeof cwd), ENOENT);
	EXPECT_ERR("creating a file in it", open("x", O_WRONLY | O_CREAT, 0644), ENOENT);
	fd = open(".", O_RDONLY | O_DIRECTORY);
	EXPECT_TRUE("opening it as \".\" works", fd >= 0);
	EXPECT_ERR("getdents64 of it", syscall(SYS_getdents64, fd, buf, sizeof buf), ENOENT);
	close(fd);
	SETUP(chdir(start));
	return abi_done();
}
