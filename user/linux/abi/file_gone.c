/*
 * A file's cached pages go with the file: a file of 16 MiB, read whole
 * (on Tessera its pages are published in the kernel's file cache, charged
 * to the file server), then unlinked, renamed over or truncated to 0,
 * gives its memory back: its cache is gone, and the next file's pages
 * take no more memory than the first's did. On Tessera the kernel's file caches are counted
 * in /proc/tessera/res and the free memory in /proc/meminfo; Linux has no
 * such counts (its page cache frees a deleted file's pages too): there the
 * comparisons are skipped and pass.
 */
#include "levels.h"

#define SIZE (16 << 20)
#define CHUNK (256 << 10)
/* What else may take memory meanwhile (heaps, block cache). */
#define FREE_SLACK_KB 6144

static char buf[CHUNK];

struct mark {
	long caches, free_kb;
};

static struct mark mark(void)
{
	static const char *const res[] = { "FileCache", NULL };
	static const char *const mem[] = { "MemFree", NULL };
	struct level l = { 0 };
	if (access("/proc/tessera/res", R_OK) == 0) {
		read_level(&l, "/proc/tessera/res", "res", res);
		read_level(&l, "/proc/meminfo", "mem", mem);
	}
	return (struct mark){ value_of(&l, "res.FileCache"), value_of(&l, "mem.MemFree") };
}

static int tessera(void)
{
	return access("/proc/tessera/res", R_OK) == 0;
}

/* Makes `name`, SIZE bytes of a pattern; 0 when all were written. */
static int make(const char *name)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	for (int i = 0; i < CHUNK; i++)
		buf[i] = 'a' + i % 23;
	long done = 0;
	while (done < SIZE) {
		ssize_t n = write(fd, buf, CHUNK);
		if (n != CHUNK)
			break;
		done += n;
	}
	return close(fd) == 0 && done == SIZE ? 0 : -1;
}

/* Reads all of `fd` with pread twice (the second from the cache); the bytes read each time. */
static long read_all(int fd)
{
	long total = 0;
	for (int round = 0; round < 2; round++) {
		long done = 0;
		ssize_t n;
		while ((n = pread(fd, buf, CHUNK, done)) > 0)
			done += n;
		total = done;
	}
	/* A request more, so that the last READ's pages are published. */
	struct stat st;
	fstat(fd, &st);
	return total;
}

/*
 * Whether the free memory is no more than SLACK_KB below `peak`'s. The
 * kernel's heap, where a cache's pages live, keeps what it grew by: a
 * file's pages given back are taken again by the next file's, and only
 * pages kept take more.
 */
static int no_more_than(struct mark peak)
{
	if (!tessera())
		return 1;
	struct mark now = mark();
	if (now.free_kb >= peak.free_kb - FREE_SLACK_KB)
		return 1;
	say("(free memory %ld KiB, %ld KiB after the first file)", now.free_kb, peak.free_kb);
	return 0;
}

/* Whether the kernel holds `caches` file caches, as `base` and `more`. */
static int caches_are(struct mark base, long more)
{
	if (!tessera())
		return 1;
	struct mark now = mark();
	if (now.caches == base.caches + more)
		return 1;
	say("(file caches %ld, want %ld)", now.caches, base.caches + more);
	return 0;
}

int main(void)
{
	abi_init();
	struct mark base = mark();

	section("read, closed, unlinked");
	SETUP(make("big"));
	int fd = open("big", O_RDONLY);
	EXPECT_EQ("pread of it all", read_all(fd), SIZE);
	EXPECT_OK("close", close(fd));
	EXPECT_OK("unlink", unlink("big"));
	EXPECT_TRUE("its cache is gone", caches_are(base, 0));
	struct mark peak = mark();

	section("unlinked while open");
	SETUP(make("big"));
	fd = open("big", O_RDONLY);
	EXPECT_EQ("pread of it all", read_all(fd), SIZE);
	EXPECT_OK("unlink", unlink("big"));
	EXPECT_EQ("pread after the unlink", pread(fd, buf, 5, SIZE - 5), 5);
	EXPECT_TRUE("the bytes", buf[0] == 'a' + (SIZE - 5) % CHUNK % 23);
	EXPECT_OK("the last close", close(fd));
	EXPECT_TRUE("its cache is gone", caches_are(base, 0));
	EXPECT_TRUE("no more memory than the first file's", no_more_than(peak));

	section("renamed over");
	SETUP(make("big"));
	fd = open("big", O_RDONLY);
	EXPECT_EQ("pread of it all", read_all(fd), SIZE);
	EXPECT_OK("close", close(fd));
	int small = open("small", O_WRONLY | O_CREAT | O_EXCL, 0644);
	EXPECT_EQ("another file", write(small, "small", 5), 5);
	EXPECT_OK("its close", close(small));
	EXPECT_OK("rename over it", rename("small", "big"));
	EXPECT_TRUE("its cache is gone", caches_are(base, 0));
	EXPECT_TRUE("no more memory than the first file's", no_more_than(peak));
	fd = open("big", O_RDONLY);
	EXPECT_EQ("the new file's pread", pread(fd, buf, sizeof buf, 0), 5);
	EXPECT_TRUE("its bytes", memcmp(buf, "small", 5) == 0);
	EXPECT_OK("close", close(fd));
	EXPECT_OK("unlink", unlink("big"));

	section("truncated to 0 while open");
	SETUP(make("big"));
	fd = open("big", O_RDWR);
	EXPECT_EQ("pread of it all", read_all(fd), SIZE);
	EXPECT_OK("ftruncate to 0", ftruncate(fd, 0));
	EXPECT_EQ("pread after", pread(fd, buf, 10, 0), 0);
	/* Another file's pages, while the first is still open, take its room. */
	SETUP(make("other"));
	int other = open("other", O_RDONLY);
	EXPECT_EQ("pread of another file", read_all(other), SIZE);
	EXPECT_TRUE("no more memory than the first file's", no_more_than(peak));
	EXPECT_OK("close", close(other));
	EXPECT_OK("unlink", unlink("other"));
	EXPECT_OK("close", close(fd));
	EXPECT_OK("unlink", unlink("big"));
	EXPECT_TRUE("no cache is left", caches_are(base, 0));
	return abi_done();
}
