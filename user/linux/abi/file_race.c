/*
 * A descriptor closed by one thread while another preads it: the reader
 * gets the file's bytes or EBADF, nothing else, and both threads go on.
 * The main thread opens and closes the same file 300 times; the reader
 * preads whatever number it last published (-1 in between).
 */
#include "abi.h"

#include <pthread.h>
#include <stdatomic.h>

static atomic_int race_fd = -1;
static atomic_int race_stop;
static atomic_long race_bad;

static void *reader(void *arg)
{
	(void)arg;
	char b[8];
	while (!atomic_load(&race_stop)) {
		ssize_t n = pread(atomic_load(&race_fd), b, 1, 0);
		if (!(n == 1 && b[0] == 'o') && !(n == -1 && errno == EBADF))
			atomic_fetch_add(&race_bad, 1);
	}
	return NULL;
}

int main(void)
{
	abi_init();
	section("a number closed while another thread reads it");
	int fd = open("f", O_WRONLY | O_CREAT | O_EXCL, 0644);
	EXPECT_EQ("the file", write(fd, "other", 5), 5);
	close(fd);
	pthread_t t;
	EXPECT_EQ("the reader starts", pthread_create(&t, NULL, reader, NULL), 0);
	for (int i = 0; i < 300; i++) {
		int f = open("f", O_RDONLY);
		atomic_store(&race_fd, f);
		for (volatile int k = 0; k < 2000; k++)
			;
		close(f);
		atomic_store(&race_fd, -1);
		sched_yield();
	}
	atomic_store(&race_stop, 1);
	pthread_join(t, NULL);
	EXPECT_EQ("reads gave the bytes or EBADF only", atomic_load(&race_bad), 0);
	EXPECT_OK("unlink", unlink("f"));
	return abi_done();
}
