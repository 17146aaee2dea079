/*
 * Loop block devices: /dev/loop-control (LOOP_CTL_GET_FREE, ADD, REMOVE),
 * /dev/loopN (what it is, a free device's answers), binding a file
 * (LOOP_SET_FD, LOOP_CONFIGURE) with bad descriptors and bad pointers,
 * the device's size and sector size, its bytes being the file's (at an
 * offset, up to a size limit), read-only devices, status and block size,
 * detaching, and a device held by a process that is killed.
 */
#include "abi.h"

#include <stdint.h>

#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

/* <linux/loop.h>, which musl's compiler does not see. */
#define LOOP_SET_FD 0x4C00
#define LOOP_CLR_FD 0x4C01
#define LOOP_SET_STATUS 0x4C02
#define LOOP_GET_STATUS 0x4C03
#define LOOP_SET_STATUS64 0x4C04
#define LOOP_GET_STATUS64 0x4C05
#define LOOP_CHANGE_FD 0x4C06
#define LOOP_SET_CAPACITY 0x4C07
#define LOOP_SET_BLOCK_SIZE 0x4C09
#define LOOP_CONFIGURE 0x4C0A
#define LOOP_CTL_ADD 0x4C80
#define LOOP_CTL_REMOVE 0x4C81
#define LOOP_CTL_GET_FREE 0x4C82
#define LO_FLAGS_READ_ONLY 1
#define LO_FLAGS_AUTOCLEAR 4

struct loop_info {
	int lo_number;
	unsigned long lo_device;
	unsigned long lo_inode;
	unsigned long lo_rdevice;
	int lo_offset;
	int lo_encrypt_type;
	int lo_encrypt_key_size;
	int lo_flags;
	char lo_name[64];
	unsigned char lo_encrypt_key[32];
	unsigned long lo_init[2];
	char reserved[4];
};

struct loop_info64 {
	uint64_t lo_device;
	uint64_t lo_inode;
	uint64_t lo_rdevice;
	uint64_t lo_offset;
	uint64_t lo_sizelimit;
	uint32_t lo_number;
	uint32_t lo_encrypt_type;
	uint32_t lo_encrypt_key_size;
	uint32_t lo_flags;
	uint8_t lo_file_name[64];
	uint8_t lo_crypt_name[64];
	uint8_t lo_encrypt_key[32];
	uint64_t lo_init[2];
};

struct loop_config {
	uint32_t fd;
	uint32_t block_size;
	struct loop_info64 info;
	uint64_t reserved[8];
};

static char path[64];

static int open_dev(int n, int flags)
{
	snprintf(path, sizeof path, "/dev/loop%d", n);
	return open(path, flags);
}

static long dev_size(int fd)
{
	unsigned long long size = 12345;
	if (ioctl(fd, BLKGETSIZE64, &size))
		return -1;
	return (long)size;
}

static void fill(char *buf, int len, char c)
{
	memset(buf, c, len);
}

