/*
 * MAP_SHARED mappings of a file: the same bytes in every process that maps
 * it, however it came to map it (inherited across fork, mapped again by
 * path after exec, mapped by a process that only opened the file), msync
 * writing them to the file (read then sees them, a later mapping too), and
 * a write to the file seen by the writer's mapping. Errors: msync's flags,
 * alignment, unmapped ranges, MS_INVALIDATE of a locked mapping; mmap of a
 * read-only descriptor for writing, of a directory, at an unaligned offset. Hostile cases: the file unlinked or
 * truncated while mapped, the descriptor closed, a child killed while it
 * writes, many maps and unmaps of one file.
 */
#include "abi.h"

#include <sched.h>

#define PAGE 4096

static char *map_file(const char *path, size_t len, int prot)
{
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return MAP_FAILED;
	char *p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
	close(fd);
	return p;
}

static void make_file(const char *path, size_t len, char fill)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	char buf[PAGE];
	memset(buf, fill, sizeof buf);
	for (size_t at = 0; at < len; at += PAGE)
		SETUP(write(fd, buf, len - at < PAGE ? len - at : PAGE));
	close(fd);
}

/* The bytes at `off` of the file, by read(). */
static int file_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDONLY);
	unsigned char c = 0;
	int r = pread(fd, &c, 1, off) == 1 ? c : -1;
	close(fd);
	return r;
}

/* The new program: maps the file by path, checks the parent's byte and
 * writes its own. Exit status 0 if it saw the parent's. */
static int new_program(char **argv)
{
	char *p = map_file(argv[2], 2 * PAGE, PROT_READ | PROT_WRITE);
	if (p == MAP_FAILED)
		return 3;
	int saw = p[1] == 'P' && p[PAGE + 1] == 'Q';
	p[2] = 'E';
	p[PAGE + 2] = 'F';
	return saw ? 0 : 1;
}

static int writer_child(void *arg)
{
	char *p = arg;
	p[0] = 'C';
	p[PAGE] = 'D';
	return 0;
}

/* Opens and maps the file itself: not the parent's region. */
static int stranger_child(void *arg)
{
	char *p = map_file(arg, 2 * PAGE, PROT_READ | PROT_WRITE);
	if (p == MAP_FAILED)
		return 3;
	int saw = p[0] == 'C' && p[PAGE] == 'D';
	p[3] = 'S';
	munmap(p, 2 * PAGE);
	return saw ? 0 : 1;
}

static int exec_child(void *arg)
{
	char *argv[] = { "mem_shared", "new", arg, NULL };
	char *envp[] = { NULL };
	execve(self_exe(), argv, envp);
	return 127;
}

static int spin_child(void *arg)
{
	volatile char *p = arg;
	for (unsigned i = 0;; i++)
		p[i % (2 * PAGE)] = 'K';
	return 0;
}

static void read_one(void *p)
{
	(void)*(volatile char *)p;
}

static void write_one(void *p)
{
	*(volatile char *)p = 'W';
}

static const char *touch_text(void *p)
{
	int sig = catch_fault(read_one, p, NULL);
	return sig ? signame(sig) : "no fault";
}

static const char *write_text(void *p)
{
	int sig = catch_fault(write_one, p, NULL);
	return sig ? signame(sig) : "no fault";
}

/* Writes both parts a munmap of the second page left (pages 0 and 3). */
static int parts_child(void *arg)
{
	char *p = arg;
	p[5] = 'X';
	p[3 * PAGE + 5] = 'Y';
	return 0;
}

