/*
 * futex: FUTEX_WAIT (value check, timeout), FUTEX_WAKE counts,
 * FUTEX_WAIT_BITSET / FUTEX_WAKE_BITSET, FUTEX_REQUEUE and
 * FUTEX_CMP_REQUEUE, private and shared futexes (across fork on a
 * MAP_SHARED page), and the errors.
 *
 * Waiters are threads made with raw_clone.  The main thread learns that
 * they are all asleep by requeueing them (count returned) onto a second
 * word, so no sleep or timing decides the outcome.
 */
#include "abi.h"

#include <limits.h>
#include <sched.h>
#include <time.h>

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define THREAD_FLAGS (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM)

static long futex(void *addr, int op, int val, const void *timeout, void *addr2, int val3)
{
	return syscall(SYS_futex, addr, op, val, timeout, addr2, val3);
}

static int word_a, word_b, woken;
static char stacks[3][32768] __attribute__((aligned(16)));
static int ctid[3];

struct waiter {
	int op, bitset;
};

static int waiter(void *arg)
{
	struct waiter *w = arg;
	long r = sys6(SYS_futex, (long)&word_a, w->op, 0, 0, 0, w->bitset);
	if (r == 0)
		__atomic_fetch_add(&woken, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void start_waiters(int n, struct waiter *w)
{
	word_a = word_b = woken = 0;
	for (int i = 0; i < n; i++) {
		ctid[i] = -1;
		raw_clone(THREAD_FLAGS | CLONE_CHILD_CLEARTID, stacks[i] + sizeof stacks[i], NULL, &ctid[i], 0,
			  waiter, &w[i]);
	}
}

static void join_waiters(int n)
{
	/* CLONE_CHILD_CLEARTID turns -1 into 0 when a thread ends. */
	for (int i = 0; i < n; i++)
		futex_wait_while(&ctid[i], -1);
}

/* Until n threads wait on word_a, move them to word_b; returns when all
 * n are queued on word_b. */
static void gather_on_b(int n, int private)
{
	int moved = 0;
	while (moved < n) {
		long r = futex(&word_a, FUTEX_REQUEUE | private, 0, (void *)(long)INT_MAX, &word_b, 0);
		if (r > 0)
			moved += r;
		else
			sched_yield();
	}
}

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(void)
{
	abi_init();
	int w = 5;

	section("FUTEX_WAIT");
	EXPECT_ERR("the value differs", futex(&w, FUTEX_WAIT, 4, NULL, NULL, 0), EAGAIN);
	EXPECT_ERR("private, the value differs", futex(&w, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 4, NULL, NULL, 0), EAGAIN);
	struct timespec t50 = { 0, 50000000 };
	long long t0 = now_ns();
	EXPECT_ERR("a 50 ms timeout", futex(&w, FUTEX_WAIT, 5, &t50, NULL, 0), ETIMEDOUT);
	EXPECT_TRUE("took at least 50 ms", now_ns() - t0 >= 50000000);
	struct timespec zero = { 0, 0 };
	EXPECT_ERR("a zero timeout", futex(&w, FUTEX_WAIT, 5, &zero, NULL, 0), ETIMEDOUT);
	struct timespec badts = { 0, 1000000000 };
	EXPECT_ERR("tv_nsec 10^9", futex(&w, FUTEX_WAIT, 5, &badts, NULL, 0), EINVAL);
	EXPECT_ERR("an unaligned address", futex((char *)&w + 1, FUTEX_WAIT, 5, NULL, NULL, 0), EINVAL);
	EXPECT_ERR("an unmapped address", futex(BAD_PTR, FUTEX_WAIT, 5, NULL, NULL, 0), EFAULT);
	EXPECT_ERR("an unknown operation", futex(&w, 99, 0, NULL, NULL, 0), ENOSYS);
	EXPECT_ERR("FUTEX_CLOCK_REALTIME with FUTEX_WAIT", futex(&w, FUTEX_WAIT | FUTEX_CLOCK_REALTIME, 5, &t50, NULL, 0),
		   ENOSYS);

	section("FUTEX_WAKE");
	EXPECT_EQ("no waiters", futex(&w, FUTEX_WAKE, 1, NULL, NULL, 0), 0);
	EXPECT_ERR("an unaligned address", futex((char *)&w + 1, FUTEX_WAKE, 1, NULL, NULL, 0), EINVAL);
	struct waiter plain[3] = { { FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0 },
				   { FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0 },
				   { FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0 } };
	start_waiters(3, plain);
	gather_on_b(3, FUTEX_PRIVATE_FLAG);
	EXPECT_EQ("three waiters (requeued to a second word): wake 1", futex(&word_b, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0), 1);
	EXPECT_EQ("wake INT_MAX", futex(&word_b, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0), 2);
	EXPECT_EQ("wake again", futex(&word_b, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0), 0);
	join_waiters(3);
	EXPECT_EQ("all three returned 0", woken, 3);

	section("private and shared");
	struct waiter shared[1] = { { FUTEX_WAIT, 0 } };
	start_waiters(1, shared);
	gather_on_b(1, 0);
	EXPECT_EQ("a shared waiter is not woken by a private wake",
		  futex(&word_b, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0), 0);
	EXPECT_EQ("a shared wake wakes it", futex(&word_b, FUTEX_WAKE, 1, NULL, NULL, 0), 1);
	join_waiters(1);
	int *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	sh[0] = 0;
	sh[1] = 0;
	pid_t c = fork();
	if (c == 0) {
		__atomic_store_n(&sh[1], 1, __ATOMIC_SEQ_CST);
		long r = futex(&sh[0], FUTEX_WAIT, 0, NULL, NULL, 0);
		_exit(r == 0 ? 0 : 1);
	}
	while (__atomic_load_n(&sh[1], __ATOMIC_SEQ_CST) == 0)
		sched_yield();
	long n = 0;
	while ((n = futex(&sh[0], FUTEX_WAKE, 1, NULL, NULL, 0)) == 0)
		sched_yield();
	EXPECT_EQ("a waiter in another process on a MAP_SHARED page: woken", n, 1);
	EXPECT_STATUS("it", wait_status(c), "exited 0");

	section("bitsets");
	EXPECT_ERR("FUTEX_WAIT_BITSET with bitset 0", futex(&w, FUTEX_WAIT_BITSET, 5, NULL, NULL, 0), EINVAL);
	EXPECT_ERR("FUTEX_WAKE_BITSET with bitset 0", futex(&w, FUTEX_WAKE_BITSET, 1, NULL, NULL, 0), EINVAL);
	struct timespec abs;
	/* A microsecond ago (not a second: the clock may not have reached
	 * one when the program runs early after boot). */
	clock_gettime(CLOCK_MONOTONIC, &abs);
	if (abs.tv_nsec >= 1000) {
		abs.tv_nsec -= 1000;
	} else {
		abs.tv_sec -= 1;
		abs.tv_nsec += 999999000;
	}
	EXPECT_ERR("an absolute deadline in the past",
		   futex(&w, FUTEX_WAIT_BITSET, 5, &abs, NULL, -1), ETIMEDOUT);
	clock_gettime(CLOCK_REALTIME, &abs);
	abs.tv_nsec = 0;
	EXPECT_ERR("on CLOCK_REALTIME",
		   futex(&w, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 5, &abs, NULL, -1), ETIMEDOUT);
	struct waiter bits[2] = { { FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 1 },
				  { FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 2 } };
	start_waiters(2, bits);
	gather_on_b(2, FUTEX_PRIVATE_FLAG);
	EXPECT_EQ("wake bitset 4: nobody", futex(&word_b, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 4), 0);
	EXPECT_EQ("wake bitset 2: the second", futex(&word_b, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 2), 1);
	EXPECT_EQ("plain wake (all bits): the first", futex(&word_b, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0), 1);
	join_waiters(2);

	section("requeue");
	start_waiters(3, plain);
	gather_on_b(3, FUTEX_PRIVATE_FLAG);
	int word_c = 0;
	EXPECT_ERR("FUTEX_CMP_REQUEUE with a wrong value",
		   futex(&word_b, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 1, (void *)1L, &word_c, 7), EAGAIN);
	EXPECT_EQ("FUTEX_CMP_REQUEUE wake 1, move 1: woken + moved",
		  futex(&word_b, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 1, (void *)1L, &word_c, 0), 2);
	EXPECT_EQ("one left on the first word", futex(&word_b, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0), 1);
	EXPECT_EQ("one on the second", futex(&word_c, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0), 1);
	join_waiters(3);
	EXPECT_EQ("all three woke normally", woken, 3);
	EXPECT_ERR("FUTEX_CMP_REQUEUE with a negative count",
		   futex(&word_b, FUTEX_CMP_REQUEUE, -1, (void *)1L, &word_c, 0), EINVAL);
	/* Only the PI variant refuses a requeue onto the same word. */
	EXPECT_EQ("FUTEX_CMP_REQUEUE onto the same word, nobody waiting",
		  futex(&word_b, FUTEX_CMP_REQUEUE, 1, (void *)1L, &word_b, 0), 0);
	return abi_done();
}
