/*
 * Names: unlink, rename and renameat2, link, symlink, readlink, and their
 * *at forms: what each does to the names and link counts, an open file
 * that loses its last name, and the errors (Linux's EISDIR for unlink of a
 * directory, EPERM for a hard link to one, EINVAL for readlink of a file).
 */
#include "abi.h"

#include <sys/stat.h>

static void make(const char *name, const char *text)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	SETUP(write(fd, text, strlen(text)));
	close(fd);
}

static long nlink(const char *name)
{
	struct stat st;
	return lstat(name, &st) == 0 ? (long)st.st_nlink : -1;
}

static int exists(const char *name)
{
	struct stat st;
	return lstat(name, &st) == 0;
}

int main(void)
{
	abi_init();
	char buf[256];

	section("unlink");
	make("a", "alpha");
	int fd = open("a", O_RDONLY);
	EXPECT_OK("unlink an open file", unlink("a"));
	EXPECT_TRUE("its name is gone", !exists("a"));
	EXPECT_EQ("the open descriptor still reads it", read(fd, buf, 5), 5);
	struct stat st;
	fstat(fd, &st);
	EXPECT_EQ("with link count 0", st.st_nlink, 0);
	close(fd);
	EXPECT_ERR("unlink a missing name", unlink("a"), ENOENT);
	SETUP(mkdir("dir", 0755));
	EXPECT_ERR("unlink a directory", unlink("dir"), EISDIR);
	make("b", "b");
	EXPECT_ERR("unlink through a file", unlink("b/x"), ENOTDIR);
	EXPECT_ERR("unlink \"\"", unlink(""), ENOENT);
	EXPECT_ERR("unlink a bad path", unlink(BAD_PTR), EFAULT);
	int dir = open("dir", O_RDONLY | O_DIRECTORY);
	make("dir/x", "x");
	EXPECT_OK("unlinkat relative to a directory", unlinkat(dir, "x", 0));
	EXPECT_TRUE("gone", !exists("dir/x"));

	section("link");
	make("f", "file");
	EXPECT_OK("link f g", link("f", "g"));
	EXPECT_EQ("f's link count", nlink("f"), 2);
	EXPECT_STR("g reads f", text_of("g"), "file");
	EXPECT_ERR("link to an existing name", link("f", "g"), EEXIST);
	EXPECT_ERR("link of a directory", link("dir", "dir2"), EPERM);
	EXPECT_ERR("link of a missing file", link("missing", "m"), ENOENT);
	EXPECT_ERR("link into a missing folder", link("f", "missing/m"), ENOENT);
	SETUP(symlink("f", "s"));
	EXPECT_OK("link of a symlink (not followed)", link("s", "s2"));
	EXPECT_EQ("the symlink's link count", nlink("s"), 2);
	EXPECT_OK("linkat AT_SYMLINK_FOLLOW of it", linkat(AT_FDCWD, "s", dir, "followed", AT_SYMLINK_FOLLOW));
	EXPECT_EQ("f's link count now", nlink("f"), 3);
	EXPECT_ERR("linkat with an unknown flag", linkat(AT_FDCWD, "f", AT_FDCWD, "z", 0x1), EINVAL);
	unlink("g");
	EXPECT_EQ("after unlink g", nlink("f"), 2);

	section("symlink and readlink");
	EXPECT_OK("symlink to a missing target", symlink("no/such/target", "dangling"));
	EXPECT_EQ("readlink returns the length, no NUL", readlink("dangling", buf, sizeof buf), 14);
	memset(buf, '#', sizeof buf);
	EXPECT_EQ("readlink into 5 bytes: truncated", readlink("dangling", buf, 5), 5);
	EXPECT_TRUE("and not terminated", memcmp(buf, "no/su#", 6) == 0);
	EXPECT_ERR("readlink with size 0", syscall(SYS_readlink, "dangling", buf, 0), EINVAL);
	EXPECT_ERR("readlink of a file", readlink("f", buf, sizeof buf), EINVAL);
	EXPECT_ERR("readlink of a missing name", readlink("missing", buf, sizeof buf), ENOENT);
	EXPECT_ERR("readlink into a bad buffer", readlink("dangling", BAD_PTR, 10), EFAULT);
	EXPECT_ERR("symlink over an existing name", symlink("x", "f"), EEXIST);
	EXPECT_ERR("symlink with an empty target", symlink("", "empty"), ENOENT);
	static char longtarget[4200];
	memset(longtarget, 'y', 4095);
	EXPECT_OK("symlink with a 4095-byte target", symlink(longtarget, "long"));
	static char back[5000];
	EXPECT_EQ("readlink of it", readlink("long", back, sizeof back), 4095);
	memset(longtarget, 'y', 4096);
	EXPECT_ERR("a 4096-byte target", symlink(longtarget, "toolong"), ENAMETOOLONG);
	EXPECT_OK("symlinkat relative to a directory", symlinkat("../f", dir, "up"));
	EXPECT_STR("it resolves from its own directory", text_of("dir/up"), "file");
	EXPECT_EQ("readlinkat", readlinkat(dir, "up", buf, sizeof buf), 4);
	EXPECT_ERR("O_NOFOLLOW on a symlink", open("s", O_RDONLY | O_NOFOLLOW), ELOOP);
	fd = open("s", O_PATH | O_NOFOLLOW);
	EXPECT_TRUE("O_PATH|O_NOFOLLOW opens the link itself", fd >= 0);
	EXPECT_EQ("readlinkat(fd, \"\") of it", readlinkat(fd, "", buf, sizeof buf), 1);
	close(fd);
	EXPECT_STR("a dangling symlink opens as", text_of("dangling"), "ENOENT");
	fd = open("dangling", O_WRONLY | O_CREAT, 0644);
	EXPECT_TRUE("O_CREAT through a dangling symlink fails (its folder is missing)", fd < 0 && errno == ENOENT);
	SETUP(symlink("created-through-link", "tocreate"));
	fd = open("tocreate", O_WRONLY | O_CREAT, 0644);
	EXPECT_TRUE("O_CREAT through a dangling symlink creates its target", fd >= 0 && exists("created-through-link"));
	close(fd);
	EXPECT_ERR("O_CREAT|O_EXCL on a symlink", open("s", O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	SETUP(symlink("self", "self"));
	EXPECT_ERR("open of a symlink to itself", open("self", O_RDONLY), ELOOP);
	char chain[16], next[16];
	for (int i = 0; i < 45; i++) {
		snprintf(chain, sizeof chain, "c%d", i);
		snprintf(next, sizeof next, "c%d", i + 1);
		SETUP(symlink(next, chain));
	}
	make("c45", "end");
	EXPECT_STR("a chain of 40 symlinks resolves", text_of("c5"), "end");
	EXPECT_STR("a chain of 41 does not", text_of("c4"), "ELOOP");

	section("rename");
	make("r1", "one");
	EXPECT_OK("rename to a new name", rename("r1", "r2"));
	EXPECT_TRUE("old name gone, new name there", !exists("r1") && strcmp(text_of("r2"), "one") == 0);
	make("r3", "three");
	EXPECT_OK("rename over an existing file", rename("r2", "r3"));
	EXPECT_STR("it replaced the file", text_of("r3"), "one");
	SETUP(link("r3", "r4"));
	EXPECT_OK("rename between two links of one file", rename("r3", "r4"));
	EXPECT_TRUE("does nothing: both names stay", exists("r3") && exists("r4"));
	EXPECT_OK("rename a name to itself", rename("r3", "r3"));
	SETUP(mkdir("d1", 0755));
	SETUP(mkdir("d2", 0755));
	EXPECT_OK("rename a directory over an empty one", rename("d1", "d2"));
	SETUP(mkdir("d1", 0755));
	make("d2/inside", "i");
	EXPECT_ERR("over a non-empty one", rename("d1", "d2"), ENOTEMPTY);
	EXPECT_ERR("a file over a directory", rename("r3", "d1"), EISDIR);
	EXPECT_ERR("a directory over a file", rename("d1", "r3"), ENOTDIR);
	EXPECT_ERR("a directory into itself", rename("d2", "d2/sub"), EINVAL);
	EXPECT_ERR("a missing name", rename("missing", "x"), ENOENT);
	EXPECT_ERR("into a missing folder", rename("r3", "missing/x"), ENOENT);
	EXPECT_ERR("rename of \".\"", rename("d2/.", "x"), EBUSY);
	SETUP(mkdir("d2/deep", 0755));
	EXPECT_OK("move a directory to another parent", rename("d2/deep", "d1/deep"));
	EXPECT_EQ("the old parent's link count", nlink("d2"), 2);
	EXPECT_EQ("the new parent's", nlink("d1"), 3);
	EXPECT_OK("renameat between directories", renameat(AT_FDCWD, "r4", dir, "r4"));
	EXPECT_TRUE("it moved", exists("dir/r4") && !exists("r4"));
	EXPECT_ERR("renameat2 RENAME_NOREPLACE over a file",
		   syscall(SYS_renameat2, AT_FDCWD, "r3", dir, "r4", 1 /* RENAME_NOREPLACE */), EEXIST);
	EXPECT_OK("renameat2 RENAME_NOREPLACE to a free name",
		  syscall(SYS_renameat2, AT_FDCWD, "r3", AT_FDCWD, "r5", 1));
	EXPECT_ERR("renameat2 with unknown flags", syscall(SYS_renameat2, AT_FDCWD, "r5", AT_FDCWD, "r6", 0x100),
		   EINVAL);
	EXPECT_ERR("RENAME_NOREPLACE with RENAME_EXCHANGE",
		   syscall(SYS_renameat2, AT_FDCWD, "r5", AT_FDCWD, "r6", 1 | 2), EINVAL);
	EXPECT_OK("rename a symlink (not its target)", rename("s", "s3"));
	EXPECT_TRUE("the link moved, the file stayed", exists("s3") && exists("f"));
	close(dir);

	section("names relative to what is no directory");
	int file = open("f", O_RDONLY);
	EXPECT_ERR("linkat from a file descriptor", linkat(file, "x", AT_FDCWD, "x2", 0), ENOTDIR);
	EXPECT_ERR("symlinkat at a file descriptor", symlinkat("f", file, "x"), ENOTDIR);
	struct stat sb;
	EXPECT_ERR("fstatat at a file descriptor", fstatat(file, "x", &sb, 0), ENOTDIR);
	EXPECT_OK("fstatat of the file itself (AT_EMPTY_PATH)", fstatat(file, "", &sb, AT_EMPTY_PATH));
	EXPECT_ERR("fchownat with an unknown flag", fchownat(AT_FDCWD, "f", 0, 0, 9999), EINVAL);
	close(file);

	section("the working directory through a link");
	EXPECT_OK("mkdir real", mkdir("real", 0755));
	EXPECT_OK("symlink to it", symlink("real", "via"));
	char before[4096], after[4096];
	EXPECT_TRUE("getcwd", getcwd(before, sizeof before) != NULL);
	EXPECT_OK("chdir through the link", chdir("via"));
	EXPECT_TRUE("getcwd there", getcwd(after, sizeof after) != NULL);
	const char *last = strrchr(after, '/');
	EXPECT_STR("getcwd names the directory, not the link", last ? last + 1 : "", "real");
	EXPECT_OK("chdir ..", chdir(".."));
	EXPECT_TRUE("getcwd back", getcwd(after, sizeof after) != NULL && strcmp(before, after) == 0);
	EXPECT_ERR("rmdir of \".\"", rmdir("real/."), EINVAL);
	EXPECT_ERR("rmdir of \"..\"", rmdir("real/.."), ENOTEMPTY);
	EXPECT_OK("rmdir real", rmdir("real"));
	EXPECT_OK("unlink via", unlink("via"));
	return abi_done();
}
