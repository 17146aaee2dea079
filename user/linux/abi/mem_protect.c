/*
 * mprotect of whole anonymous mappings, and PROT_NONE memory: a touch is
 * SIGSEGV, a system call given its address is EFAULT (the bad pointer
 * LTP's tests make with tst_get_bad_addr), and opening it again finds its
 * contents. mprotect's own errors.
 */
#include "abi.h"

/* futex operations, as <linux/futex.h> numbers them. */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#include <sys/stat.h>
#include <time.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif

#define PAGE 4096

static void read_byte(void *p)
{
	(void)*(volatile char *)p;
}

static void write_byte(void *p)
{
	*(volatile char *)p = 1;
}

static int touch_in_child(void *p)
{
	read_byte(p);
	return 0;
}

int main(void)
{
	abi_init();
	int fd;
	SETUP(fd = open("file", O_RDWR | O_CREAT | O_TRUNC, 0644));
	SETUP(write(fd, "hello", 5));

	section("a PROT_NONE mapping");
	char *n = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_TRUE("mapped", n != MAP_FAILED);
	EXPECT_STR("reading it", fault_words(read_byte, n + 8), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_STR("writing it", fault_words(write_byte, n + 8), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_STATUS("a child touching it without a handler", in_child(touch_in_child, n), "killed by SIGSEGV");
	EXPECT_ERR("pread into it", pread(fd, n, 5, 0), EFAULT);
	EXPECT_ERR("write from it", write(fd, n, 5), EFAULT);
	EXPECT_ERR("a path in it (open)", open(n, O_RDONLY), EFAULT);
	EXPECT_ERR("a path in it (chdir)", chdir(n), EFAULT);
	EXPECT_ERR("a path in it (unlink)", unlink(n), EFAULT);
	struct stat st;
	EXPECT_ERR("a path in it (stat)", stat(n, &st), EFAULT);
	EXPECT_ERR("fstat into it", syscall(SYS_fstat, fd, n), EFAULT);
	EXPECT_ERR("clock_gettime into it", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, n), EFAULT);
	EXPECT_ERR("uname into it", syscall(SYS_uname, n), EFAULT);
	EXPECT_ERR("futex wake on it", syscall(SYS_futex, n, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	EXPECT_ERR("futex wait on it", syscall(SYS_futex, n, FUTEX_WAIT, 0, NULL, NULL, 0), EFAULT);

	section("opened, closed and opened again");
	EXPECT_OK("mprotect PROT_READ|PROT_WRITE", mprotect(n, PAGE, PROT_READ | PROT_WRITE));
	EXPECT_STR("writing it", fault_words(write_byte, n + 8), "no fault");
	EXPECT_EQ("read into it", pread(fd, n, 5, 0), 5);
	EXPECT_TRUE("the bytes", memcmp(n, "hello", 5) == 0);
	EXPECT_OK("mprotect PROT_READ", mprotect(n, PAGE, PROT_READ));
	EXPECT_STR("reading it", fault_words(read_byte, n + 1), "no fault");
	EXPECT_STR("writing it", fault_words(write_byte, n + 1), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_ERR("read into it", pread(fd, n, 5, 0), EFAULT);
	EXPECT_EQ("write from it", pwrite(fd, n, 5, 5), 5);
	EXPECT_OK("mprotect PROT_NONE", mprotect(n, PAGE, PROT_NONE));
	EXPECT_STR("reading it", fault_words(read_byte, n + 1), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_ERR("write from it", write(fd, n, 5), EFAULT);
	EXPECT_OK("mprotect PROT_READ", mprotect(n, PAGE, PROT_READ));
	EXPECT_TRUE("the contents survived", memcmp(n, "hello", 5) == 0);
	EXPECT_OK("munmap", munmap(n, PAGE));

	section("errors");
	char *a = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_ERR("an unaligned address", syscall(SYS_mprotect, a + 1, PAGE, PROT_READ), EINVAL);
	EXPECT_ERR("unknown bits", syscall(SYS_mprotect, a, PAGE, 0x40), EINVAL);
	EXPECT_OK("length 0", syscall(SYS_mprotect, a, 0, PROT_READ));
	EXPECT_OK("a length not a multiple of the page", syscall(SYS_mprotect, a, 10, PROT_READ));
	EXPECT_STR("then writing it", fault_words(write_byte, a), "SIGSEGV SEGV_ACCERR at the address");
	munmap(a, PAGE);
	EXPECT_ERR("an unmapped range", syscall(SYS_mprotect, a, PAGE, PROT_READ), ENOMEM);
	EXPECT_ERR("past the end of user space", syscall(SYS_mprotect, (void *)0x7ffffffff000, 0x100000, PROT_READ), ENOMEM);

	section("a file's mappings, as asked");
	char *f = mmap(NULL, PAGE, PROT_NONE, MAP_SHARED, fd, 0);
	EXPECT_TRUE("PROT_NONE, MAP_SHARED: mapped", f != MAP_FAILED);
	EXPECT_STR("reading it", fault_words(read_byte, f), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_OK("mprotect PROT_READ", mprotect(f, PAGE, PROT_READ));
	EXPECT_TRUE("the file's bytes", memcmp(f, "hello", 5) == 0);
	munmap(f, PAGE);
	f = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_TRUE("PROT_READ, MAP_PRIVATE: the file's bytes", f != MAP_FAILED && memcmp(f, "hello", 5) == 0);
	EXPECT_STR("writing it", fault_words(write_byte, f), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_OK("mprotect PROT_READ|PROT_WRITE", mprotect(f, PAGE, PROT_READ | PROT_WRITE));
	EXPECT_STR("then writing it", fault_words(write_byte, f), "no fault");
	munmap(f, PAGE);
	f = mmap(NULL, 2 * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_OK("mprotect PROT_NONE of a mapping's first page", mprotect(f, PAGE, PROT_NONE));
	EXPECT_STR("reading it", fault_words(read_byte, f), "SIGSEGV SEGV_ACCERR at the address");
	munmap(f, 2 * PAGE);

	section("mmap's errors on files");
	int closed = open("file", O_RDONLY);
	close(closed);
	EXPECT_ERR("a closed descriptor, length 0", mmap(NULL, 0, PROT_READ, MAP_SHARED, closed, 0), EBADF);
	EXPECT_ERR("a closed descriptor", mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, closed, 0), EBADF);
	EXPECT_ERR("-1 without MAP_ANONYMOUS", mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, -1, 0), EBADF);
	EXPECT_ERR("MAP_SHARED_VALIDATE with an unknown flag", mmap(NULL, PAGE, PROT_READ, MAP_SHARED_VALIDATE | 0x400, fd, 0),
		   EOPNOTSUPP);
	char *in = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_ERR("MAP_FIXED_NOREPLACE over a mapping (file)",
		   mmap(in + PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0), EEXIST);
	EXPECT_ERR("MAP_FIXED_NOREPLACE over a mapping (anonymous)",
		   mmap(in + PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0), EEXIST);
	EXPECT_ERR("MAP_FIXED_NOREPLACE partly over one (file)",
		   mmap(in + 2 * PAGE, 4 * PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0), EEXIST);
	munmap(in + PAGE, PAGE);
	f = mmap(in + PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
	EXPECT_TRUE("MAP_FIXED_NOREPLACE in a hole: there", f == in + PAGE);
	EXPECT_TRUE("with the file's bytes", f != MAP_FAILED && memcmp(f, "hello", 5) == 0);
	EXPECT_ERR("MAP_FIXED_NOREPLACE unaligned (file)",
		   mmap(in + 1, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0), EINVAL);
	EXPECT_ERR("MAP_FIXED_NOREPLACE wrapping (file)",
		   mmap((void *)-PAGE, 2 * PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0), ENOMEM);
	EXPECT_ERR("MAP_FIXED_NOREPLACE past user space (file)",
		   mmap((void *)0x7ffffffff000, 16 * PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0), ENOMEM);
	EXPECT_ERR("a huge length (file)", mmap(NULL, -PAGE, PROT_READ, MAP_PRIVATE, fd, 0), ENOMEM);
	munmap(in, 3 * PAGE);
	close(fd);
	return abi_done();
}
