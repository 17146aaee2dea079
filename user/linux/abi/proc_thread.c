/*
 * Threads: clone with the flags pthreads and Rust's std use (CLONE_VM,
 * FS, FILES, SIGHAND, THREAD, SYSVSEM, SETTLS, PARENT_SETTID,
 * CHILD_CLEARTID), gettid, set_tid_address, thread exit against
 * exit_group, the status of a process whose leader exited first, tgkill to
 * one thread, clone as fork and with CLONE_VFORK, the flag errors, and
 * pthreads through musl.
 */
#include "abi.h"

#include <pthread.h>
#include <sched.h>
#include <spawn.h>

#define THREAD_FLAGS (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM)
#define ARCH_GET_FS 0x1003

static char stacks[4][65536] __attribute__((aligned(16)));

/* What a thread saw, written by the thread, read after it is gone. */
static struct {
	long pid, tid, fs, opened, handler_tid;
	int ctid, ptid, word;
} seen;

static int thread_ids(void *arg)
{
	(void)arg;
	seen.pid = sys0(SYS_getpid);
	seen.tid = sys0(SYS_gettid);
	seen.opened = sys3(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);
	return 0;
}

static int thread_tls(void *arg)
{
	(void)arg;
	long fs0;
	__asm__ volatile("mov %%fs:0, %0" : "=r"(fs0));
	sys2(SYS_arch_prctl, ARCH_GET_FS, &seen.fs);
	seen.tid = fs0; /* the word at the thread pointer: the TLS block's self pointer */
	return 0;
}

static int thread_exit_group(void *arg)
{
	(void)arg;
	sys1(SYS_exit_group, 9);
	return 0;
}

static int thread_exit_later(void *arg)
{
	(void)arg;
	/* Outlive the leader: wait until it has exited. */
	volatile int *word = &seen.word;
	while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == 0)
		sys0(SYS_sched_yield);
	struct timespec ts = { 0, 20000000 };
	sys2(SYS_nanosleep, &ts, NULL);
	return 5;
}

static void on_usr1(int s)
{
	(void)s;
	seen.handler_tid = sys0(SYS_gettid);
}

static int thread_wait_signal(void *arg)
{
	(void)arg;
	__atomic_store_n(&seen.word, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&seen.handler_tid, __ATOMIC_SEQ_CST) == 0)
		sys0(SYS_sched_yield);
	return 0;
}

static int thread_set_tid_address(void *arg)
{
	int *word = arg;
	seen.tid = sys1(SYS_set_tid_address, word);
	return 0;
}

/* A forked child: the leader exits first, a second thread later. */
static int leader_exits_first(void *arg)
{
	(void)arg;
	seen.word = 0;
	raw_clone(THREAD_FLAGS, stacks[1] + sizeof stacks[1], NULL, NULL, 0, thread_exit_later, NULL);
	__atomic_store_n(&seen.word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_exit, 3);
	return 0;
}

static int exit_group_from_thread(void *arg)
{
	(void)arg;
	raw_clone(THREAD_FLAGS, stacks[1] + sizeof stacks[1], NULL, NULL, 0, thread_exit_group, NULL);
	for (int i = 0; i < 100; i++)
		pause();
	return 1;
}

static int single_thread_cleartid(void *arg)
{
	int *word = arg;
	EXPECT_TRUE("set_tid_address returns the caller's tid", syscall(SYS_set_tid_address, word) == syscall(SYS_gettid));
	return 0;
}

static __thread int tls_var = 1;