/* Waits for the parent's byte on the first page, then writes the last. */
static int anon_child(void *arg)
{
	volatile char *p = arg;
	for (int i = 0; i < 100000 && p[0] != 'G'; i++)
		sched_yield();
	if (p[0] != 'G')
		return 1;
	p[2 * PAGE] = 'H';
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "new") == 0)
		return new_program(argv);
	abi_init();
	const char *f = "shared_file";
	make_file(f, 2 * PAGE, 'a');

	section("one file mapped shared by several processes");
	char *p = map_file(f, 2 * PAGE, PROT_READ | PROT_WRITE);
	EXPECT_TRUE("mmap MAP_SHARED of the file", p != MAP_FAILED);
	if (p == MAP_FAILED)
		return abi_done();
	EXPECT_EQ("the mapping holds the file's bytes", p[PAGE + 7], 'a');
	EXPECT_STATUS("a forked child writes through the inherited mapping", in_child(writer_child, p), "exited 0");
	EXPECT_EQ("the parent sees its first page's byte", p[0], 'C');
	EXPECT_EQ("and its second page's", p[PAGE], 'D');
	EXPECT_STATUS("a child that maps the file itself sees them", in_child(stranger_child, (void *)f), "exited 0");
	EXPECT_EQ("and the parent sees what it wrote", p[3], 'S');
	p[1] = 'P';
	p[PAGE + 1] = 'Q';
	EXPECT_STATUS("a program exec'd maps it by path and sees the parent's bytes", in_child(exec_child, (void *)f),
		      "exited 0");
	EXPECT_EQ("the parent sees the new program's bytes", p[2], 'E');
	EXPECT_EQ("on both pages", p[PAGE + 2], 'F');

	section("msync writes the mapping to the file");
	EXPECT_OK("msync(MS_SYNC)", msync(p, 2 * PAGE, MS_SYNC));
	EXPECT_EQ("read sees byte 0", file_byte(f, 0), 'C');
	EXPECT_EQ("read sees the new program's byte", file_byte(f, PAGE + 2), 'F');
	p[5] = 'A';
	EXPECT_OK("msync(MS_ASYNC) of the first page", msync(p, PAGE, MS_ASYNC));
	EXPECT_OK("msync(MS_SYNC) then ends any write MS_ASYNC started", msync(p, PAGE, MS_SYNC));
	EXPECT_EQ("read sees it", file_byte(f, 5), 'A');
	EXPECT_OK("msync(MS_INVALIDATE)", msync(p, 2 * PAGE, MS_INVALIDATE));
	EXPECT_EQ("the mapping keeps its bytes", p[5], 'A');
	EXPECT_OK("msync of length 0", msync(p, 0, MS_SYNC));
	EXPECT_OK("msync of a length not a multiple of the page", msync(p, 10, MS_SYNC));

	section("write(2) to the mapped file");
	int wfd = open(f, O_RDWR);
	SETUP(wfd);
	SETUP(pwrite(wfd, "xyz", 3, PAGE - 1));
	EXPECT_EQ("the mapping sees a write across its two pages", p[PAGE + 1], 'z');
	EXPECT_OK("msync(MS_INVALIDATE) after it", msync(p, 2 * PAGE, MS_INVALIDATE));
	EXPECT_EQ("and keeps it", p[PAGE - 1], 'x');
	SETUP(lseek(wfd, 8, SEEK_SET));
	SETUP(write(wfd, "w", 1));
	EXPECT_EQ("a write at the file's position too", p[8], 'w');
	close(wfd);

	section("msync errors");
	EXPECT_ERR("MS_SYNC | MS_ASYNC", msync(p, PAGE, MS_SYNC | MS_ASYNC), EINVAL);
	EXPECT_ERR("an unknown flag", msync(p, PAGE, 0x100), EINVAL);
	EXPECT_ERR("an address not page-aligned", msync(p + 1, PAGE, MS_SYNC), EINVAL);
	char *hole = mmap(NULL, 3 * PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(hole == MAP_FAILED ? -1 : 0);
	SETUP(munmap(hole + PAGE, PAGE));
	EXPECT_ERR("a range with an unmapped page", msync(hole, 3 * PAGE, MS_SYNC), ENOMEM);
	EXPECT_ERR("an unmapped range", msync(hole + PAGE, PAGE, MS_SYNC), ENOMEM);
	EXPECT_OK("anonymous memory", msync(hole, PAGE, MS_SYNC));
	EXPECT_ERR("a huge range from an unmapped page", msync(hole + PAGE, 1UL << 46, MS_SYNC), ENOMEM);
	EXPECT_ERR("a length that wraps around", msync(p, -(2UL * PAGE), MS_SYNC), ENOMEM);
	int fd = open(f, O_RDWR);
	SETUP(fd);
	char *locked = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED, fd, 0);
	EXPECT_TRUE("mmap MAP_SHARED | MAP_LOCKED", locked != MAP_FAILED);
	EXPECT_ERR("MS_INVALIDATE of a locked mapping", msync(locked, PAGE, MS_INVALIDATE), EBUSY);
	EXPECT_OK("MS_SYNC of it", msync(locked, PAGE, MS_SYNC));
	munmap(locked, PAGE);

	section("mmap errors");
	int ro = open(f, O_RDONLY);
	SETUP(ro);
	EXPECT_ERR("MAP_SHARED writable of a read-only descriptor", mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0),
		   EACCES);
	EXPECT_TRUE("MAP_SHARED read-only of it", mmap(NULL, PAGE, PROT_READ, MAP_SHARED, ro, 0) != MAP_FAILED);
	EXPECT_ERR("an offset not page-aligned", mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 100), EINVAL);
	EXPECT_ERR("length 0", mmap(NULL, 0, PROT_READ, MAP_SHARED, fd, 0), EINVAL);
	EXPECT_ERR("a closed descriptor", mmap(NULL, PAGE, PROT_READ, MAP_SHARED, 999, 0), EBADF);
	SETUP(mkdir("dir", 0755));
	int dfd = open("dir", O_RDONLY);
	SETUP(dfd);
	EXPECT_ERR("a directory", mmap(NULL, PAGE, PROT_READ, MAP_SHARED, dfd, 0), ENODEV);
	close(dfd);
	close(ro);

	section("a mapping outlives its descriptor and its name");
	char *q = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	EXPECT_TRUE("mapped again, the descriptor closed", q != MAP_FAILED);
	EXPECT_EQ("it holds the first mapping's bytes", q[2], 'E');
	q[6] = 'Z';
	EXPECT_EQ("and shares them", p[6], 'Z');
	SETUP(unlink(f));
	p[7] = 'U';
	EXPECT_EQ("written after the unlink, seen through the other mapping", q[7], 'U');
	EXPECT_OK("msync after the unlink", msync(p, 2 * PAGE, MS_SYNC));
	EXPECT_OK("munmap of one", munmap(q, 2 * PAGE));
	EXPECT_EQ("the other keeps the bytes", p[6], 'Z');
	EXPECT_OK("munmap of the other", munmap(p, 2 * PAGE));

	section("hostile");
	make_file(f, 2 * PAGE, 'b');
	p = map_file(f, 2 * PAGE, PROT_READ | PROT_WRITE);
	SETUP(p == MAP_FAILED ? -1 : 0);
	pid_t k = spawn_fn(spin_child, p);
	SETUP(k);
	while (p[PAGE - 1] != 'K')
		sched_yield();
	kill(k, SIGKILL);
	EXPECT_STATUS("a child killed while it writes the mapping", wait_status(k), "killed by SIGKILL");
	EXPECT_EQ("its writes stay", p[PAGE - 1], 'K');
	EXPECT_OK("msync", msync(p, 2 * PAGE, MS_SYNC));
	EXPECT_EQ("and reach the file", file_byte(f, PAGE - 1), 'K');
	SETUP(truncate(f, PAGE));
	EXPECT_OK("msync after the file was made shorter", msync(p, 2 * PAGE, MS_SYNC));
	struct stat sb;
	SETUP(stat(f, &sb));
	EXPECT_EQ("msync does not grow the file", sb.st_size, PAGE);
	munmap(p, 2 * PAGE);
	int same = 0;
	for (int i = 0; i < 200; i++) {
		char *m = map_file(f, PAGE, PROT_READ | PROT_WRITE);
		if (m == MAP_FAILED)
			break;
		m[i % PAGE] = 'M';
		same += msync(m, PAGE, MS_SYNC) == 0 && file_byte(f, i % PAGE) == 'M';
		munmap(m, PAGE);
	}
	EXPECT_EQ("200 maps, writes, msyncs and unmaps of one file", same, 200);

	section("part of a mapping unmapped");
	make_file(f, 4 * PAGE, 'c');
	p = map_file(f, 4 * PAGE, PROT_READ | PROT_WRITE);
	SETUP(p == MAP_FAILED ? -1 : 0);
	EXPECT_OK("munmap of its second page", munmap(p + PAGE, PAGE));
	EXPECT_STR("touching it", touch_text(p + PAGE), "SIGSEGV");
	EXPECT_STR("the first page", touch_text(p), "no fault");
	EXPECT_STR("the third", touch_text(p + 2 * PAGE), "no fault");
	EXPECT_ERR("msync over the hole", msync(p, 4 * PAGE, MS_SYNC), ENOMEM);
	EXPECT_STATUS("a child writes both parts", in_child(parts_child, p), "exited 0");
	EXPECT_TRUE("the parent sees them", p[5] == 'X' && p[3 * PAGE + 5] == 'Y');
	EXPECT_OK("msync of the last part", msync(p + 2 * PAGE, 2 * PAGE, MS_SYNC));
	EXPECT_EQ("it reaches the file", file_byte(f, 3 * PAGE + 5), 'Y');
	EXPECT_OK("munmap of the last page", munmap(p + 3 * PAGE, PAGE));
	EXPECT_OK("mprotect PROT_READ of the third page", mprotect(p + 2 * PAGE, PAGE, PROT_READ));
	EXPECT_STR("writing it", write_text(p + 2 * PAGE), "SIGSEGV");
	EXPECT_STR("writing the first", write_text(p), "no fault");
	EXPECT_OK("munmap of what is left, hole and all", munmap(p, 4 * PAGE));
	EXPECT_STR("the first page is gone", touch_text(p), "SIGSEGV");
	char *anon = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	SETUP(anon == MAP_FAILED ? -1 : 0);
	pid_t w = spawn_fn(anon_child, anon);
	SETUP(w);
	EXPECT_OK("MAP_SHARED anonymous, a child holding it: munmap of the middle", munmap(anon + PAGE, PAGE));
	EXPECT_STR("touching it", touch_text(anon + PAGE), "SIGSEGV");
	anon[0] = 'G';
	EXPECT_STATUS("the child sees the parent's byte and writes the last page", wait_status(w), "exited 0");
	EXPECT_EQ("the parent sees it", anon[2 * PAGE], 'H');
	munmap(anon, 3 * PAGE);
	return abi_done();
}
