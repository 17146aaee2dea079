/*
 * One file seen by two processes: what a child writes, truncates and
 * appends through its own descriptor, the parent's next pread sees at
 * once (pages it read before included), and so does another child that
 * reads after them. A child's unlink and a new file of the same name
 * leave the open file's bytes as they were. A descriptor's number that
 * comes to lead elsewhere (dup2 of /dev/null or of a pipe over it, a
 * close and a new open, in the parent or in a forked child) reads from
 * where it leads now. Everything happens in the program's own fresh
 * folder on ext2.
 */
#include "abi.h"


#define PAGE 4096

static char page[3 * PAGE];
static char got[4 * PAGE];

static int write_middle(void *arg)
{
	(void)arg;
	int fd = open("f", O_WRONLY);
	return fd >= 0 && pwrite(fd, "NEW", 3, PAGE + 10) == 3 && close(fd) == 0 ? 0 : 1;
}

static int shorten(void *arg)
{
	(void)arg;
	int fd = open("f", O_WRONLY);
	return fd >= 0 && ftruncate(fd, PAGE + 100) == 0 && close(fd) == 0 ? 0 : 1;
}

static int append_after_hole(void *arg)
{
	(void)arg;
	int fd = open("f", O_WRONLY);
	return fd >= 0 && pwrite(fd, "XY", 2, 2 * PAGE + 5) == 2 && close(fd) == 0 ? 0 : 1;
}

/* Another reader: the second page as it is now, 'NEW' at 10. */
static int read_again(void *arg)
{
	(void)arg;
	int fd = open("f", O_RDONLY);
	char b[16];
	return fd >= 0 && pread(fd, b, 3, PAGE + 10) == 3 && memcmp(b, "NEW", 3) == 0 ? 0 : 1;
}

/* The parent's descriptor of "f", which children inherit. */
static int shared_fd = -1;

static int unlink_and_replace(void *arg)
{
	(void)arg;
	if (unlink("f") != 0)
		return 1;
	int fd = open("f", O_WRONLY | O_CREAT | O_EXCL, 0644);
	return fd >= 0 && write(fd, "other", 5) == 5 && close(fd) == 0 ? 0 : 1;
}

/* A forked child reads the inherited descriptor, then its number leads
 * to /dev/null. */
static int inherited(void *arg)
{
	(void)arg;
	char b[8];
	if (pread(shared_fd, b, 3, PAGE + 10) != 3 || memcmp(b, "NEW", 3) != 0)
		return 1;
	if (close(shared_fd) != 0)
		return 2;
	int n = open("/dev/null", O_RDONLY);
	if (n < 0 || dup2(n, shared_fd) != shared_fd)
		return 2;
	return pread(shared_fd, b, 3, PAGE + 10) == 0 ? 0 : 3;
}

