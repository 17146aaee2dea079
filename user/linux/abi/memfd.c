/*
 * memfd_create and file seals: flags and names (bad bits, a bad pointer,
 * the longest name), what a memfd is (a regular file of mode 0777 with
 * no links, its /proc/self/fd link, F_GETFL, close-on-exec), its bytes
 * through read, write, ftruncate and mmap, MAP_SHARED memory shared with
 * a forked child, a reopen through /proc/self/fd; F_GET_SEALS and
 * F_ADD_SEALS: each seal refusing its change (write, pwrite, ftruncate
 * both ways, a writable shared mapping), F_SEAL_SEAL, EBUSY while a
 * writable shared mapping exists, a read-only description, bad bits,
 * files with no seals, seals shared by dup, fork and reopen.
 */
#include "abi.h"

#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SEAL 0x1
#define F_SEAL_SHRINK 0x2
#define F_SEAL_GROW 0x4
#define F_SEAL_WRITE 0x8
#endif
#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x10
#endif
#define MFD_CLOEXEC_ 1
#define MFD_ALLOW_SEALING_ 2

static long mfd(const char *name, unsigned int flags)
{
	return syscall(SYS_memfd_create, name, flags);
}

static int sealed(unsigned int flags, long size)
{
	int fd = mfd("sealed", flags);
	if (fd >= 0 && size)
		ftruncate(fd, size);
	return fd;
}

static int child_maps(void *arg)
{
	char *p = arg;
	memcpy(p, "from the child", 15);
	return 0;
}

static int child_sees_seals(void *arg)
{
	int fd = (int)(long)arg;
	return fcntl(fd, F_GET_SEALS) == F_SEAL_GROW && pwrite(fd, "x", 1, 0) == 1 ? 0 : 1;
}

