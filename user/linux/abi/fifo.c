/*
 * mknod and mknodat: FIFOs, sockets, regular and device files by name,
 * with their types and the errors (an existing name, a bad type, a
 * device file made by a user other than root, a bad pointer).
 */
#include "abi.h"

#include <sys/sysmacros.h>

#define BAD ((void *)16)

static const char *type_of(const char *path)
{
	struct stat st;
	if (stat(path, &st) == -1)
		return errname(errno);
	switch (st.st_mode & S_IFMT) {
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFREG:
		return "regular";
	case S_IFCHR:
		return "char device";
	case S_IFBLK:
		return "block device";
	default:
		return "other";
	}
}

int main(void)
{
	abi_init();
	section("mknod");
	EXPECT_OK("a FIFO", mknod("f", S_IFIFO | 0640, 0));
	EXPECT_STR("its type", type_of("f"), "fifo");
	struct stat st;
	EXPECT_OK("stat", stat("f", &st));
	EXPECT_EQ("its permissions (umask 022)", st.st_mode & 07777, 0640);
	EXPECT_EQ("size 0", st.st_size, 0);
	EXPECT_ERR("again", mknod("f", S_IFIFO | 0600, 0), EEXIST);
	EXPECT_OK("mkfifo", mkfifo("g", 0666));
	EXPECT_OK("stat", stat("g", &st));
	EXPECT_EQ("0666 less the umask", st.st_mode & 07777, 0644);
	EXPECT_OK("a socket", mknod("s", S_IFSOCK | 0600, 0));
	EXPECT_STR("its type", type_of("s"), "socket");
	EXPECT_OK("type 0: a regular file", mknod("r", 0600, 0));
	EXPECT_STR("its type", type_of("r"), "regular");
	EXPECT_OK("a character device (root)", mknod("c", S_IFCHR | 0600, makedev(1, 3)));
	EXPECT_OK("stat", stat("c", &st));
	EXPECT_STR("its type", type_of("c"), "char device");
	EXPECT_TRUE("its numbers 1, 3", major(st.st_rdev) == 1 && minor(st.st_rdev) == 3);
	EXPECT_OK("a block device (root)", mknod("b", S_IFBLK | 0600, makedev(7, 300)));
	EXPECT_OK("stat", stat("b", &st));
	EXPECT_TRUE("its numbers 7, 300", major(st.st_rdev) == 7 && minor(st.st_rdev) == 300);
	EXPECT_ERR("a directory type", mknod("d", S_IFDIR | 0700, 0), EPERM);
	EXPECT_ERR("an unknown type", mknod("x", 0170000 | 0600, 0), EINVAL);
	EXPECT_ERR("a missing folder", mknod("no/f", S_IFIFO | 0600, 0), ENOENT);
	EXPECT_ERR("under a file", mknod("r/f", S_IFIFO | 0600, 0), ENOTDIR);
	EXPECT_ERR("a bad pointer", mknod(BAD, S_IFIFO | 0600, 0), EFAULT);
	EXPECT_ERR("under /proc", mknod("/proc/f", S_IFIFO | 0600, 0), ENOENT);
	int dir = open(".", O_RDONLY | O_DIRECTORY);
	EXPECT_OK("mknodat", mknodat(dir, "fa", S_IFIFO | 0600, 0));
	EXPECT_STR("its type", type_of("fa"), "fifo");
	EXPECT_ERR("mknodat with a file as folder", mknodat(open("r", O_RDONLY), "x", S_IFIFO | 0600, 0),
		   ENOTDIR);
	EXPECT_ERR("mknodat with a bad descriptor", mknodat(99, "x", S_IFIFO | 0600, 0), EBADF);
	EXPECT_OK("unlink a FIFO", unlink("f"));
	EXPECT_STR("gone", type_of("f"), "ENOENT");

	section("another user");
	SETUP(mkdir("open", 0777));
	SETUP(chmod("open", 0777));
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) == -1 || setuid(65534) == -1)
			_exit(9);
		int bad = (mknod("open/c", S_IFCHR | 0600, makedev(1, 3)) != -1 || errno != EPERM);
		bad |= (mknod("open/f", S_IFIFO | 0600, 0) != 0) << 1;
		bad |= (mknod("nope", S_IFIFO | 0600, 0) != -1 || errno != EACCES) << 2;
		_exit(bad);
	}
	EXPECT_STATUS("a device: EPERM; a FIFO: made; in root's folder: EACCES", wait_status(pid), "exited 0");
	EXPECT_OK("stat", stat("open/f", &st));
	EXPECT_TRUE("owned by the user", st.st_uid == 65534);
	return abi_done();
}
