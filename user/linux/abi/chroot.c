/*
 * chroot(2): a process's own root directory.  Its errors in Linux's
 * order (the name is looked up first, then the directory must be
 * searchable, then the privilege is asked for) with hostile names; the
 * ways out that must stay shut: "..", absolute symbolic links, links
 * made of "..", names made under the root, chroot("/") and a nested
 * root; what Linux leaves open: a working directory outside the root
 * (getcwd says "(unreachable)", so realpath fails with ENOENT, the
 * CVE-2018-1000001 check) and a directory descriptor opened before; the
 * root inherited across fork and kept across exec.  Then bind mounts
 * (MS_BIND) of a directory and of a file and moves (MS_MOVE), with their
 * errors, and a bind seen from inside a root.
 */
#include "abi.h"

#include <grp.h>
#include <limits.h>
#include <sys/mount.h>

/* The jail's own copy of busybox, for the exec inside it. */
#define PROGRAM "jail/busybox"

static void put(const char *path, const char *text)
{
	int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	SETUP(f);
	SETUP(write(f, text, strlen(text)));
	close(f);
}

static void copy(const char *from, const char *to)
{
	int in = open(from, O_RDONLY);
	SETUP(in);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	SETUP(out);
	static char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		SETUP(write(out, buf, n) == n ? n : -1);
	SETUP(n);
	close(in);
	close(out);
}

/* getcwd as the system call answers it (no C library check). */
static const char *raw_cwd(void)
{
	static char buf[PATH_MAX];
	long r = syscall(SYS_getcwd, buf, sizeof buf);
	if (r < 0)
		return errname(errno);
	return buf;
}

static int unreachable(void)
{
	return strncmp(raw_cwd(), "(unreachable)/", 14) == 0;
}

static int errors(void *arg)
{
	(void)arg;
	static char longname[PATH_MAX + 2];
	memset(longname, 'a', PATH_MAX + 1);
	char component[300];
	memset(component, 'b', 256);
	component[256] = 0;
	EXPECT_ERR("chroot(NULL)", syscall(SYS_chroot, 0), EFAULT);
	EXPECT_ERR("chroot(bad pointer)", syscall(SYS_chroot, (char *)-4096), EFAULT);
	EXPECT_ERR("chroot(\"\")", chroot(""), ENOENT);
	EXPECT_ERR("chroot(missing)", chroot("missing"), ENOENT);
	EXPECT_ERR("chroot(missing/..)", chroot("missing/.."), ENOENT);
	EXPECT_ERR("chroot(a file)", chroot("secret"), ENOTDIR);
	EXPECT_ERR("chroot(a file/)", chroot("secret/"), ENOTDIR);
	EXPECT_ERR("chroot(a file/..)", chroot("secret/.."), ENOTDIR);
	EXPECT_ERR("chroot(a loop of links)", chroot("loop1"), ELOOP);
	EXPECT_ERR("chroot(PATH_MAX + 1 bytes)", chroot(longname), ENAMETOOLONG);
	EXPECT_ERR("chroot(a 256-byte name)", chroot(component), ENAMETOOLONG);
	EXPECT_ERR("chroot(/dev/null)", chroot("/dev/null"), ENOTDIR);
	EXPECT_STR("the file names still lead here", text_of("/secret"), "ENOENT");
	return 0;
}

static int unprivileged(void *arg)
{
	(void)arg;
	SETUP(setgroups(0, NULL));
	SETUP(setresgid(65534, 65534, 65534));
	SETUP(setresuid(65534, 65534, 65534));
	EXPECT_ERR("chroot(a searchable directory)", chroot("open"), EPERM);
	EXPECT_ERR("chroot(one it may not search)", chroot("locked"), EACCES);
	EXPECT_ERR("chroot(below one it may not search)", chroot("locked/sub"), EACCES);
	EXPECT_ERR("chroot(missing)", chroot("missing"), ENOENT);
	EXPECT_ERR("chroot(a file)", chroot("secret"), ENOTDIR);
	EXPECT_ERR("chroot(\"/\")", chroot("/"), EPERM);
	return 0;
}