int main(void)
{
	abi_init();
	section("memfd_create");
	EXPECT_ERR("unknown flag bit", mfd("x", 0x100), EINVAL);
	EXPECT_ERR("all bits", mfd("x", ~0u), EINVAL);
	EXPECT_ERR("the top bit", mfd("x", 0x80000000u), EINVAL);
	EXPECT_ERR("a huge page size without MFD_HUGETLB", mfd("x", 21u << 26), EINVAL);
	EXPECT_ERR("a bad name pointer", mfd(BAD_PTR, 0), EFAULT);
	EXPECT_ERR("a NULL name", mfd(NULL, 0), EFAULT);
	char name[300];
	memset(name, 'n', sizeof name);
	name[250] = 0;
	EXPECT_ERR("a 250-byte name", mfd(name, 0), EINVAL);
	name[249] = 0;
	int longest = mfd(name, 0);
	EXPECT_TRUE("a 249-byte name", longest >= 0);
	close(longest);
	int empty = mfd("", 0);
	EXPECT_TRUE("an empty name", empty >= 0);
	close(empty);

	int fd = mfd("abi", 0);
	EXPECT_TRUE("opens", fd >= 0);
	struct stat st;
	fstat(fd, &st);
	EXPECT_TRUE("a regular file", S_ISREG(st.st_mode));
	EXPECT_EQ("mode 0777", st.st_mode & 07777, 0777);
	EXPECT_EQ("no links", st.st_nlink, 0);
	EXPECT_EQ("empty", st.st_size, 0);
	char link[300], proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	EXPECT_STR("its /proc/self/fd link", link, "/memfd:abi (deleted)");
	EXPECT_EQ("F_GETFL", fcntl(fd, F_GETFL), O_RDWR | 0100000);
	EXPECT_EQ("not close-on-exec", fcntl(fd, F_GETFD), 0);
	int ce = mfd("ce", MFD_CLOEXEC_);
	EXPECT_EQ("MFD_CLOEXEC", fcntl(ce, F_GETFD), FD_CLOEXEC);
	close(ce);

	section("its bytes");
	EXPECT_EQ("write", write(fd, "hello memfd", 11), 11);
	char buf[64] = { 0 };
	EXPECT_EQ("pread", pread(fd, buf, sizeof buf, 0), 11);
	EXPECT_STR("reads it", buf, "hello memfd");
	EXPECT_OK("ftruncate to 8192", ftruncate(fd, 8192));
	fstat(fd, &st);
	EXPECT_EQ("its size", st.st_size, 8192);
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_TRUE("mmap MAP_SHARED", p != MAP_FAILED);
	EXPECT_TRUE("maps its bytes", p != MAP_FAILED && memcmp(p, "hello memfd", 11) == 0);
	if (p != MAP_FAILED) {
		EXPECT_STATUS("a forked child writes the mapping", in_child(child_maps, p), "exited 0");
		EXPECT_STR("the parent sees it", p, "from the child");
	}
	int again = open(proc, O_RDWR);
	EXPECT_TRUE("reopened through /proc/self/fd", again >= 0);
	struct stat st2;
	fstat(again, &st2);
	EXPECT_TRUE("the same file", st2.st_ino == st.st_ino && st2.st_dev == st.st_dev);
	close(again);
	EXPECT_EQ("F_GET_SEALS without MFD_ALLOW_SEALING", fcntl(fd, F_GET_SEALS), F_SEAL_SEAL);

	section("seals");
	int s = mfd("s", 0);
	EXPECT_EQ("without MFD_ALLOW_SEALING: F_SEAL_SEAL", fcntl(s, F_GET_SEALS), F_SEAL_SEAL);
	EXPECT_ERR("which refuses more", fcntl(s, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	close(s);
	s = sealed(MFD_ALLOW_SEALING_, 4096);
	EXPECT_EQ("with it: none", fcntl(s, F_GET_SEALS), 0);
	EXPECT_ERR("an unknown seal", fcntl(s, F_ADD_SEALS, 0x40), EINVAL);
	EXPECT_ERR("F_ADD_SEALS of a bad descriptor", fcntl(-1, F_ADD_SEALS, F_SEAL_WRITE), EBADF);
	int reg = open("regular", O_RDWR | O_CREAT, 0644);
	EXPECT_ERR("F_GET_SEALS of a regular file", fcntl(reg, F_GET_SEALS), EINVAL);
	EXPECT_ERR("F_ADD_SEALS of a regular file", fcntl(reg, F_ADD_SEALS, F_SEAL_WRITE), EINVAL);
	close(reg);
	int pfd[2];
	SETUP(pipe(pfd));
	EXPECT_ERR("F_GET_SEALS of a pipe", fcntl(pfd[0], F_GET_SEALS), EINVAL);
	close(pfd[0]);
	close(pfd[1]);

	EXPECT_OK("F_SEAL_SHRINK", fcntl(s, F_ADD_SEALS, F_SEAL_SHRINK));
	EXPECT_ERR("shrinking", ftruncate(s, 100), EPERM);
	EXPECT_OK("growing", ftruncate(s, 8192));
	EXPECT_EQ("writing", pwrite(s, "abc", 3, 10000), 3);
	close(s);

	s = sealed(MFD_ALLOW_SEALING_, 4096);
	EXPECT_OK("F_SEAL_GROW", fcntl(s, F_ADD_SEALS, F_SEAL_GROW));
	EXPECT_ERR("growing", ftruncate(s, 8192), EPERM);
	EXPECT_OK("shrinking", ftruncate(s, 2048));
	EXPECT_EQ("writing inside", pwrite(s, "abc", 3, 0), 3);
	EXPECT_ERR("writing past the end", pwrite(s, "abc", 3, 2047), EPERM);
	lseek(s, 0, SEEK_END);
	EXPECT_ERR("appending", write(s, "abc", 3), EPERM);
	EXPECT_ERR("fallocate past the end", fallocate(s, 0, 2000, 100), EPERM);
	EXPECT_OK("fallocate inside", fallocate(s, 0, 0, 1024));
	EXPECT_ERR("past the end keeping the size too", fallocate(s, FALLOC_FL_KEEP_SIZE, 2000, 100), EPERM);
	EXPECT_STATUS("a forked child sees the seals", in_child(child_sees_seals, (void *)(long)s), "exited 0");
	close(s);

	s = sealed(MFD_ALLOW_SEALING_, 4096);
	int dup_s = dup(s);
	char *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, s, 0);
	EXPECT_TRUE("a writable shared mapping", w != MAP_FAILED);
	EXPECT_ERR("F_SEAL_WRITE while it exists", fcntl(s, F_ADD_SEALS, F_SEAL_WRITE), EBUSY);
	EXPECT_EQ("no seal added", fcntl(s, F_GET_SEALS), 0);
	EXPECT_OK("other seals meanwhile", fcntl(s, F_ADD_SEALS, F_SEAL_SHRINK));
	munmap(w, 4096);
	char *r = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, s, 0);
	EXPECT_OK("F_SEAL_WRITE once it is gone", fcntl(s, F_ADD_SEALS, F_SEAL_WRITE));
	EXPECT_EQ("both seals", fcntl(dup_s, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_WRITE);
	if (r != MAP_FAILED)
		munmap(r, 4096);
	EXPECT_ERR("write", write(s, "x", 1), EPERM);
	EXPECT_ERR("pwrite", pwrite(s, "x", 1, 0), EPERM);
	EXPECT_EQ("a write of nothing", write(s, "x", 0), 0);
	EXPECT_ERR("punching a hole", fallocate(s, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 100), EPERM);
	EXPECT_EQ("read", pread(s, buf, 4, 0), 4);
	EXPECT_TRUE("mmap MAP_SHARED PROT_WRITE",
		    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, s, 0) == MAP_FAILED && errno == EPERM);
	void *ro = mmap(NULL, 4096, PROT_READ, MAP_SHARED, s, 0);
	EXPECT_TRUE("mmap MAP_SHARED PROT_READ", ro != MAP_FAILED);
	void *pw = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, s, 0);
	EXPECT_TRUE("mmap MAP_PRIVATE PROT_WRITE", pw != MAP_FAILED);
	EXPECT_OK("growing (no F_SEAL_GROW)", ftruncate(s, 8192));
	EXPECT_OK("F_SEAL_SEAL", fcntl(s, F_ADD_SEALS, F_SEAL_SEAL));
	EXPECT_ERR("no seal after it", fcntl(s, F_ADD_SEALS, F_SEAL_GROW), EPERM);
	EXPECT_ERR("not even none", fcntl(dup_s, F_ADD_SEALS, 0), EPERM);
	close(dup_s);
	close(s);

	s = sealed(MFD_ALLOW_SEALING_, 4096);
	EXPECT_OK("F_SEAL_FUTURE_WRITE", fcntl(s, F_ADD_SEALS, F_SEAL_FUTURE_WRITE));
	EXPECT_ERR("write", pwrite(s, "x", 1, 0), EPERM);
	EXPECT_TRUE("mmap MAP_SHARED PROT_WRITE",
		    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, s, 0) == MAP_FAILED && errno == EPERM);
	close(s);

	s = sealed(MFD_ALLOW_SEALING_, 4096);
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", s);
	int rd = open(proc, O_RDONLY);
	EXPECT_TRUE("a read-only reopen", rd >= 0);
	EXPECT_ERR("F_ADD_SEALS through it", fcntl(rd, F_ADD_SEALS, F_SEAL_GROW), EPERM);
	EXPECT_OK("F_ADD_SEALS through the first", fcntl(s, F_ADD_SEALS, F_SEAL_GROW));
	EXPECT_EQ("seen through the reopen", fcntl(rd, F_GET_SEALS), F_SEAL_GROW);
	close(rd);
	close(s);
	close(fd);
	return abi_done();
}
