/*
 * /proc/sys/vm/drop_caches (run as root): its mode, who may open it and
 * how, the values Linux takes (1 to 4) and refuses, a bad buffer, another
 * user; and that nothing is lost when caches are dropped: dirty data
 * written before (never fsynced), a reader reading meanwhile, a writer
 * writing meanwhile.
 */
#include "abi.h"

#define DC "/proc/sys/vm/drop_caches"
#define SIZE (4 << 20)
#define CHUNK (64 << 10)

static char buf[CHUNK];

/* Writes `text` to drop_caches through a fresh description (a second
 * write at a nonzero position is ignored by Linux). */
static long drop(const char *text, size_t len)
{
	int fd = open(DC, O_WRONLY);
	if (fd < 0)
		return -1;
	long r = write(fd, text, len);
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

static char byte_of(long off, int round)
{
	return (char)('a' + (off / 7 + round) % 26);
}

static int fill(int fd, int round)
{
	for (long off = 0; off < SIZE; off += CHUNK) {
		for (int i = 0; i < CHUNK; i++)
			buf[i] = byte_of(off + i, round);
		if (pwrite(fd, buf, CHUNK, off) != CHUNK)
			return -1;
	}
	return 0;
}

/* The round whose bytes the whole file holds, or -1. */
static int round_of(int fd)
{
	char first;
	if (pread(fd, &first, 1, 0) != 1)
		return -1;
	int round = (first - 'a' + 26) % 26;
	for (long off = 0; off < SIZE; off += CHUNK) {
		if (pread(fd, buf, CHUNK, off) != CHUNK)
			return -1;
		for (int i = 0; i < CHUNK; i++)
			if (buf[i] != byte_of(off + i, round))
				return -1;
	}
	return round;
}

static int reader(void *arg)
{
	(void)arg;
	int fd = open("data", O_RDONLY);
	if (fd < 0)
		return 1;
	for (int i = 0; i < 20; i++)
		if (round_of(fd) != 0)
			return 1;
	return 0;
}

static int writer(void *arg)
{
	(void)arg;
	int fd = open("wdata", O_WRONLY);
	if (fd < 0)
		return 1;
	for (int round = 1; round <= 10; round++)
		if (fill(fd, round) != 0)
			return 1;
	return close(fd) == 0 ? 0 : 1;
}

static int stranger(void *arg)
{
	(void)arg;
	if (setgid(65534) != 0 || setuid(65534) != 0)
		return 2;
	errno = 0;
	int fd = open(DC, O_WRONLY);
	return fd < 0 && errno == EACCES ? 0 : 1;
}

int main(void)
{
	abi_init();
	struct stat st;
	EXPECT_OK("stat", stat(DC, &st));
	EXPECT_EQ("mode", st.st_mode, S_IFREG | 0200);
	EXPECT_ERR("open O_RDONLY", open(DC, O_RDONLY), EACCES);
	EXPECT_ERR("open O_RDWR", open(DC, O_RDWR), EACCES);

	EXPECT_EQ("write 1", drop("1", 1), 1);
	EXPECT_EQ("write 2", drop("2", 1), 1);
	EXPECT_EQ("write 3 newline", drop("3\n", 2), 2);
	EXPECT_EQ("write 4", drop("4", 1), 1);
	EXPECT_EQ("write blanks around 3", drop(" 3 \n", 4), 4);
	EXPECT_ERR("write 0", drop("0", 1), EINVAL);
	EXPECT_ERR("write 5", drop("5", 1), EINVAL);
	EXPECT_ERR("write -1", drop("-1", 2), EINVAL);
	EXPECT_ERR("write abc", drop("abc", 3), EINVAL);
	EXPECT_ERR("write 3x", drop("3x", 2), EINVAL);
	EXPECT_ERR("write a huge number", drop("99999999999999999999999", 23), EINVAL);
	int fd = open(DC, O_WRONLY);
	EXPECT_ERR("write from a bad pointer", write(fd, BAD_PTR, 1), EFAULT);
	close(fd);

	int st2 = 0;
	pid_t p = spawn_fn(stranger, NULL);
	waitpid(p, &st2, 0);
	EXPECT_STATUS("another user's open for writing is refused", st2, "exited 0");

	/* Dirty data, never fsynced, survives a drop. */
	SETUP(fd = open("data", O_RDWR | O_CREAT | O_TRUNC, 0644));
	EXPECT_OK("fill", fill(fd, 0));
	EXPECT_EQ("drop with dirty data", drop("3", 1), 1);
	EXPECT_EQ("dirty data read back after the drop", round_of(fd), 0);
	EXPECT_EQ("again after a second drop", (drop("1", 1), round_of(fd)), 0);
	close(fd);

	/* A reader reading meanwhile sees the file's bytes throughout. */
	p = spawn_fn(reader, NULL);
	for (int i = 0; i < 30; i++)
		drop("3", 1);
	waitpid(p, &st2, 0);
	EXPECT_STATUS("a reader while caches are dropped", st2, "exited 0");

	/* A writer writing meanwhile: its last round is what the file holds. */
	SETUP(fd = open("wdata", O_RDWR | O_CREAT | O_TRUNC, 0644));
	EXPECT_OK("fill round 0", fill(fd, 0));
	p = spawn_fn(writer, NULL);
	for (int i = 0; i < 30; i++)
		drop("3", 1);
	waitpid(p, &st2, 0);
	EXPECT_STATUS("a writer while caches are dropped", st2, "exited 0");
	EXPECT_EQ("dropped once more", drop("3", 1), 1);
	EXPECT_EQ("the writer's last round", round_of(fd), 10);
	close(fd);
	unlink("data");
	unlink("wdata");
	return abi_done();
}
