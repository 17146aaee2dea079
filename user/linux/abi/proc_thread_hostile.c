/*
 * Threads used against the system: a process killed, or ended by
 * exit_group, while its threads run (on other CPUs when there are some)
 * and wait in calls of every kind (a pipe, a futex, a sleep, a signal
 * wait); clone with a stack or a thread pointer that cannot be used;
 * threads made until the system refuses one, then every one of them
 * ended; futex on memory that is not there.
 */
#include "abi.h"

#include <sched.h>
#include <time.h>

#define THREAD_FLAGS (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM)

static char stacks[6][16384] __attribute__((aligned(16)));
static int pipe_fds[2];
static int never;
static volatile int started;

static int spin(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	for (;;)
		__asm__ volatile("" ::: "memory");
	return 0;
}

static int blocked_read(void *arg)
{
	(void)arg;
	char c;
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	sys3(SYS_read, pipe_fds[0], &c, 1);
	return 0;
}

static int blocked_futex(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	for (;;)
		sys6(SYS_futex, (long)&never, 0 /* FUTEX_WAIT */, 0, 0, 0, 0);
	return 0;
}

static int asleep(void *arg)
{
	(void)arg;
	struct timespec ts = { 1000, 0 };
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	sys2(SYS_nanosleep, &ts, NULL);
	return 0;
}

static int paused(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST);
	for (;;)
		sys0(SYS_pause);
	return 0;
}

/* A process whose threads spin and wait in every way; then it waits to
 * be killed (arg 0) or ends them all with exit_group (arg 1). */
static int busy_family(void *arg)
{
	int (*bodies[])(void *) = { spin, spin, blocked_read, blocked_futex, asleep, paused };
	if (pipe(pipe_fds) != 0)
		return 100;
	started = 0;
	for (int i = 0; i < 6; i++)
		if (raw_clone(THREAD_FLAGS, stacks[i] + sizeof stacks[i], NULL, NULL, 0, bodies[i], NULL) < 0)
			return 101;
	while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 6)
		sched_yield();
	/* Let them reach their waits. */
	struct timespec ts = { 0, 30000000 };
	nanosleep(&ts, NULL);
	if (arg)
		sys1(SYS_exit_group, 7);
	for (;;)
		sys0(SYS_pause);
	return 0;
}

/* The new thread returns from the system call onto `stack` and faults
 * at its first use of it: the whole process dies of SIGSEGV. */
static int clone_on_stack(void *stack)
{
	long r = sys6(SYS_clone, THREAD_FLAGS, (long)stack, 0, 0, 0, 0);
	if (r < 0)
		return 50;
	struct timespec ts = { 5, 0 };
	nanosleep(&ts, NULL);
	return 51;
}

/* 0 if a thread with thread pointer `tls` was made, else clone's errno. */
static int clone_tls(void *tls)
{
	long r = raw_clone(THREAD_FLAGS | CLONE_SETTLS, stacks[0] + sizeof stacks[0], NULL, NULL, (unsigned long)tls,
			   spin, NULL);
	return r < 0 ? errno : 0;
}

static int until_refused(void *arg)
{
	(void)arg;
	/* Tiny stacks: the threads only wait. */
	enum { MAX = 5000, STACK = 2048 };
	char *mem = mmap(NULL, (size_t)MAX * STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static int ctid[MAX];
	if (mem == MAP_FAILED)
		return 60;
	/* Every stack page present first: a page fault once the system's
	 * memory for threads is used up could not be served (on Tessera the
	 * page table it needs is charged where the threads are). */
	memset(mem, 0, (size_t)MAX * STACK);
	int made = 0, err = 0;
	for (; made < MAX; made++) {
		ctid[made] = -1;
		long r = raw_clone(THREAD_FLAGS | CLONE_CHILD_CLEARTID, mem + (size_t)(made + 1) * STACK, NULL,
				   &ctid[made], 0, blocked_futex, NULL);
		if (r < 0) {
			err = errno;
			break;
		}
	}
	/* Refused with EAGAIN, or (Linux, with more memory per thread to
	 * spare) all made: either way the process goes on. */
	if (made < MAX && err != EAGAIN)
		return 61;
	if (made < 100)
		return 62;
	/* Returning ends the process and every thread waiting in it. */
	return 0;
}

int main(void)
{
	abi_init();

	section("a process ended while its threads run and wait");
	pid_t c = spawn_fn(busy_family, (void *)0);
	struct timespec ts = { 0, 200000000 };
	nanosleep(&ts, NULL);
	EXPECT_OK("kill(child, SIGKILL)", kill(c, SIGKILL));
	EXPECT_STATUS("the child", wait_status(c), "killed by SIGKILL");
	EXPECT_STATUS("exit_group while threads run and wait", in_child(busy_family, (void *)1), "exited 7");

	section("clone with stacks and thread pointers that cannot be used");
	EXPECT_STATUS("a stack in unmapped memory", in_child(clone_on_stack, (void *)0x10000), "killed by SIGSEGV");
	EXPECT_STATUS("a stack at a kernel address", in_child(clone_on_stack, (void *)0xffff800000001000UL),
		      "killed by SIGSEGV");
	EXPECT_STATUS("a thread pointer above user space", in_child(clone_tls, (void *)0x800000000000UL), "exited 1");
	EXPECT_STATUS("a non-canonical thread pointer", in_child(clone_tls, (void *)0x8000000000000000UL), "exited 1");

	section("threads until the system refuses one");
	EXPECT_STATUS("made until EAGAIN (or 5000), then all ended", in_child(until_refused, NULL), "exited 0");
	EXPECT_STATUS("the next process makes threads as before", in_child(clone_tls, (void *)stacks[1]), "exited 0");

	section("futex on memory that is not there");
	EXPECT_ERR("FUTEX_WAIT", syscall(SYS_futex, BAD_PTR, 0, 0, NULL, NULL, 0), EFAULT);
	EXPECT_ERR("FUTEX_WAKE", syscall(SYS_futex, BAD_PTR, 1, 1, NULL, NULL, 0), EFAULT);
	EXPECT_ERR("FUTEX_CMP_REQUEUE to it", syscall(SYS_futex, &never, 4, 1, (void *)1L, BAD_PTR, 0), EFAULT);
	EXPECT_ERR("a kernel address", syscall(SYS_futex, (void *)0xffff800000000000UL, 0, 0, NULL, NULL, 0), EFAULT);
	return abi_done();
}