static void *pthread_body(void *arg)
{
	tls_var = 2;
	seen.tid = syscall(SYS_gettid);
	seen.pid = getpid();
	return (char *)arg + 1;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return atoi(argv[1]);
	abi_init();
	pid_t me = getpid();

	section("a thread made by clone");
	memset(&seen, 0, sizeof seen);
	seen.ctid = -1;
	long tid = raw_clone(THREAD_FLAGS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
			     stacks[0] + sizeof stacks[0], &seen.ptid, &seen.ctid, 0, thread_ids, NULL);
	EXPECT_TRUE("clone returns the new thread's id", tid > 0);
	EXPECT_TRUE("CLONE_PARENT_SETTID stored it", seen.ptid == tid);
	/* CLONE_CHILD_CLEARTID: zero and a futex wake when the thread ends. */
	futex_wait_while(&seen.ctid, -1);
	futex_wait_while(&seen.ctid, (int)tid);
	EXPECT_EQ("CLONE_CHILD_CLEARTID cleared the word", seen.ctid, 0);
	EXPECT_TRUE("the thread's getpid is the process's", seen.pid == me);
	EXPECT_TRUE("its gettid is its own", seen.tid == tid && seen.tid != me);
	EXPECT_TRUE("the descriptor it opened is ours (CLONE_FILES)", seen.opened > 2 && fcntl(seen.opened, F_GETFD) == 0);
	close(seen.opened);
	EXPECT_TRUE("gettid of the leader is the pid", syscall(SYS_gettid) == me);

	section("CLONE_SETTLS");
	static unsigned long tls_block[8];
	tls_block[0] = (unsigned long)tls_block;
	memset(&seen, 0, sizeof seen);
	seen.ctid = -1;
	tid = raw_clone(THREAD_FLAGS | CLONE_SETTLS | CLONE_CHILD_CLEARTID, stacks[0] + sizeof stacks[0], NULL,
			&seen.ctid, (unsigned long)tls_block, thread_tls, NULL);
	futex_wait_while(&seen.ctid, -1);
	futex_wait_while(&seen.ctid, (int)tid);
	EXPECT_TRUE("the thread's FS base is the one given", seen.fs == (long)tls_block);
	EXPECT_TRUE("%fs:0 reads the TLS block", seen.tid == (long)tls_block);

	section("set_tid_address");
	int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	shared[0] = 77;
	EXPECT_STATUS("child", in_child(single_thread_cleartid, shared), "exited 0");
	/* The clear happens only when the memory is still shared with another
	 * thread: a single-threaded process leaves the word alone. */
	EXPECT_EQ("a single-threaded process's word after exit", shared[0], 77);
	memset(&seen, 0, sizeof seen);
	seen.ctid = -1;
	shared[1] = 55;
	tid = raw_clone(THREAD_FLAGS | CLONE_CHILD_CLEARTID, stacks[0] + sizeof stacks[0], NULL, &seen.ctid, 0,
			thread_set_tid_address, &shared[1]);
	futex_wait_while(&shared[1], 55);
	futex_wait_while(&shared[1], (int)tid);
	EXPECT_TRUE("set_tid_address in a thread returns its tid", seen.tid == tid);
	EXPECT_EQ("the word it named is cleared at its exit", shared[1], 0);
	EXPECT_EQ("the word given to clone is not", seen.ctid, -1);

	section("thread exit and exit_group");
	EXPECT_STATUS("exit_group from a second thread ends the process", in_child(exit_group_from_thread, NULL),
		      "exited 9");
	/* The last thread's code is the status, though the leader exited first. */
	EXPECT_STATUS("leader exits 3, the last thread 5", in_child(leader_exits_first, NULL), "exited 5");

	section("tgkill to one thread");
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigaction(SIGUSR1, &sa, NULL);
	memset(&seen, 0, sizeof seen);
	seen.ctid = -1;
	tid = raw_clone(THREAD_FLAGS | CLONE_CHILD_CLEARTID, stacks[0] + sizeof stacks[0], NULL, &seen.ctid, 0,
			thread_wait_signal, NULL);
	while (__atomic_load_n(&seen.word, __ATOMIC_SEQ_CST) == 0)
		sched_yield();
	EXPECT_OK("tgkill(pid, tid, SIGUSR1)", syscall(SYS_tgkill, me, tid, SIGUSR1));
	futex_wait_while(&seen.ctid, -1);
	futex_wait_while(&seen.ctid, (int)tid);
	EXPECT_TRUE("the handler ran in that thread", seen.handler_tid == tid);
	/* The word is cleared in the thread's exit, a moment before its id is freed. */
	long gone = 0;
	for (int i = 0; i < 10000 && gone == 0; i++) {
		gone = syscall(SYS_tgkill, me, tid, 0);
		if (gone == 0)
			usleep(100);
	}
	EXPECT_STR("tgkill of an ended thread, soon after", gone == -1 ? errname(errno) : "still there", "ESRCH");
	EXPECT_ERR("tgkill with the wrong process", syscall(SYS_tgkill, 1, me, 0), ESRCH);
	EXPECT_ERR("tgkill with a bad signal", syscall(SYS_tgkill, me, me, 65), EINVAL);
	EXPECT_ERR("tgkill with tgid 0", syscall(SYS_tgkill, 0, me, 0), EINVAL);
	EXPECT_OK("tgkill to ourselves, signal 0", syscall(SYS_tgkill, me, me, 0));
	signal(SIGUSR1, SIG_DFL);

	section("clone as fork");
	long pid = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
	if (pid == 0)
		_exit(4);
	EXPECT_STATUS("clone(SIGCHLD) child", wait_status(pid), "exited 4");
	int ctid = 0;
	pid = syscall(SYS_clone, CLONE_CHILD_SETTID | SIGCHLD, 0, NULL, &ctid, 0);
	if (pid == 0)
		_exit(ctid == syscall(SYS_gettid) ? 0 : 1);
	EXPECT_STATUS("CLONE_CHILD_SETTID in the child's copy", wait_status(pid), "exited 0");
	EXPECT_EQ("and not in the parent's", ctid, 0);
	/* No exit signal: a "clone child" that only __WALL or __WCLONE waits for. */
	pid = syscall(SYS_clone, 0, 0, NULL, NULL, 0);
	if (pid == 0)
		_exit(6);
	int st;
	EXPECT_ERR("wait4 without __WALL does not see it", wait4(pid, &st, 0, NULL), ECHILD);
	EXPECT_TRUE("wait4 with __WALL does", wait4(pid, &st, __WALL, NULL) == pid);
	EXPECT_STATUS("its status", st, "exited 6");

	section("posix_spawn (CLONE_VM | CLONE_VFORK)");
	pid_t sp;
	char *spargv[] = { "x", "12", NULL };
	EXPECT_EQ("posix_spawn", posix_spawn(&sp, self_exe(), NULL, NULL, spargv, spargv + 2), 0);
	EXPECT_STATUS("spawned program", wait_status(sp), "exited 12");

	section("flag errors");
	EXPECT_ERR("CLONE_SIGHAND without CLONE_VM", syscall(SYS_clone, CLONE_SIGHAND, 0, NULL, NULL, 0), EINVAL);
	EXPECT_ERR("CLONE_THREAD without CLONE_SIGHAND", syscall(SYS_clone, CLONE_THREAD | CLONE_VM, 0, NULL, NULL, 0),
		   EINVAL);
	EXPECT_ERR("CLONE_NEWNS with CLONE_FS", syscall(SYS_clone, CLONE_NEWNS | CLONE_FS, 0, NULL, NULL, 0), EINVAL);

	section("pthreads");
	pthread_t t;
	void *ret;
	memset(&seen, 0, sizeof seen);
	EXPECT_EQ("pthread_create", pthread_create(&t, NULL, pthread_body, (char *)100), 0);
	EXPECT_EQ("pthread_join", pthread_join(t, &ret), 0);
	EXPECT_TRUE("the value it returned", ret == (char *)101);
	EXPECT_TRUE("its pid is ours, its tid is not", seen.pid == me && seen.tid != me && seen.tid > 0);
	EXPECT_EQ("its thread-local variable was its own", tls_var, 1);
	return abi_done();
}
