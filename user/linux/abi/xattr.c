/*
 * Extended attributes on ext2: setxattr/getxattr/listxattr/removexattr by
 * path, by path without following a link (l*) and by descriptor (f*); the
 * flags, sizes and namespaces, what another user may do, and hostile
 * arguments (bad pointers, empty and overlong names, huge sizes, a value
 * that cannot fit in a block, descriptors that name no file).
 */
#include "abi.h"

#include <sys/statvfs.h>
#include <sys/xattr.h>

static char buf[65536 + 16];
static char big[65536 + 16];

static void make(const char *name, int mode)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, mode);
	SETUP(fd);
	close(fd);
	SETUP(chmod(name, mode));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A listxattr result as its names sorted and joined by spaces (the order
 * of the list is the file system's). */
static const char *names_of(const char *list, long n)
{
	static char out[1024];
	const char *names[64];
	int k = 0;
	for (long at = 0; at < n && k < 64; at += strlen(list + at) + 1)
		names[k++] = list + at;
	qsort(names, k, sizeof names[0], cmp_str);
	out[0] = 0;
	for (int i = 0; i < k; i++) {
		if (i)
			strcat(out, " ");
		strncat(out, names[i], sizeof out - strlen(out) - 2);
	}
	return out;
}

static const char *value_of(long n)
{
	static char out[128];
	if (n < 0)
		return "(failed)";
	snprintf(out, sizeof out, "%.*s", (int)(n < 100 ? n : 100), buf);
	return out;
}

static int as_user(void *arg)
{
	(void)arg;
	SETUP(setgid(1000));
	SETUP(setuid(1000));
	long n = getxattr("public", "user.a", buf, sizeof buf);
	EXPECT_STR("read user.a of a 0644 root file", value_of(n), "root's");
	EXPECT_ERR("set user.a of it", setxattr("public", "user.a", "x", 1, 0), EACCES);
	EXPECT_ERR("remove user.a of it", removexattr("public", "user.a"), EACCES);
	EXPECT_ERR("read trusted.t", getxattr("public", "trusted.t", buf, sizeof buf), ENODATA);
	EXPECT_ERR("set trusted.t", setxattr("public", "trusted.t", "x", 1, 0), EPERM);
	n = getxattr("public", "security.s", buf, sizeof buf);
	EXPECT_STR("read security.s (no permission check)", value_of(n), "sec");
	n = listxattr("public", buf, sizeof buf);
	EXPECT_STR("the list leaves trusted.* out", names_of(buf, n), "security.s user.a");
	EXPECT_ERR("read user.a of a 0600 root file", getxattr("private", "user.a", buf, sizeof buf), EACCES);
	n = listxattr("private", buf, sizeof buf);
	EXPECT_STR("list of it (no permission check)", names_of(buf, n), "user.a");
	EXPECT_OK("set user.a of a 0666 root file", setxattr("shared", "user.a", "mine", 4, 0));
	EXPECT_ERR("set user.x of a root sticky 01777 directory", setxattr("sticky", "user.x", "x", 1, 0), EPERM);
	EXPECT_OK("but read it", getxattr("sticky", "user.x", buf, sizeof buf));
	return 0;
}

int main(void)
{
	abi_init();
	struct statvfs sv;
	SETUP(statvfs(".", &sv));
	long bs = (long)sv.f_bsize;

	section("set and get by path");
	make("f", 0644);
	EXPECT_ERR("get from a file with none", getxattr("f", "user.a", buf, sizeof buf), ENODATA);
	EXPECT_EQ("list of a file with none", listxattr("f", buf, sizeof buf), 0);
	EXPECT_OK("setxattr user.a", setxattr("f", "user.a", "hello", 5, 0));
	EXPECT_EQ("getxattr size 0: the size", getxattr("f", "user.a", NULL, 0), 5);
	EXPECT_STR("the value", value_of(getxattr("f", "user.a", buf, sizeof buf)), "hello");
	EXPECT_EQ("a buffer of exactly the size", getxattr("f", "user.a", buf, 5), 5);
	EXPECT_ERR("a buffer one byte short", getxattr("f", "user.a", buf, 4), ERANGE);
	EXPECT_EQ("a huge size with room enough", getxattr("f", "user.a", buf, 1UL << 40), 5);
	EXPECT_ERR("XATTR_CREATE of one that exists", setxattr("f", "user.a", "x", 1, XATTR_CREATE), EEXIST);
	EXPECT_ERR("XATTR_REPLACE of one that does not", setxattr("f", "user.b", "x", 1, XATTR_REPLACE), ENODATA);
	EXPECT_ERR("both flags", setxattr("f", "user.a", "x", 1, XATTR_CREATE | XATTR_REPLACE), EEXIST);
	EXPECT_ERR("an unknown flag", setxattr("f", "user.a", "x", 1, 4), EINVAL);
	EXPECT_OK("XATTR_REPLACE of user.a", setxattr("f", "user.a", "a longer value", 14, XATTR_REPLACE));
	EXPECT_STR("the new value", value_of(getxattr("f", "user.a", buf, sizeof buf)), "a longer value");
	EXPECT_OK("XATTR_CREATE of user.b", setxattr("f", "user.b", "b", 1, XATTR_CREATE));
	EXPECT_OK("an empty value", setxattr("f", "user.empty", "", 0, 0));
	EXPECT_EQ("its size", getxattr("f", "user.empty", buf, sizeof buf), 0);
	EXPECT_OK("trusted.t", setxattr("f", "trusted.t", "\x80\xff", 2, 0));
	EXPECT_EQ("its size", getxattr("f", "trusted.t", buf, sizeof buf), 2);
	EXPECT_TRUE("its bytes", memcmp(buf, "\x80\xff", 2) == 0);
	EXPECT_OK("security.s", setxattr("f", "security.s", "sec", 3, 0));
	long n = listxattr("f", NULL, 0);
	EXPECT_EQ("listxattr size 0: the size", n, 46);
	EXPECT_EQ("listxattr into a buffer of that size", listxattr("f", buf, n), n);
	EXPECT_STR("the names", names_of(buf, n), "security.s trusted.t user.a user.b user.empty");
	EXPECT_ERR("listxattr into one byte less", listxattr("f", buf, n - 1), ERANGE);
	EXPECT_OK("removexattr user.b", removexattr("f", "user.b"));
	EXPECT_ERR("again", removexattr("f", "user.b"), ENODATA);
	EXPECT_ERR("get it", getxattr("f", "user.b", buf, sizeof buf), ENODATA);
	n = listxattr("f", buf, sizeof buf);
	EXPECT_STR("the names left", names_of(buf, n), "security.s trusted.t user.a user.empty");

	section("directories, links, FIFOs");
	SETUP(mkdir("d", 0755));
	EXPECT_OK("user.x of a directory", setxattr("d", "user.x", "dir", 3, 0));
	EXPECT_STR("read back", value_of(getxattr("d", "user.x", buf, sizeof buf)), "dir");
	SETUP(symlink("f", "l"));
	EXPECT_ERR("lsetxattr user.x of a link", lsetxattr("l", "user.x", "x", 1, 0), EPERM);
	EXPECT_ERR("lgetxattr user.x of a link", lgetxattr("l", "user.x", buf, sizeof buf), ENODATA);
	EXPECT_ERR("lremovexattr user.x of a link", lremovexattr("l", "user.x"), EPERM);
	EXPECT_OK("lsetxattr trusted.x of a link", lsetxattr("l", "trusted.x", "link", 4, 0));
	EXPECT_STR("lgetxattr", value_of(lgetxattr("l", "trusted.x", buf, sizeof buf)), "link");
	n = llistxattr("l", buf, sizeof buf);
	EXPECT_STR("llistxattr: the link's own", names_of(buf, n), "trusted.x");
	n = listxattr("l", buf, sizeof buf);
	EXPECT_STR("listxattr follows it", names_of(buf, n), "security.s trusted.t user.a user.empty");
	EXPECT_OK("setxattr through the link", setxattr("l", "user.via", "v", 1, 0));
	EXPECT_STR("lands on the file", value_of(getxattr("f", "user.via", buf, sizeof buf)), "v");
	EXPECT_ERR("the link has none such", lgetxattr("l", "user.via", buf, sizeof buf), ENODATA);
	EXPECT_OK("lremovexattr trusted.x", lremovexattr("l", "trusted.x"));
	EXPECT_EQ("the link's list is empty", llistxattr("l", buf, sizeof buf), 0);
	SETUP(mkfifo("p", 0644));
	EXPECT_ERR("user.x of a FIFO", setxattr("p", "user.x", "x", 1, 0), EPERM);
	EXPECT_ERR("get user.x of a FIFO", getxattr("p", "user.x", buf, sizeof buf), ENODATA);
	EXPECT_OK("trusted.x of a FIFO", setxattr("p", "trusted.x", "x", 1, 0));

	section("by descriptor");
	int fd = open("f", O_RDONLY);
	SETUP(fd);
	EXPECT_OK("fsetxattr on a read-only descriptor", fsetxattr(fd, "user.fd", "by fd", 5, 0));
	EXPECT_STR("fgetxattr", value_of(fgetxattr(fd, "user.fd", buf, sizeof buf)), "by fd");
	EXPECT_STR("getxattr by path sees it", value_of(getxattr("f", "user.fd", buf, sizeof buf)), "by fd");
	n = flistxattr(fd, buf, sizeof buf);
	EXPECT_STR("flistxattr", names_of(buf, n), "security.s trusted.t user.a user.empty user.fd user.via");
	EXPECT_OK("fremovexattr", fremovexattr(fd, "user.fd"));
	EXPECT_ERR("fremovexattr again", fremovexattr(fd, "user.fd"), ENODATA);
	EXPECT_ERR("XATTR_CREATE by fd", fsetxattr(fd, "user.a", "x", 1, XATTR_CREATE), EEXIST);
	int dfd = open("d", O_RDONLY | O_DIRECTORY);
	SETUP(dfd);
	EXPECT_STR("fgetxattr of a directory", value_of(fgetxattr(dfd, "user.x", buf, sizeof buf)), "dir");
	close(dfd);
	int pfd = open("f", O_PATH);
	SETUP(pfd);
	EXPECT_ERR("fgetxattr of an O_PATH descriptor", fgetxattr(pfd, "user.a", buf, sizeof buf), EBADF);
	EXPECT_ERR("fsetxattr of it", fsetxattr(pfd, "user.a", "x", 1, 0), EBADF);
	EXPECT_ERR("flistxattr of it", flistxattr(pfd, buf, sizeof buf), EBADF);
	close(pfd);
	EXPECT_ERR("fgetxattr of a closed descriptor", fgetxattr(999, "user.a", buf, sizeof buf), EBADF);
	EXPECT_ERR("fsetxattr of -1", fsetxattr(-1, "user.a", "x", 1, 0), EBADF);
	EXPECT_ERR("fremovexattr of -1", fremovexattr(-1, "user.a"), EBADF);
	int pp[2];
	SETUP(pipe(pp));
	EXPECT_ERR("fgetxattr security.x of a pipe", fgetxattr(pp[0], "security.x", buf, sizeof buf), EOPNOTSUPP);
	EXPECT_ERR("fgetxattr user.x of a pipe", fgetxattr(pp[0], "user.x", buf, sizeof buf), ENODATA);
	EXPECT_ERR("fsetxattr user.x of a pipe", fsetxattr(pp[1], "user.x", "x", 1, 0), EPERM);
	EXPECT_EQ("flistxattr of a pipe", flistxattr(pp[0], buf, sizeof buf), 0);
	close(pp[0]);
	close(pp[1]);
	EXPECT_ERR("getxattr of a /proc file", getxattr("/proc/self/status", "user.a", buf, sizeof buf),
		   EOPNOTSUPP);
	EXPECT_ERR("setxattr user.x of /dev/null", setxattr("/dev/null", "user.x", "x", 1, 0), EPERM);
	EXPECT_ERR("getxattr user.x of /dev/null", getxattr("/dev/null", "user.x", buf, sizeof buf), ENODATA);

	section("names");
	EXPECT_ERR("an empty name", setxattr("f", "", "x", 1, 0), ERANGE);
	EXPECT_ERR("get an empty name", getxattr("f", "", buf, sizeof buf), ERANGE);
	EXPECT_ERR("remove an empty name", removexattr("f", ""), ERANGE);
	memset(big, 'n', 300);
	memcpy(big, "user.", 5);
	big[256] = 0;
	EXPECT_ERR("a name of 256 bytes", setxattr("f", big, "x", 1, 0), ERANGE);
	EXPECT_ERR("get a name of 256 bytes", getxattr("f", big, buf, sizeof buf), ERANGE);
	big[255] = 0;
	EXPECT_OK("a name of 255 bytes", setxattr("f", big, "x", 1, 0));
	EXPECT_EQ("read back", getxattr("f", big, buf, sizeof buf), 1);
	EXPECT_OK("removed", removexattr("f", big));
	EXPECT_ERR("the prefix alone", setxattr("f", "user.", "x", 1, 0), EINVAL);
	EXPECT_ERR("get the prefix alone", getxattr("f", "trusted.", buf, sizeof buf), EINVAL);
	EXPECT_ERR("an unknown namespace", setxattr("f", "bogus.x", "x", 1, 0), EOPNOTSUPP);
	EXPECT_ERR("get from it", getxattr("f", "bogus.x", buf, sizeof buf), EOPNOTSUPP);
	EXPECT_ERR("no namespace", setxattr("f", "plain", "x", 1, 0), EOPNOTSUPP);
	EXPECT_ERR("system.other", setxattr("f", "system.other", "x", 1, 0), EOPNOTSUPP);
	EXPECT_ERR("the case matters", setxattr("f", "USER.x", "x", 1, 0), EOPNOTSUPP);

	section("sizes");
	memset(big, 'v', sizeof big);
	EXPECT_ERR("a value over 64 KiB", setxattr("f", "user.big", big, 65537, 0), E2BIG);
	EXPECT_ERR("a huge size", setxattr("f", "user.big", big, 1UL << 40, 0), E2BIG);
	EXPECT_ERR("64 KiB (more than a block)", setxattr("f", "user.big", big, 65536, 0), ENOSPC);
	EXPECT_ERR("a whole block (no room beside the header)", setxattr("f", "user.big", big, bs, 0), ENOSPC);
	make("g", 0644);
	EXPECT_OK("most of a block", setxattr("g", "user.big", big, bs - 128, 0));
	EXPECT_EQ("read back whole", getxattr("g", "user.big", buf, sizeof buf), bs - 128);
	EXPECT_TRUE("the same bytes", memcmp(buf, big, bs - 128) == 0);
	EXPECT_ERR("one more that does not fit", setxattr("g", "user.more", big, 100, 0), ENOSPC);
	/* A small value fits in a large inode's own bytes (ext4's place for
	 * them), leaving the block to the big one. */
	EXPECT_OK("one that does", setxattr("g", "user.more", big, 32, 0));
	EXPECT_OK("growing the big one", setxattr("g", "user.big", big, bs - 64, 0));
	EXPECT_ERR("growing it past the block", setxattr("g", "user.big", big, bs - 40, 0), ENOSPC);
	EXPECT_EQ("it is as it was", getxattr("g", "user.big", buf, sizeof buf), bs - 64);
	EXPECT_OK("shrinking it", setxattr("g", "user.big", "s", 1, 0));
	EXPECT_OK("now the other fits", setxattr("g", "user.more", big, 500, 0));
	EXPECT_EQ("its size", getxattr("g", "user.more", NULL, 0), 500);
	int i, made = 0;
	char name[32];
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof name, "user.n%03d", i);
		if (setxattr("f", name, "12345678", 8, 0) != 0)
			break;
		made++;
	}
	EXPECT_TRUE("many small ones until the block is full", made > 10 && errno == ENOSPC);
	EXPECT_EQ("all listed", (long)(listxattr("f", buf, sizeof buf) > 0), 1);
	for (i = 0; i < made; i++) {
		snprintf(name, sizeof name, "user.n%03d", i);
		removexattr("f", name);
	}
	n = listxattr("f", buf, sizeof buf);
	EXPECT_STR("removed again", names_of(buf, n), "security.s trusted.t user.a user.empty user.via");

	section("bad pointers and missing files");
	void *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(bad == MAP_FAILED ? -1 : 0);
	EXPECT_ERR("name NULL", setxattr("f", NULL, "x", 1, 0), EFAULT);
	EXPECT_ERR("name unreadable", getxattr("f", bad, buf, sizeof buf), EFAULT);
	EXPECT_ERR("remove: name unreadable", removexattr("f", bad), EFAULT);
	EXPECT_ERR("value unreadable", setxattr("f", "user.a", bad, 10, 0), EFAULT);
	EXPECT_ERR("value NULL with a size", setxattr("f", "user.a", NULL, 10, 0), EFAULT);
	EXPECT_ERR("get into an unwritable buffer", getxattr("f", "user.a", bad, 100), EFAULT);
	EXPECT_ERR("list into an unwritable buffer", listxattr("f", bad, 100), EFAULT);
	EXPECT_ERR("list into NULL with a size", listxattr("f", NULL, 100), EFAULT);
	EXPECT_STR("the value is unchanged", value_of(getxattr("f", "user.a", buf, sizeof buf)), "a longer value");
	EXPECT_ERR("path NULL", getxattr(NULL, "user.a", buf, sizeof buf), EFAULT);
	EXPECT_ERR("a missing file", getxattr("missing", "user.a", buf, sizeof buf), ENOENT);
	EXPECT_ERR("a missing file and a bad name", setxattr("missing", "", "x", 1, 0), ENOENT);
	EXPECT_ERR("an empty path", listxattr("", buf, sizeof buf), ENOENT);
	EXPECT_ERR("a file as a directory", getxattr("f/x", "user.a", buf, sizeof buf), ENOTDIR);
	EXPECT_ERR("lsetxattr of a missing file", lsetxattr("missing", "user.a", "x", 1, 0), ENOENT);

	section("another user");
	make("public", 0644);
	make("private", 0600);
	make("shared", 0666);
	SETUP(mkdir("sticky", 01777));
	SETUP(chmod("sticky", 01777));
	SETUP(chmod(".", 0755));
	SETUP(setxattr("public", "user.a", "root's", 6, 0));
	SETUP(setxattr("public", "trusted.t", "t", 1, 0));
	SETUP(setxattr("public", "security.s", "sec", 3, 0));
	SETUP(setxattr("private", "user.a", "p", 1, 0));
	SETUP(setxattr("sticky", "user.x", "s", 1, 0));
	EXPECT_STATUS("as uid 1000", in_child(as_user, NULL), "exited 0");
	EXPECT_STR("what it set", value_of(getxattr("shared", "user.a", buf, sizeof buf)), "mine");

	section("after unlink and through a new name");
	SETUP(link("f", "f2"));
	SETUP(unlink("f"));
	EXPECT_STR("the attributes follow the inode", value_of(getxattr("f2", "user.a", buf, sizeof buf)),
		   "a longer value");
	fd = open("f2", O_RDONLY);
	SETUP(fd);
	SETUP(unlink("f2"));
	EXPECT_STR("an open file with no name left", value_of(fgetxattr(fd, "user.a", buf, sizeof buf)),
		   "a longer value");
	EXPECT_OK("and set on it", fsetxattr(fd, "user.late", "x", 1, 0));
	close(fd);
	return abi_done();
}
