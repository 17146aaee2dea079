/*
 * fork's copy-on-write: after a fork, parent and child each see only
 * their own writes to private memory (data, BSS, heap, stack, anonymous
 * mappings, a page touched for the first time after the fork), also
 * down a chain of forks and after mprotect on either side, while a
 * MAP_SHARED mapping stays one memory for both; a shared futex in private
 * memory is still woken when a fork's copy moves its word to a new frame.
 */
#include "abi.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

/* Shared futex operations (no FUTEX_PRIVATE_FLAG). */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1

#define PAGE 4096
#define BIG_PAGES 2048 /* 8 MiB */

static int data_word = 11;
static char bss_page[PAGE];

/* Each side's writes, told to the other through pipes so both are alive. */
static void wait_byte(int fd)
{
	char c;
	if (read(fd, &c, 1) != 1)
		_exit(90);
}

static void send_byte(int fd)
{
	if (write(fd, "x", 1) != 1)
		_exit(91);
}

static int pattern_ok(const unsigned char *p, size_t pages, unsigned char xor)
{
	for (size_t i = 0; i < pages; i++)
		for (size_t k = 0; k < PAGE; k += 512)
			if (p[i * PAGE + k] != (unsigned char)((i + k / 512) ^ xor))
				return 0;
	return 1;
}

static void fill(unsigned char *p, size_t pages, unsigned char xor)
{
	for (size_t i = 0; i < pages; i++)
		for (size_t k = 0; k < PAGE; k += 512)
			p[i * PAGE + k] = (unsigned char)((i + k / 512) ^ xor);
}

static volatile int futex_word;
static int futex_hold[2];
static long futex_woken = -1;

/* Forks while the main thread waits on futex_word (its child holding the
 * page), then writes the word (a copy) and wakes it. */
static void *futex_waker(void *arg)
{
	(void)arg;
	usleep(100000);
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		close(futex_hold[1]);
		read(futex_hold[0], &c, 1);
		_exit(0);
	}
	futex_word = 1;
	futex_woken = syscall(SYS_futex, &futex_word, FUTEX_WAKE, 1, NULL, NULL, 0);
	close(futex_hold[1]);
	waitpid(pid, NULL, 0);
	return NULL;
}