int main(void)
{
	abi_init();
	for (int i = 0; i < (int)sizeof page; i++)
		page[i] = 'a' + i % 26;

	section("a file of three pages, read whole");
	int fd = open("f", O_RDWR | O_CREAT | O_EXCL, 0644);
	EXPECT_EQ("write three pages", write(fd, page, sizeof page), (ssize_t)sizeof page);
	int r = open("f", O_RDONLY);
	EXPECT_EQ("pread all", pread(r, got, sizeof got, 0), (ssize_t)sizeof page);
	EXPECT_EQ("pread all again", pread(r, got, sizeof got, 0), (ssize_t)sizeof page);
	EXPECT_TRUE("the bytes written", memcmp(got, page, sizeof page) == 0);
	EXPECT_EQ("pread at the end", pread(r, got, 10, sizeof page), 0);

	section("a child writes in the middle");
	EXPECT_EQ("the child's pwrite", in_child(write_middle, NULL), 0);
	EXPECT_EQ("pread of the page", pread(r, got, PAGE, PAGE), PAGE);
	EXPECT_TRUE("the parent sees the new bytes", memcmp(got + 10, "NEW", 3) == 0);
	EXPECT_TRUE("and the rest of the page as it was", memcmp(got, page + PAGE, 10) == 0 &&
		memcmp(got + 13, page + PAGE + 13, PAGE - 13) == 0);
	EXPECT_EQ("another child reads them too", in_child(read_again, NULL), 0);

	section("a child truncates");
	EXPECT_EQ("the child's ftruncate", in_child(shorten, NULL), 0);
	EXPECT_EQ("pread over the new end is short", pread(r, got, 2 * PAGE, 0), PAGE + 100);
	EXPECT_EQ("pread past the new end", pread(r, got, 10, 2 * PAGE), 0);
	EXPECT_EQ("pread at the new end", pread(r, got, 10, PAGE + 100), 0);

	section("a child writes past the end");
	EXPECT_EQ("the child's pwrite past the end", in_child(append_after_hole, NULL), 0);
	EXPECT_EQ("pread of it all", pread(r, got, sizeof got, 0), 2 * PAGE + 7);
	int zeros = 1;
	for (int i = PAGE + 100; i < 2 * PAGE + 5; i++)
		zeros &= got[i] == 0;
	EXPECT_TRUE("the gap reads as zeros", zeros);
	EXPECT_TRUE("the new end", memcmp(got + 2 * PAGE + 5, "XY", 2) == 0);
	EXPECT_TRUE("the first page as it was", memcmp(got, page, PAGE) == 0);
	EXPECT_EQ("fstat's size", lseek(r, 0, SEEK_END), 2 * PAGE + 7);

	section("a child unlinks it and makes another of its name");
	EXPECT_EQ("pread before", pread(r, got, 3, PAGE + 10), 3);
	EXPECT_EQ("the child's unlink and create", in_child(unlink_and_replace, NULL), 0);
	EXPECT_EQ("pread of the open file", pread(r, got, sizeof got, 0), 2 * PAGE + 7);
	EXPECT_TRUE("its bytes as they were", memcmp(got + PAGE + 10, "NEW", 3) == 0 &&
		memcmp(got + 2 * PAGE + 5, "XY", 2) == 0);
	int o = open("f", O_RDONLY);
	EXPECT_EQ("the new file's pread", pread(o, got, sizeof got, 0), 5);
	EXPECT_TRUE("its own bytes", memcmp(got, "other", 5) == 0);
	close(o);

	section("numbers that come to lead elsewhere");
	int d = dup(r);
	EXPECT_EQ("pread of a dup", pread(d, got, 3, PAGE + 10), 3);
	EXPECT_OK("close of the first", close(r));
	EXPECT_EQ("pread of the dup after", pread(d, got, 3, PAGE + 10), 3);
	EXPECT_TRUE("the bytes", memcmp(got, "NEW", 3) == 0);
	shared_fd = d;
	EXPECT_EQ("a forked child's reads", in_child(inherited, NULL), 0);
	EXPECT_EQ("the parent's pread after", pread(d, got, 3, PAGE + 10), 3);
	int null = open("/dev/null", O_RDONLY);
	EXPECT_EQ("dup2 of /dev/null over it", dup2(null, d), d);
	EXPECT_EQ("pread reads /dev/null", pread(d, got, 3, PAGE + 10), 0);
	close(d);
	close(null);
	d = open("f", O_RDONLY);
	EXPECT_EQ("pread of the new file", pread(d, got, 5, 0), 5);
	int p[2];
	EXPECT_OK("pipe", pipe(p));
	EXPECT_EQ("dup2 of a pipe over it", dup2(p[0], d), d);
	EXPECT_ERR("pread of a pipe", pread(d, got, 3, 0), ESPIPE);
	close(p[0]);
	close(p[1]);
	close(d);
	close(fd);
	EXPECT_OK("unlink", unlink("f"));
	return abi_done();
}
