/*
 * mount(2) and umount2(2) of an ext2 file system on a loop device: the
 * errors of bad arguments, images that hold no file system (garbage,
 * zeros), a file system made by mke2fs on the device, what a mount looks
 * like (its files' device, statfs, /proc/mounts), renames across it, a
 * busy unmount, what stays in the file after the unmount, the flags
 * nodev, noexec and nosuid (statfs, device files, programs) and a remount
 * without them, and a process killed while it mounts.
 */
#include "abi.h"

#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#define LOOP_SET_FD 0x4C00
#define LOOP_CLR_FD 0x4C01
#define LOOP_CTL_GET_FREE 0x4C82
#define EXT2_SUPER_MAGIC 0xEF53
/* statfs's f_flags (statvfs's ST_*). */
#define F_RDONLY 1
#define F_NOSUID 2
#define F_NODEV 4
#define F_NOEXEC 8
#define F_NOATIME 1024
#define F_RELATIME 4096
#define F_SHOWN (F_RDONLY | F_NOSUID | F_NODEV | F_NOEXEC | F_NOATIME | F_RELATIME)

/* execl of `path` in a child: its wait status, or 100 + errno. */
static int run_status(const char *path)
{
	pid_t c = fork();
	if (c == 0) {
		execl(path, path, (char *)NULL);
		_exit(100 + errno);
	}
	int st;
	waitpid(c, &st, 0);
	return st;
}

static char dev[64];