int main(void)
{
	abi_init();
	static char buf[8192], back[8192];
	struct stat st;
	struct loop_info64 li;
	struct loop_info old;

	section("/dev/loop-control");
	EXPECT_OK("stat", stat("/dev/loop-control", &st));
	EXPECT_TRUE("a character device", S_ISCHR(st.st_mode));
	EXPECT_EQ("major", major(st.st_rdev), 10);
	EXPECT_EQ("minor", minor(st.st_rdev), 237);
	int ctl = open("/dev/loop-control", O_RDWR);
	EXPECT_TRUE("opens", ctl >= 0);
	int n = ioctl(ctl, LOOP_CTL_GET_FREE);
	EXPECT_TRUE("LOOP_CTL_GET_FREE gives a number", n >= 0);
	EXPECT_EQ("asked again: the same (still free)", ioctl(ctl, LOOP_CTL_GET_FREE), n);
	EXPECT_ERR("LOOP_CTL_ADD of an existing device", ioctl(ctl, LOOP_CTL_ADD, n), EEXIST);
	EXPECT_ERR("LOOP_CTL_REMOVE of a negative number", ioctl(ctl, LOOP_CTL_REMOVE, -1), EINVAL);
	EXPECT_ERR("a loop ioctl on the control file", ioctl(ctl, LOOP_CLR_FD, 0), ENOSYS);
	EXPECT_ERR("a block ioctl on the control file", ioctl(ctl, BLKGETSIZE64, buf), ENOSYS);

	section("a free device");
	snprintf(path, sizeof path, "/dev/loop%d", n);
	EXPECT_OK("stat", stat(path, &st));
	EXPECT_TRUE("a block device", S_ISBLK(st.st_mode));
	EXPECT_EQ("major", major(st.st_rdev), 7);
	EXPECT_TRUE("minor is its number", (int)minor(st.st_rdev) == n);
	EXPECT_EQ("st_size", st.st_size, 0);
	int dev = open_dev(n, O_RDWR);
	EXPECT_TRUE("opens read-write", dev >= 0);
	EXPECT_EQ("BLKGETSIZE64", dev_size(dev), 0);
	EXPECT_EQ("read: nothing", read(dev, buf, 512), 0);
	EXPECT_ERR("write: no room", write(dev, buf, 512), ENOSPC);
	EXPECT_ERR("LOOP_GET_STATUS64", ioctl(dev, LOOP_GET_STATUS64, &li), ENXIO);
	EXPECT_ERR("LOOP_GET_STATUS", ioctl(dev, LOOP_GET_STATUS, &old), ENXIO);
	EXPECT_ERR("LOOP_SET_STATUS64", ioctl(dev, LOOP_SET_STATUS64, &li), ENXIO);
	EXPECT_ERR("LOOP_CLR_FD", ioctl(dev, LOOP_CLR_FD, 0), ENXIO);
	EXPECT_ERR("LOOP_SET_CAPACITY", ioctl(dev, LOOP_SET_CAPACITY, 0), ENXIO);
	EXPECT_ERR("LOOP_CHANGE_FD", ioctl(dev, LOOP_CHANGE_FD, 0), ENXIO);
	EXPECT_ERR("LOOP_CTL_GET_FREE on a device", ioctl(dev, LOOP_CTL_GET_FREE), EINVAL);
	EXPECT_ERR("LOOP_CTL_REMOVE while open", ioctl(ctl, LOOP_CTL_REMOVE, n), EBUSY);

	section("binding: bad descriptors");
	EXPECT_ERR("LOOP_SET_FD with fd 9999", ioctl(dev, LOOP_SET_FD, 9999), EBADF);
	EXPECT_ERR("LOOP_SET_FD with fd -1", ioctl(dev, LOOP_SET_FD, -1), EBADF);
	int closed = open("/dev/null", O_RDONLY);
	close(closed);
	EXPECT_ERR("LOOP_SET_FD with a closed fd", ioctl(dev, LOOP_SET_FD, closed), EBADF);
	int p[2];
	pipe(p);
	EXPECT_ERR("LOOP_SET_FD with a pipe", ioctl(dev, LOOP_SET_FD, p[0]), EINVAL);
	close(p[0]);
	close(p[1]);
	int null = open("/dev/null", O_RDWR);
	EXPECT_ERR("LOOP_SET_FD with /dev/null", ioctl(dev, LOOP_SET_FD, null), EINVAL);
	close(null);
	mkdir("d", 0755);
	int dir = open("d", O_RDONLY | O_DIRECTORY);
	EXPECT_ERR("LOOP_SET_FD with a directory", ioctl(dev, LOOP_SET_FD, dir), EINVAL);
	close(dir);
	EXPECT_ERR("LOOP_CONFIGURE from a bad pointer", ioctl(dev, LOOP_CONFIGURE, BAD_PTR), EFAULT);
	EXPECT_EQ("still free: LOOP_CTL_GET_FREE", ioctl(ctl, LOOP_CTL_GET_FREE), n);

	section("bound to a file");
	int img = open("img", O_RDWR | O_CREAT | O_TRUNC, 0644);
	EXPECT_OK("ftruncate to 1 MiB and 100 bytes", ftruncate(img, (1 << 20) + 100));
	fill(buf, 4096, 'F');
	EXPECT_EQ("the file's own bytes at 8192", pwrite(img, buf, 4096, 8192), 4096);
	EXPECT_OK("LOOP_SET_FD", ioctl(dev, LOOP_SET_FD, img));
	EXPECT_ERR("LOOP_SET_FD again", ioctl(dev, LOOP_SET_FD, img), EBUSY);
	EXPECT_TRUE("LOOP_CTL_GET_FREE now gives another",
		    ioctl(ctl, LOOP_CTL_GET_FREE) != n);
	EXPECT_ERR("LOOP_CTL_REMOVE while bound", ioctl(ctl, LOOP_CTL_REMOVE, n), EBUSY);
	EXPECT_EQ("BLKGETSIZE64: whole sectors", dev_size(dev), 1 << 20);
	unsigned long sectors = 0;
	EXPECT_OK("BLKGETSIZE", ioctl(dev, BLKGETSIZE, &sectors));
	EXPECT_EQ("in sectors", sectors, 2048);
	int ssz = 0;
	EXPECT_OK("BLKSSZGET", ioctl(dev, BLKSSZGET, &ssz));
	EXPECT_EQ("512", ssz, 512);
	EXPECT_ERR("BLKGETSIZE64 into a bad pointer", ioctl(dev, BLKGETSIZE64, BAD_PTR), EFAULT);
	memset(&li, 0xff, sizeof li);
	EXPECT_OK("LOOP_GET_STATUS64", ioctl(dev, LOOP_GET_STATUS64, &li));
	struct stat ist;
	fstat(img, &ist);
	EXPECT_TRUE("lo_number", (int)li.lo_number == n);
	EXPECT_TRUE("lo_inode is the file's", li.lo_inode == ist.st_ino);
	EXPECT_TRUE("lo_device is the file's", li.lo_device == ist.st_dev);
	EXPECT_EQ("lo_offset", li.lo_offset, 0);
	EXPECT_EQ("lo_sizelimit", li.lo_sizelimit, 0);
	EXPECT_EQ("lo_flags", li.lo_flags, 0);
	EXPECT_EQ("lo_file_name empty", li.lo_file_name[0], 0);
	EXPECT_ERR("LOOP_GET_STATUS64 to NULL", ioctl(dev, LOOP_GET_STATUS64, NULL), EINVAL);
	EXPECT_ERR("LOOP_GET_STATUS64 to a bad pointer", ioctl(dev, LOOP_GET_STATUS64, BAD_PTR), EFAULT);
	EXPECT_ERR("LOOP_SET_STATUS64 from a bad pointer", ioctl(dev, LOOP_SET_STATUS64, BAD_PTR), EFAULT);
	EXPECT_OK("LOOP_GET_STATUS (old)", ioctl(dev, LOOP_GET_STATUS, &old));
	EXPECT_TRUE("its lo_number", old.lo_number == n);
	EXPECT_TRUE("its lo_inode", old.lo_inode == ist.st_ino);

	section("the device's bytes are the file's");
	EXPECT_EQ("read at 8192 through the device", pread(dev, back, 4096, 8192), 4096);
	EXPECT_TRUE("the file's bytes", memcmp(back, buf, 4096) == 0);
	fill(buf, 4096, 'D');
	EXPECT_EQ("write at 4096 through the device", pwrite(dev, buf, 4096, 4096), 4096);
	EXPECT_OK("fsync of the device", fsync(dev));
	EXPECT_EQ("read back from the file", pread(img, back, 4096, 4096), 4096);
	EXPECT_TRUE("the device's bytes", memcmp(back, buf, 4096) == 0);
	EXPECT_EQ("lseek SEEK_END: the device's size", lseek(dev, 0, SEEK_END), 1 << 20);
	EXPECT_EQ("read at the end", read(dev, back, 512), 0);
	EXPECT_ERR("write at the end", write(dev, buf, 512), ENOSPC);
	EXPECT_EQ("read across the end: what is left", pread(dev, back, 4096, (1 << 20) - 512), 512);
	EXPECT_EQ("write across the end: what fits", pwrite(dev, buf, 4096, (1 << 20) - 1024), 1024);
	EXPECT_ERR("read into a bad pointer", pread(dev, BAD_PTR, 512, 0), EFAULT);

	section("status");
	memset(&li, 0, sizeof li);
	li.lo_offset = 4096;
	li.lo_sizelimit = 8192 + 100;
	li.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_READ_ONLY;
	strcpy((char *)li.lo_file_name, "img");
	EXPECT_OK("LOOP_SET_STATUS64: offset, size limit, autoclear", ioctl(dev, LOOP_SET_STATUS64, &li));
	EXPECT_EQ("BLKGETSIZE64: the limit in sectors", dev_size(dev), 8192);
	memset(&li, 0, sizeof li);
	ioctl(dev, LOOP_GET_STATUS64, &li);
	EXPECT_EQ("lo_offset", li.lo_offset, 4096);
	EXPECT_EQ("lo_sizelimit", li.lo_sizelimit, 8192 + 100);
	EXPECT_EQ("lo_flags: autoclear only (read-only is not settable)", li.lo_flags, LO_FLAGS_AUTOCLEAR);
	EXPECT_STR("lo_file_name", (char *)li.lo_file_name, "img");
	EXPECT_EQ("read at 0: the file's bytes at 4096", pread(dev, back, 4096, 0), 4096);
	EXPECT_TRUE("they are", memcmp(back, buf, 4096) == 0);
	EXPECT_EQ("read at 4096: the file's at 8192", pread(dev, back, 10, 4096), 10);
	EXPECT_EQ("'F'", back[0], 'F');
	li.lo_flags = 0;
	EXPECT_OK("LOOP_SET_STATUS64 clears autoclear", ioctl(dev, LOOP_SET_STATUS64, &li));
	ioctl(dev, LOOP_GET_STATUS64, &li);
	EXPECT_EQ("lo_flags", li.lo_flags, 0);
	li.lo_encrypt_type = 1;
	EXPECT_ERR("a cipher", ioctl(dev, LOOP_SET_STATUS64, &li), EINVAL);
	EXPECT_OK("LOOP_GET_STATUS (old)", ioctl(dev, LOOP_GET_STATUS, &old));
	EXPECT_EQ("its lo_offset", old.lo_offset, 4096);
	EXPECT_STR("its lo_name", old.lo_name, "img");
	EXPECT_ERR("LOOP_SET_BLOCK_SIZE 1000", ioctl(dev, LOOP_SET_BLOCK_SIZE, 1000), EINVAL);
	EXPECT_ERR("LOOP_SET_BLOCK_SIZE 8192", ioctl(dev, LOOP_SET_BLOCK_SIZE, 8192), EINVAL);
	EXPECT_OK("LOOP_SET_BLOCK_SIZE 4096", ioctl(dev, LOOP_SET_BLOCK_SIZE, 4096));
	EXPECT_OK("BLKSSZGET", ioctl(dev, BLKSSZGET, &ssz));
	EXPECT_EQ("4096", ssz, 4096);
	EXPECT_OK("LOOP_SET_BLOCK_SIZE 512", ioctl(dev, LOOP_SET_BLOCK_SIZE, 512));
	long ra = 0;
	EXPECT_OK("BLKRASET 1024", ioctl(dev, BLKRASET, 1024));
	EXPECT_OK("BLKRAGET", ioctl(dev, BLKRAGET, &ra));
	EXPECT_EQ("1024", ra, 1024);
	li.lo_encrypt_type = 0;
	li.lo_offset = 0;
	li.lo_sizelimit = 0;
	EXPECT_OK("back to the whole file", ioctl(dev, LOOP_SET_STATUS64, &li));
	EXPECT_EQ("BLKGETSIZE64", dev_size(dev), 1 << 20);

	section("detaching");
	EXPECT_OK("LOOP_CLR_FD", ioctl(dev, LOOP_CLR_FD, 0));
	EXPECT_ERR("LOOP_GET_STATUS64", ioctl(dev, LOOP_GET_STATUS64, &li), ENXIO);
	EXPECT_ERR("LOOP_CLR_FD again", ioctl(dev, LOOP_CLR_FD, 0), ENXIO);
	EXPECT_EQ("BLKGETSIZE64", dev_size(dev), 0);
	EXPECT_EQ("free again", ioctl(ctl, LOOP_CTL_GET_FREE), n);

	section("read-only");
	int rimg = open("img", O_RDONLY);
	EXPECT_OK("LOOP_SET_FD with a file open read-only", ioctl(dev, LOOP_SET_FD, rimg));
	ioctl(dev, LOOP_GET_STATUS64, &li);
	EXPECT_EQ("lo_flags: read-only", li.lo_flags, LO_FLAGS_READ_ONLY);
	int ro = 0;
	EXPECT_OK("BLKROGET", ioctl(dev, BLKROGET, &ro));
	EXPECT_EQ("1", ro, 1);
	EXPECT_ERR("write", pwrite(dev, buf, 512, 0), EPERM);
	EXPECT_EQ("read", pread(dev, back, 512, 4096), 512);
	EXPECT_OK("LOOP_CHANGE_FD to a file as big", ioctl(dev, LOOP_CHANGE_FD, img));
	int small = open("small", O_RDWR | O_CREAT | O_TRUNC, 0644);
	ftruncate(small, 4096);
	EXPECT_ERR("LOOP_CHANGE_FD to a smaller file", ioctl(dev, LOOP_CHANGE_FD, small), EINVAL);
	EXPECT_OK("LOOP_CLR_FD", ioctl(dev, LOOP_CLR_FD, 0));
	close(rimg);
	int rdev = open_dev(n, O_RDONLY);
	EXPECT_OK("LOOP_SET_FD on a device open read-only", ioctl(rdev, LOOP_SET_FD, img));
	ioctl(rdev, LOOP_GET_STATUS64, &li);
	EXPECT_EQ("lo_flags: read-only", li.lo_flags, LO_FLAGS_READ_ONLY);
	EXPECT_ERR("write through the read-write descriptor", pwrite(dev, buf, 512, 0), EPERM);
	EXPECT_OK("LOOP_CLR_FD while open twice", ioctl(rdev, LOOP_CLR_FD, 0));
	ioctl(dev, LOOP_GET_STATUS64, &li);
	EXPECT_EQ("detached at the last close: autoclear for now", li.lo_flags,
		  LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR);
	close(rdev);
	EXPECT_OK("still bound while a descriptor is open", ioctl(dev, LOOP_GET_STATUS64, &li));
	close(dev);
	dev = open_dev(n, O_RDWR);
	EXPECT_ERR("after the last close: free", ioctl(dev, LOOP_GET_STATUS64, &li), ENXIO);

	section("LOOP_CONFIGURE");
	struct loop_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.fd = img;
	cfg.block_size = 1000;
	EXPECT_ERR("a bad block size", ioctl(dev, LOOP_CONFIGURE, &cfg), EINVAL);
	cfg.block_size = 4096;
	cfg.info.lo_flags = LO_FLAGS_READ_ONLY;
	cfg.info.lo_sizelimit = 65536;
	strcpy((char *)cfg.info.lo_file_name, "configured");
	EXPECT_OK("block size 4096, read-only, 64 KiB", ioctl(dev, LOOP_CONFIGURE, &cfg));
	EXPECT_EQ("BLKGETSIZE64", dev_size(dev), 65536);
	EXPECT_OK("BLKSSZGET", ioctl(dev, BLKSSZGET, &ssz));
	EXPECT_EQ("4096", ssz, 4096);
	ioctl(dev, LOOP_GET_STATUS64, &li);
	EXPECT_EQ("lo_flags", li.lo_flags, LO_FLAGS_READ_ONLY);
	EXPECT_STR("lo_file_name", (char *)li.lo_file_name, "configured");
	EXPECT_ERR("again", ioctl(dev, LOOP_CONFIGURE, &cfg), EBUSY);
	EXPECT_OK("LOOP_CLR_FD", ioctl(dev, LOOP_CLR_FD, 0));
	cfg.fd = 9999;
	EXPECT_ERR("with fd 9999", ioctl(dev, LOOP_CONFIGURE, &cfg), EBADF);

	section("a process killed holding a device");
	pid_t c = fork();
	if (c == 0) {
		int d = open_dev(n, O_RDWR);
		ioctl(d, LOOP_SET_FD, img);
		write(1, "", 0);
		pause();
		_exit(0);
	}
	int bound = 0;
	for (int i = 0; i < 1000 && !bound; i++) {
		bound = ioctl(dev, LOOP_GET_STATUS64, &li) == 0;
		if (!bound)
			usleep(2000);
	}
	EXPECT_TRUE("the child bound it", bound);
	kill(c, SIGKILL);
	int status;
	waitpid(c, &status, 0);
	EXPECT_STATUS("the child", status, "killed by SIGKILL");
	EXPECT_OK("the binding outlives it", ioctl(dev, LOOP_GET_STATUS64, &li));
	li.lo_flags = LO_FLAGS_AUTOCLEAR;
	ioctl(dev, LOOP_SET_STATUS64, &li);
	c = fork();
	if (c == 0) {
		int d = open_dev(n, O_RDONLY);
		(void)d;
		close(dev);
		pause();
		_exit(0);
	}
	usleep(100000);
	close(dev);
	kill(c, SIGKILL);
	waitpid(c, &status, 0);
	dev = open_dev(n, O_RDWR);
	EXPECT_ERR("autoclear: free once the killed child's descriptor went",
		   ioctl(dev, LOOP_GET_STATUS64, &li), ENXIO);
	close(dev);
	close(img);
	close(small);
	close(ctl);
	return abi_done();
}
