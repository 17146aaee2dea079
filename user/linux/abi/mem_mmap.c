/*
 * mmap (anonymous and file-backed private, MAP_SHARED anonymous, MAP_FIXED,
 * hints), munmap and mprotect: contents, the faults that follow (signal,
 * si_code, si_addr), what a fork shares, and the errors.
 */
#include "abi.h"

#define PAGE 4096L

static void read_byte(void *p)
{
	(void)*(volatile char *)p;
}

static void write_byte(void *p)
{
	*(volatile char *)p = 1;
}

static void call_code(void *p)
{
	((void (*)(void))p)();
}

static int all(const char *p, long n, char c)
{
	for (long i = 0; i < n; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

/* One byte `c` written to the file at `off`. */
static void put(int fd, long off, char c)
{
	SETUP(pwrite(fd, &c, 1, off));
}

static int child_writes(void *arg)
{
	char *p = arg;
	p[0] = 'c';
	return 0;
}

int main(void)
{
	abi_init();

	section("anonymous private");
	/* Four pages, the last given back: a hole after the three we keep. */
	char *a = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_TRUE("mmap succeeds", a != MAP_FAILED);
	munmap(a + 3 * PAGE, PAGE);
	EXPECT_TRUE("page aligned", ((long)a & (PAGE - 1)) == 0);
	EXPECT_TRUE("zero filled", all(a, 3 * PAGE, 0));
	memset(a, 'x', 3 * PAGE);
	EXPECT_STR("the byte after it", fault_words(read_byte, a + 3 * PAGE), "SIGSEGV SEGV_MAPERR at the address");
	EXPECT_OK("munmap the middle page", munmap(a + PAGE, PAGE));
	EXPECT_STR("reading the hole", fault_words(read_byte, a + PAGE + 5), "SIGSEGV SEGV_MAPERR at the address");
	EXPECT_TRUE("the pages around it are intact", all(a, PAGE, 'x') && all(a + 2 * PAGE, PAGE, 'x'));
	char *b = mmap(a + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_TRUE("a hint at the free hole is taken", b == a + PAGE);
	EXPECT_ERR("MAP_FIXED_NOREPLACE over a mapping",
		   mmap(a, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0), EEXIST);
	b = mmap(a, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	EXPECT_TRUE("MAP_FIXED replaces it", b == a && all(a, PAGE, 0));
	char *h = mmap(a + PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_TRUE("a hint at a used address is moved", h != MAP_FAILED && h != a + PAGE);
	munmap(h, PAGE);
	EXPECT_OK("munmap all three", munmap(a, 3 * PAGE));
	EXPECT_OK("munmap of an unmapped range", munmap(a, 3 * PAGE));

	section("mprotect");
	a = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	a[0] = 'y';
	EXPECT_OK("mprotect PROT_READ", mprotect(a, PAGE, PROT_READ));
	EXPECT_STR("writing it", fault_words(write_byte, a + 10), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_STR("reading it", fault_words(read_byte, a + 10), "no fault");
	EXPECT_OK("mprotect PROT_NONE", mprotect(a, PAGE, PROT_NONE));
	EXPECT_STR("reading it", fault_words(read_byte, a + 10), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_OK("mprotect PROT_READ|PROT_WRITE", mprotect(a, PAGE, PROT_READ | PROT_WRITE));
	EXPECT_EQ("the contents survived", a[0], 'y');
	/* A `ret` instruction. */
	a[PAGE] = (char)0xc3;
	EXPECT_STR("executing a page without PROT_EXEC", fault_words(call_code, a + PAGE),
		   "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_OK("mprotect PROT_READ|PROT_EXEC", mprotect(a + PAGE, PAGE, PROT_READ | PROT_EXEC));
	EXPECT_STR("executing it", fault_words(call_code, a + PAGE), "no fault");
	/* musl's mprotect rounds the address down; the kernel does not. */
	EXPECT_ERR("mprotect of an unaligned address", syscall(SYS_mprotect, a + 1, PAGE, PROT_READ), EINVAL);
	EXPECT_ERR("mprotect with unknown bits", syscall(SYS_mprotect, a, PAGE, 0x40), EINVAL);
	munmap(a, 2 * PAGE);
	EXPECT_ERR("mprotect of an unmapped range", syscall(SYS_mprotect, a, PAGE, PROT_READ), ENOMEM);

	section("errors");
	EXPECT_ERR("length 0", mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), EINVAL);
	EXPECT_ERR("neither MAP_PRIVATE nor MAP_SHARED", mmap(NULL, PAGE, PROT_READ, MAP_ANONYMOUS, -1, 0), EINVAL);
	EXPECT_ERR("MAP_FIXED at an unaligned address",
		   mmap((void *)0x10001, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), EINVAL);
	EXPECT_ERR("a length beyond the address space",
		   mmap(NULL, 1UL << 62, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), ENOMEM);
	EXPECT_ERR("a bad descriptor", mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, 99, 0), EBADF);
	EXPECT_ERR("munmap of an unaligned address", munmap((void *)0x10001, PAGE), EINVAL);
	EXPECT_ERR("munmap of length 0", munmap((void *)0x10000, 0), EINVAL);

	section("file-backed private");
	int fd = open("file", O_RDWR | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	static char text[10000];
	for (int i = 0; i < 10000; i++)
		text[i] = 'A' + i % 26;
	SETUP(write(fd, text, sizeof text));
	char *f = mmap(NULL, 4 * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_TRUE("mmap of 4 pages of a 10000-byte file", f != MAP_FAILED);
	EXPECT_TRUE("the contents are the file's", memcmp(f, text, sizeof text) == 0);
	EXPECT_TRUE("the rest of the last page reads zero", all(f + 10000, 3 * PAGE - 10000, 0));
	EXPECT_STR("the page wholly past the end", fault_words(read_byte, f + 3 * PAGE), "SIGBUS BUS_ADRERR at the address");
	SETUP(pwrite(fd, "zz", 2, 5000));
	EXPECT_TRUE("a later write to the file shows in a page not copied", f[5000] == 'z' && f[5001] == 'z');
	munmap(f, 4 * PAGE);
	f = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, PAGE);
	EXPECT_TRUE("mmap at offset 4096", f != MAP_FAILED && f[0] == text[4096]);
	close(fd);
	f[0] = '#';
	EXPECT_EQ("writable after its descriptor is closed", f[0], '#');
	fd = open("file", O_RDWR);
	char c = 0;
	pread(fd, &c, 1, PAGE);
	EXPECT_EQ("a private write does not reach the file", c, text[4096]);
	SETUP(ftruncate(fd, 2000));
	EXPECT_STR("after the file is cut to 2000 bytes", fault_words(read_byte, f + PAGE), "SIGBUS BUS_ADRERR at the address");
	/* Truncation takes even the private copy of a page past the end. */
	EXPECT_STR("the privately written page past the new end", fault_words(read_byte, f),
		   "SIGBUS BUS_ADRERR at the address");
	munmap(f, 2 * PAGE);
	EXPECT_ERR("offset not a page multiple", mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 100), EINVAL);
	close(fd);
	fd = open("file", O_RDONLY);
	EXPECT_ERR("MAP_SHARED writable on a read-only descriptor",
		   mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), EACCES);
	EXPECT_TRUE("MAP_PRIVATE writable on it is fine",
		    mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0) != MAP_FAILED);
	close(fd);
	fd = open("file", O_WRONLY);
	EXPECT_ERR("a write-only descriptor", mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0), EACCES);
	close(fd);
	fd = open(".", O_RDONLY);
	EXPECT_ERR("a directory", mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0), ENODEV);
	close(fd);
	int p[2];
	SETUP(pipe(p));
	EXPECT_ERR("a pipe", mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, p[0], 0), ENODEV);
	close(p[0]);
	close(p[1]);
	fd = open("/dev/zero", O_RDWR);
	char *z = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	EXPECT_TRUE("/dev/zero maps as zeros", z != MAP_FAILED && all(z, PAGE, 0));
	close(fd);

	section("later writes to a privately mapped file");
	/* Its pages the process has not written are the file's (the page cache). */
	fd = open("later", O_RDWR | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	static char three[3 * PAGE];
	memset(three, 'a', sizeof three);
	SETUP(write(fd, three, sizeof three));
	char *m = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	EXPECT_TRUE("mmap of 3 pages", m != MAP_FAILED);
	m[PAGE] = 'w';
	put(fd, 0, 'b');
	put(fd, PAGE + 1, 'b');
	put(fd, 2 * PAGE, 'b');
	EXPECT_TRUE("an unwritten page shows a later write", m[0] == 'b' && m[2 * PAGE] == 'b');
	EXPECT_TRUE("a page the process wrote does not", m[PAGE] == 'w' && m[PAGE + 1] == 'a');
	int pp[2];
	SETUP(pipe(pp));
	pid_t pid = fork();
	if (pid == 0) {
		char x;
		if (read(pp[0], &x, 1) != 1)
			_exit(2);
		_exit(m[2 * PAGE + 5] == 'c' ? 0 : 1);
	}
	put(fd, 2 * PAGE + 5, 'c');
	SETUP(write(pp[1], "g", 1));
	EXPECT_STATUS("a forked child sees the parent's later write", wait_status(pid), "exited 0");
	close(pp[0]);
	close(pp[1]);
	pid = fork();
	if (pid == 0)
		_exit(pwrite(fd, "e", 1, 2 * PAGE + 7) == 1 ? 0 : 1);
	EXPECT_STATUS("a forked child writes the file", wait_status(pid), "exited 0");
	EXPECT_EQ("the parent's unwritten page shows the child's write", m[2 * PAGE + 7], 'e');
	EXPECT_OK("munmap of the first page", munmap(m, PAGE));
	EXPECT_OK("mprotect PROT_READ of the last", mprotect(m + 2 * PAGE, PAGE, PROT_READ));
	put(fd, 2 * PAGE + 6, 'd');
	EXPECT_EQ("what munmap and mprotect left shows a later write", m[2 * PAGE + 6], 'd');
	SETUP(ftruncate(fd, 2 * PAGE + 100));
	SETUP(ftruncate(fd, 3 * PAGE));
	EXPECT_TRUE("a truncation zeroes the rest of its page",
		    m[2 * PAGE + 99] == 'a' && m[2 * PAGE + 100] == 0 && m[3 * PAGE - 1] == 0);
	SETUP(unlink("later"));
	put(fd, 2 * PAGE + 7, 'e');
	EXPECT_EQ("a write after the file is removed shows", m[2 * PAGE + 7], 'e');
	munmap(m + PAGE, 2 * PAGE);
	close(fd);

	section("across fork");
	char *s = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *q = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s[0] = q[0] = 'p';
	EXPECT_STATUS("child writes MAP_SHARED", in_child(child_writes, s), "exited 0");
	EXPECT_EQ("the parent sees it", s[0], 'c');
	EXPECT_STATUS("child writes MAP_PRIVATE", in_child(child_writes, q), "exited 0");
	EXPECT_EQ("the parent does not", q[0], 'p');
	return abi_done();
}