/* busybox's mke2fs on the device, quietly. */
static int mkfs(void)
{
	pid_t p = fork();
	if (p == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execl("/bin/busybox", "mke2fs", "-q", dev, (char *)0);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Whether /proc/mounts has a line for mount point `abs`. */
static int listed(const char *abs)
{
	static char buf[8192];
	int fd = open("/proc/mounts", O_RDONLY);
	int n = fd < 0 ? 0 : read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	char want[300];
	snprintf(want, sizeof want, "%s %s ext2 ", dev, abs);
	return strstr(buf, want) != NULL;
}

static void fill_file(int fd, int len, int zero)
{
	static char buf[65536];
	for (int i = 0; i < (int)sizeof buf; i++)
		buf[i] = zero ? 0 : (char)(i * 7 + 3);
	for (int done = 0; done < len; done += sizeof buf)
		pwrite(fd, buf, sizeof buf, done);
}

int main(void)
{
	abi_init();
	char cwd[256], mnt[300];
	getcwd(cwd, sizeof cwd);
	snprintf(mnt, sizeof mnt, "%s/mnt", cwd);
	mkdir("mnt", 0755);
	int ctl = open("/dev/loop-control", O_RDWR);
	int n = ioctl(ctl, LOOP_CTL_GET_FREE);
	snprintf(dev, sizeof dev, "/dev/loop%d", n);
	int img = open("img", O_RDWR | O_CREAT | O_TRUNC, 0644);
	fill_file(img, 4 << 20, 0);
	int loop = open(dev, O_RDWR);
	EXPECT_OK("LOOP_SET_FD on 4 MiB of zeros", ioctl(loop, LOOP_SET_FD, img));

	section("bad arguments");
	EXPECT_ERR("an unknown type", mount(dev, "mnt", "nosuchfs", 0, NULL), ENODEV);
	EXPECT_ERR("a regular file as the source", mount("img", "mnt", "ext2", 0, NULL), ENOTBLK);
	EXPECT_ERR("a missing source", mount("nothing", "mnt", "ext2", 0, NULL), ENOENT);
	EXPECT_ERR("a missing target", mount(dev, "nothing", "ext2", 0, NULL), ENOENT);
	EXPECT_ERR("the type from a bad pointer", mount(dev, "mnt", BAD_PTR, 0, NULL), EFAULT);
	EXPECT_ERR("the target from a bad pointer", mount(dev, BAD_PTR, "ext2", 0, NULL), EFAULT);
	EXPECT_ERR("a remount of what is not mounted", mount(dev, "mnt", "ext2", MS_REMOUNT, NULL), EINVAL);
	EXPECT_ERR("umount of what is not mounted", umount("mnt"), EINVAL);
	EXPECT_ERR("umount of a missing path", umount("nothing"), ENOENT);
	EXPECT_ERR("umount2 with unknown flags", umount2("mnt", 0x100), EINVAL);
	EXPECT_ERR("umount2 with MNT_EXPIRE and MNT_DETACH", umount2("mnt", MNT_EXPIRE | MNT_DETACH), EINVAL);
	pid_t c = fork();
	if (c == 0) {
		setuid(65534);
		int a = mount(dev, "mnt", "ext2", 0, NULL) == -1 && errno == EPERM;
		int b = umount("mnt") == -1 && errno == EPERM;
		_exit(a && b ? 0 : 1);
	}
	int status;
	waitpid(c, &status, 0);
	EXPECT_STATUS("without privilege: EPERM for both", status, "exited 0");

	section("images without a file system");
	EXPECT_ERR("all zeros", mount(dev, "mnt", "ext2", 0, NULL), EINVAL);
	fill_file(img, 4 << 20, 1);
	EXPECT_ERR("garbage", mount(dev, "mnt", "ext2", 0, NULL), EINVAL);
	EXPECT_TRUE("not listed", !listed(mnt));

	section("mounted");
	EXPECT_EQ("mke2fs on the device", mkfs(), 0);
	EXPECT_ERR("a target that is a file", mount(dev, "img", "ext2", 0, NULL), ENOTDIR);
	EXPECT_OK("mount", mount(dev, "mnt", "ext2", 0, NULL));
	EXPECT_TRUE("listed in /proc/mounts", listed(mnt));
	EXPECT_ERR("mounted again", mount(dev, "mnt", "ext2", 0, NULL), EBUSY);
	EXPECT_OK("a remount", mount(dev, "mnt", "ext2", MS_REMOUNT, NULL));
	struct stat st, dst;
	stat(dev, &dst);
	EXPECT_OK("stat of the mount point", stat("mnt", &st));
	EXPECT_TRUE("its device is the loop device", st.st_dev == dst.st_rdev);
	EXPECT_EQ("its inode is the root's", st.st_ino, 2);
	EXPECT_OK("lost+found is there", stat("mnt/lost+found", &st));
	struct statfs sf;
	EXPECT_OK("statfs", statfs("mnt", &sf));
	EXPECT_EQ("f_type", sf.f_type, EXT2_SUPER_MAGIC);
	int f = open("mnt/file", O_RDWR | O_CREAT, 0644);
	EXPECT_TRUE("a file made in it", f >= 0);
	EXPECT_EQ("written", write(f, "inside", 6), 6);
	char buf[16] = { 0 };
	EXPECT_EQ("read back", pread(f, buf, sizeof buf, 0), 6);
	EXPECT_STR("its bytes", buf, "inside");
	fstat(f, &st);
	EXPECT_TRUE("its device is the loop device", st.st_dev == dst.st_rdev);
	EXPECT_OK("fstatfs", fstatfs(f, &sf));
	EXPECT_EQ("f_type", sf.f_type, EXT2_SUPER_MAGIC);
	EXPECT_ERR("rename out of the mount", rename("mnt/file", "out"), EXDEV);
	EXPECT_ERR("link out of the mount", link("mnt/file", "out"), EXDEV);
	EXPECT_OK("mkdir in it", mkdir("mnt/d", 0755));
	EXPECT_OK("rename inside it", rename("mnt/d", "mnt/e"));
	EXPECT_OK("chdir into it", chdir("mnt/e"));
	EXPECT_OK("stat ../file from there", stat("../file", &st));
	EXPECT_OK("stat ../../img (out of it by ..)", stat("../../img", &st));
	chdir(cwd);
	EXPECT_ERR("umount while a file is open", umount("mnt"), EBUSY);
	close(f);
	EXPECT_OK("umount", umount("mnt"));
	EXPECT_TRUE("no longer listed", !listed(mnt));
	EXPECT_ERR("the file is not in the directory", stat("mnt/file", &st), ENOENT);
	EXPECT_ERR("umount again", umount("mnt"), EINVAL);

	section("what the file keeps");
	EXPECT_OK("mount again", mount(dev, "mnt", "ext2", MS_RDONLY, NULL));
	f = open("mnt/file", O_RDONLY);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("the file is there", read(f, buf, sizeof buf), 6);
	EXPECT_STR("with its bytes", buf, "inside");
	close(f);
	EXPECT_ERR("read-only: no new file", open("mnt/new", O_RDWR | O_CREAT, 0644), EROFS);
	EXPECT_OK("umount", umount("mnt"));

	section("nodev, noexec, nosuid");
	EXPECT_OK("mount with them", mount(dev, "mnt", "ext2", MS_NODEV | MS_NOEXEC | MS_NOSUID, NULL));
	EXPECT_OK("statfs", statfs("mnt", &sf));
	EXPECT_EQ("its flags", sf.f_flags & F_SHOWN, F_NOSUID | F_NODEV | F_NOEXEC | F_RELATIME);
	SETUP(mknod("mnt/null", S_IFCHR | 0666, makedev(1, 3)));
	EXPECT_ERR("a device file: EACCES", open("mnt/null", O_RDWR), EACCES);
	SETUP(mkfifo("mnt/fifo", 0600));
	f = open("mnt/fifo", O_RDWR);
	EXPECT_TRUE("a FIFO opens", f >= 0);
	close(f);
	f = open("mnt/script", O_WRONLY | O_CREAT, 0755);
	SETUP(write(f, "#!/bin/sh\nexit 7\n", 17));
	close(f);
	EXPECT_STATUS("a program: EACCES", run_status("mnt/script"), "exited 113");
	EXPECT_OK("a remount without them", mount(dev, "mnt", "ext2", MS_REMOUNT, NULL));
	EXPECT_OK("statfs", statfs("mnt", &sf));
	EXPECT_EQ("its flags", sf.f_flags & F_SHOWN, F_RELATIME);
	f = open("mnt/null", O_RDWR);
	EXPECT_TRUE("the device file opens", f >= 0);
	EXPECT_EQ("as /dev/null", write(f, "x", 1), 1);
	close(f);
	EXPECT_STATUS("the program runs", run_status("mnt/script"), "exited 7");
	SETUP(unlink("mnt/null"));
	SETUP(unlink("mnt/fifo"));
	SETUP(unlink("mnt/script"));
	EXPECT_OK("umount", umount("mnt"));

	section("a process killed while it mounts");
	c = fork();
	if (c == 0) {
		mount(dev, "mnt", "ext2", 0, NULL);
		pause();
		_exit(0);
	}
	usleep(1000);
	kill(c, SIGKILL);
	waitpid(c, &status, 0);
	EXPECT_STATUS("the child", status, "killed by SIGKILL");
	int r = umount("mnt");
	EXPECT_TRUE("mounted or not: umount gives 0 or EINVAL", r == 0 || errno == EINVAL);
	EXPECT_OK("the device mounts again", mount(dev, "mnt", "ext2", 0, NULL));
	EXPECT_OK("and unmounts", umount("mnt"));
	EXPECT_OK("LOOP_CLR_FD", ioctl(loop, LOOP_CLR_FD, 0));
	close(loop);
	close(img);
	close(ctl);
	return abi_done();
}