/* Reads /secret in a forked child: 0 when it is the jail's. */
static int forked_reads(void *arg)
{
	(void)arg;
	return strcmp(text_of("/secret"), "inside") != 0;
}

static int inside(void *arg)
{
	(void)arg;
	struct stat a, b;
	SETUP(chdir("jail"));
	EXPECT_OK("chroot(\".\")", chroot("."));
	EXPECT_STR("getcwd", raw_cwd(), "/");
	EXPECT_STR("/secret", text_of("/secret"), "inside");
	EXPECT_STR("/../../secret", text_of("/../../secret"), "inside");
	EXPECT_STR("../../../secret", text_of("../../../secret"), "inside");
	EXPECT_STR("a link to /secret", text_of("/in/abs"), "inside");
	EXPECT_STR("a link of ../..", text_of("in/up"), "inside");
	EXPECT_STR("through a link to /", text_of("in/root/secret"), "inside");
	EXPECT_STR("through a link to ..", text_of("in/dotdot/../../secret"), "inside");
	int in = open("/in", O_RDONLY | O_DIRECTORY);
	SETUP(in);
	EXPECT_STR("openat(dir, ../../secret)", text_at(in, "../../secret"), "inside");
	EXPECT_STR("openat(dir, /secret)", text_at(in, "/secret"), "inside");
	close(in);
	SETUP(stat("/", &a));
	SETUP(stat("/..", &b));
	EXPECT_TRUE("/.. is /", a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	SETUP(chdir("/in"));
	EXPECT_STR("getcwd in /in", raw_cwd(), "/in");
	EXPECT_OK("chdir(../../../..)", chdir("../../../.."));
	EXPECT_STR("getcwd after", raw_cwd(), "/");
	EXPECT_OK("chdir(a link to /)", chdir("in/root"));
	EXPECT_STR("getcwd there", raw_cwd(), "/");

	int f = open("/../made", O_WRONLY | O_CREAT | O_EXCL, 0644);
	EXPECT_TRUE("open(/../made, O_CREAT)", f >= 0);
	close(f);
	EXPECT_OK("mkdir(/../dir)", mkdir("/../dir", 0755));
	EXPECT_OK("symlink(/secret, /dir/l)", symlink("/secret", "/dir/l"));
	EXPECT_STR("the new link", text_of("/dir/l"), "inside");
	EXPECT_OK("rename(/made, ../../made2)", rename("/made", "../../made2"));
	EXPECT_OK("link(made2, /../made3)", link("made2", "/../made3"));

	EXPECT_OK("chroot(\"/\")", chroot("/"));
	EXPECT_STR("still inside", text_of("/secret"), "inside");
	EXPECT_OK("chroot(\"..\")", chroot(".."));
	EXPECT_STR("still inside after chroot(..)", text_of("/secret"), "inside");

	EXPECT_STATUS("a forked child keeps the root", in_child(forked_reads, NULL), "exited 0");

	int p[2];
	SETUP(pipe(p));
	pid_t c = fork();
	if (c == 0) {
		dup2(p[1], 1);
		execl("/busybox", "cat", "/secret", "/../secret", (char *)NULL);
		_exit(100 + errno);
	}
	close(p[1]);
	char buf[64] = {0};
	ssize_t n, got = 0;
	while ((n = read(p[0], buf + got, sizeof buf - 1 - got)) > 0)
		got += n;
	close(p[0]);
	EXPECT_STATUS("exec of /busybox inside", wait_status(c), "exited 0");
	EXPECT_STR("the new program's /secret", buf, "insideinside");

	EXPECT_OK("chroot(in)", chroot("in"));
	EXPECT_STR("the nested root's /secret", text_of("/secret"), "ENOENT");
	EXPECT_STR("its link to /secret", text_of("/abs"), "ENOENT");
	EXPECT_TRUE("getcwd: (unreachable)", unreachable());
	EXPECT_STR("the old working directory still works", text_of("secret"), "inside");
	return 0;
}

static int cwd_outside(void *arg)
{
	(void)arg;
	char buf[PATH_MAX];
	EXPECT_OK("chroot(jail), staying outside", chroot("jail"));
	EXPECT_TRUE("getcwd (the call): (unreachable)", unreachable());
	errno = 0;
	char *r = getcwd(buf, sizeof buf);
	EXPECT_STR("getcwd (the C library)", r ? "a path" : errname(errno), "ENOENT");
	r = realpath(".", NULL);
	EXPECT_STR("realpath(\".\")", r ? "a path" : errname(errno), "ENOENT");
	EXPECT_STR("secret (from the working directory)", text_of("secret"), "outside");
	EXPECT_STR("jail/secret", text_of("jail/secret"), "inside");
	EXPECT_STR("/secret", text_of("/secret"), "inside");
	EXPECT_OK("chdir(\"/\")", chdir("/"));
	EXPECT_STR("getcwd then", raw_cwd(), "/");
	EXPECT_STR("secret then", text_of("secret"), "inside");
	return 0;
}

static int fd_outside(void *arg)
{
	(void)arg;
	int d = open(".", O_RDONLY | O_DIRECTORY);
	SETUP(d);
	SETUP(chdir("jail"));
	EXPECT_OK("chroot(\".\")", chroot("."));
	EXPECT_STR("openat(a directory opened before, secret)", text_at(d, "secret"), "outside");
	EXPECT_OK("fchdir(it)", fchdir(d));
	EXPECT_TRUE("getcwd: (unreachable)", unreachable());
	EXPECT_STR("secret", text_of("secret"), "outside");
	EXPECT_STR("/secret", text_of("/secret"), "inside");
	EXPECT_OK("chdir(\"/\")", chdir("/"));
	EXPECT_STR("getcwd", raw_cwd(), "/");
	close(d);
	return 0;
}

/* Inside the jail, what a bind below it leads to. */
static int bound_inside(void *arg)
{
	(void)arg;
	SETUP(chdir("jail"));
	SETUP(chroot("."));
	EXPECT_STR("a bind inside the root", text_of("/bound/f"), "a");
	EXPECT_STR("its source's name there", text_of("/in/a/f"), "a");
	return 0;
}

static void binds(void)
{
	struct stat a, b;
	SETUP(mkdir("a", 0755));
	SETUP(mkdir("b", 0755));
	SETUP(mkdir("a/sub", 0755));
	put("a/f", "a");
	put("b/f", "b");
	put("file1", "one");
	put("file2", "two");
	EXPECT_ERR("bind of a missing source", mount("missing", "b", NULL, MS_BIND, NULL), ENOENT);
	EXPECT_ERR("bind onto a missing target", mount("a", "missing", NULL, MS_BIND, NULL), ENOENT);
	EXPECT_ERR("bind from a NULL source", mount(NULL, "b", NULL, MS_BIND, NULL), EINVAL);
	EXPECT_ERR("bind from an empty source", mount("", "b", NULL, MS_BIND, NULL), EINVAL);
	EXPECT_ERR("bind from a bad pointer", mount((char *)-4096, "b", NULL, MS_BIND, NULL), EFAULT);
	EXPECT_ERR("bind of a directory onto a file", mount("a", "file2", NULL, MS_BIND, NULL), ENOTDIR);
	EXPECT_ERR("bind of a file onto a directory", mount("file1", "b", NULL, MS_BIND, NULL), ENOTDIR);
	EXPECT_ERR("bind through a file", mount("file1/x", "b", NULL, MS_BIND, NULL), ENOTDIR);
	EXPECT_OK("bind a onto b", mount("a", "b", NULL, MS_BIND, NULL));
	EXPECT_STR("b/f", text_of("b/f"), "a");
	SETUP(stat("a/sub", &a));
	SETUP(stat("b/sub", &b));
	EXPECT_TRUE("b/sub is a/sub", a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	put("b/new", "made");
	EXPECT_STR("made through b, seen in a", text_of("a/new"), "made");
	EXPECT_STR("b/sub/../f", text_of("b/sub/../f"), "a");
	EXPECT_ERR("move of a directory nothing is mounted on", mount("a", "open", NULL, MS_MOVE, NULL), EINVAL);
	EXPECT_OK("umount(b)", umount("b"));
	EXPECT_STR("b/f again", text_of("b/f"), "b");
	EXPECT_ERR("umount(b) again", umount("b"), EINVAL);

	EXPECT_OK("bind a file", mount("file1", "file2", NULL, MS_BIND, NULL));
	EXPECT_STR("file2", text_of("file2"), "one");
	EXPECT_OK("umount(file2)", umount("file2"));
	EXPECT_STR("file2 again", text_of("file2"), "two");

	/* A move needs a parent mount that does not propagate. */
	SETUP(mkdir("c", 0755));
	SETUP(mkdir("c/x", 0755));
	SETUP(mkdir("c/y", 0755));
	EXPECT_OK("bind c onto itself", mount("c", "c", NULL, MS_BIND, NULL));
	EXPECT_OK("make it private", mount("none", "c", NULL, MS_PRIVATE, NULL));
	EXPECT_OK("bind a onto c/x", mount("a", "c/x", NULL, MS_BIND, NULL));
	EXPECT_ERR("move c/x below itself", mount("c/x", "c/x/sub", NULL, MS_MOVE, NULL), ELOOP);
	EXPECT_ERR("move c/x onto a file", mount("c/x", "file1", NULL, MS_MOVE, NULL), EINVAL);
	EXPECT_OK("move c/x to c/y", mount("c/x", "c/y", NULL, MS_MOVE, NULL));
	EXPECT_ERR("c/x/f", stat("c/x/f", &a), ENOENT);
	EXPECT_STR("c/y/f", text_of("c/y/f"), "a");
	EXPECT_ERR("umount(c/x)", umount("c/x"), EINVAL);
	EXPECT_OK("umount(c/y)", umount("c/y"));
	EXPECT_OK("umount(c)", umount("c"));

	SETUP(mkdir("jail/bound", 0755));
	SETUP(mkdir("jail/in/a", 0755));
	put("jail/in/a/f", "a");
	EXPECT_OK("bind jail/in/a onto jail/bound", mount("jail/in/a", "jail/bound", NULL, MS_BIND, NULL));
	EXPECT_STATUS("the child", in_child(bound_inside, NULL), "exited 0");
	EXPECT_OK("umount(jail/bound)", umount("jail/bound"));
}

int main(void)
{
	abi_init();
	struct stat st;
	SETUP(mkdir("jail", 0755));
	SETUP(mkdir("jail/in", 0755));
	SETUP(mkdir("open", 0755));
	SETUP(mkdir("locked", 0700));
	SETUP(mkdir("locked/sub", 0755));
	put("secret", "outside");
	put("jail/secret", "inside");
	SETUP(symlink("/secret", "jail/in/abs"));
	SETUP(symlink("../../../../../../../../secret", "jail/in/up"));
	SETUP(symlink("/", "jail/in/root"));
	SETUP(symlink("..", "jail/in/dotdot"));
	SETUP(symlink("loop2", "loop1"));
	SETUP(symlink("loop1", "loop2"));
	copy("/bin/busybox", PROGRAM);

	section_in_child("errors", "the child", errors);
	section_in_child("without privilege", "the child", unprivileged);
	section_in_child("inside a root", "the child", inside);
	section_in_child("a working directory outside the root", "the child", cwd_outside);
	section_in_child("a directory opened before", "the child", fd_outside);

	section("what the processes in the root made");
	EXPECT_OK("jail/made2", stat("jail/made2", &st));
	EXPECT_OK("jail/made3", stat("jail/made3", &st));
	EXPECT_ERR("made2 here", stat("made2", &st), ENOENT);
	EXPECT_ERR("made3 here", stat("made3", &st), ENOENT);
	EXPECT_ERR("dir here", stat("dir", &st), ENOENT);
	EXPECT_OK("jail/dir/l", lstat("jail/dir/l", &st));
	EXPECT_STR("secret is untouched", text_of("secret"), "outside");

	section("bind mounts and moves");
	binds();
	return abi_done();
}