int main(void)
{
	abi_init();

	section("both write after fork");
	int to_child[2], to_parent[2];
	SETUP(pipe(to_child));
	SETUP(pipe(to_parent));
	int stack_word = 21;
	unsigned char *heap = malloc(3 * PAGE);
	SETUP(heap ? 0 : -1);
	memset(heap, 'h', 3 * PAGE);
	bss_page[100] = 'b';
	pid_t pid = fork();
	if (pid == 0) {
		/* The parent writes first; the child must not see it. */
		wait_byte(to_child[0]);
		EXPECT_EQ("child: data word as at fork", data_word, 11);
		EXPECT_EQ("child: stack word as at fork", stack_word, 21);
		EXPECT_EQ("child: heap byte as at fork", heap[PAGE + 5], 'h');
		EXPECT_EQ("child: bss byte as at fork", bss_page[100], 'b');
		data_word = 13;
		stack_word = 23;
		heap[PAGE + 5] = 'c';
		bss_page[100] = 'c';
		EXPECT_EQ("child: sees its own data write", data_word, 13);
		EXPECT_EQ("child: sees its own heap write", heap[PAGE + 5], 'c');
		send_byte(to_parent[1]);
		_exit(0);
	}
	data_word = 12;
	stack_word = 22;
	heap[PAGE + 5] = 'p';
	bss_page[100] = 'p';
	send_byte(to_child[1]);
	wait_byte(to_parent[0]);
	EXPECT_STATUS("child status", wait_status(pid), "exited 0");
	EXPECT_EQ("parent: keeps its data write", data_word, 12);
	EXPECT_EQ("parent: keeps its stack write", stack_word, 22);
	EXPECT_EQ("parent: keeps its heap write", heap[PAGE + 5], 'p');
	EXPECT_EQ("parent: keeps its bss write", bss_page[100], 'p');
	EXPECT_EQ("parent: untouched heap byte", heap[2 * PAGE + 7], 'h');

	section("large private mapping");
	unsigned char *big = mmap(NULL, BIG_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(big == MAP_FAILED ? -1 : 0);
	/* Every other page present at the fork; the rest first touched after. */
	for (size_t i = 0; i < BIG_PAGES; i += 2)
		fill(big + i * PAGE, 1, (unsigned char)i);
	pid = fork();
	if (pid == 0) {
		int ok = 1;
		for (size_t i = 0; i < BIG_PAGES; i += 2)
			ok &= pattern_ok(big + i * PAGE, 1, (unsigned char)i);
		EXPECT_TRUE("child: sees the pages written before fork", ok);
		EXPECT_EQ("child: a page untouched before fork is zero", big[PAGE + 9], 0);
		fill(big, BIG_PAGES, 0x5a);
		EXPECT_TRUE("child: sees all its writes", pattern_ok(big, BIG_PAGES, 0x5a));
		_exit(0);
	}
	EXPECT_STATUS("child status", wait_status(pid), "exited 0");
	int ok = 1;
	for (size_t i = 0; i < BIG_PAGES; i += 2)
		ok &= pattern_ok(big + i * PAGE, 1, (unsigned char)i);
	EXPECT_TRUE("parent: its pages unchanged", ok);
	EXPECT_EQ("parent: a page the child touched is zero", big[3 * PAGE + 9], 0);
	fill(big, BIG_PAGES, 0xa5);
	EXPECT_TRUE("parent: writes all pages after", pattern_ok(big, BIG_PAGES, 0xa5));

	section("MAP_SHARED stays shared");
	volatile int *shared = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	SETUP(shared == MAP_FAILED ? -1 : 0);
	shared[0] = 1;
	pid = fork();
	if (pid == 0) {
		EXPECT_EQ("child: sees the shared value", shared[0], 1);
		shared[0] = 2;
		shared[PAGE / sizeof(int)] = 3;
		_exit(0);
	}
	EXPECT_STATUS("child status", wait_status(pid), "exited 0");
	EXPECT_EQ("parent: sees the child's write", shared[0], 2);
	EXPECT_EQ("parent: sees the child's first touch", shared[PAGE / sizeof(int)], 3);

	section("fork after mprotect");
	unsigned char *prot = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(prot == MAP_FAILED ? -1 : 0);
	fill(prot, 4, 1);
	SETUP(mprotect(prot, 4 * PAGE, PROT_READ));
	pid = fork();
	if (pid == 0) {
		EXPECT_TRUE("child: reads the read-only pages", pattern_ok(prot, 4, 1));
		EXPECT_OK("child: mprotect read-write", mprotect(prot, 4 * PAGE, PROT_READ | PROT_WRITE));
		fill(prot, 4, 2);
		EXPECT_TRUE("child: sees its writes", pattern_ok(prot, 4, 2));
		_exit(0);
	}
	EXPECT_STATUS("child status", wait_status(pid), "exited 0");
	EXPECT_TRUE("parent: pages unchanged", pattern_ok(prot, 4, 1));
	EXPECT_OK("parent: mprotect read-write", mprotect(prot, 4 * PAGE, PROT_READ | PROT_WRITE));
	fill(prot, 4, 3);
	EXPECT_TRUE("parent: sees its writes", pattern_ok(prot, 4, 3));

	section("mprotect and munmap after fork");
	unsigned char *after = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(after == MAP_FAILED ? -1 : 0);
	fill(after, 4, 4);
	pid = fork();
	if (pid == 0) {
		EXPECT_OK("child: munmap one page", munmap(after + PAGE, PAGE));
		EXPECT_OK("child: mprotect read-only", mprotect(after, PAGE, PROT_READ));
		EXPECT_TRUE("child: first page as at fork", pattern_ok(after, 1, 4));
		fill(after + 2 * PAGE, 2, 5);
		_exit(0);
	}
	EXPECT_STATUS("child status", wait_status(pid), "exited 0");
	EXPECT_TRUE("parent: all pages unchanged", pattern_ok(after, 4, 4));
	fill(after, 4, 6);
	EXPECT_TRUE("parent: writes them after", pattern_ok(after, 4, 6));

	section("chain of forks");
	data_word = 100;
	pid = fork();
	if (pid == 0) {
		pid_t grandchild = fork();
		if (grandchild == 0) {
			pid_t last = fork();
			if (last == 0) {
				EXPECT_EQ("great-grandchild: value at its fork", data_word, 100);
				data_word = 103;
				_exit(0);
			}
			data_word = 102;
			EXPECT_STATUS("great-grandchild status", wait_status(last), "exited 0");
			EXPECT_EQ("grandchild: keeps its write", data_word, 102);
			_exit(0);
		}
		EXPECT_STATUS("grandchild status", wait_status(grandchild), "exited 0");
		EXPECT_EQ("child: value unchanged by its descendants", data_word, 100);
		data_word = 101;
		_exit(0);
	}
	EXPECT_STATUS("child status", wait_status(pid), "exited 0");
	EXPECT_EQ("parent: value unchanged by the chain", data_word, 100);

	section("shared futex in private memory");
	SETUP(pipe(futex_hold));
	pthread_t t;
	SETUP(pthread_create(&t, NULL, futex_waker, NULL));
	struct timespec limit = {5, 0};
	long r = 0;
	while (futex_word == 0 && r == 0)
		r = syscall(SYS_futex, &futex_word, FUTEX_WAIT, 0, &limit, NULL, 0);
	EXPECT_TRUE("the wait ends by the wake, not the time limit", r == 0 || errno == EAGAIN);
	pthread_join(t, NULL);
	EXPECT_TRUE("the wake finds at most the waiter", futex_woken == 0 || futex_woken == 1);

	return abi_done();
}
