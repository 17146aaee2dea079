/*
 * Each thread's own signal state: a pending set of its own (tgkill) beside
 * the process's (kill), its mask, its alternate stack. A signal sent to a
 * thread that blocks it waits for that thread alone; sigpending is the
 * union of the thread's and the process's; sigtimedwait takes from both; a
 * signal for the process goes to a thread that does not block it; a new
 * thread starts with nothing pending, its creator's mask and no alternate
 * stack; fork keeps the forking thread's; a signal interrupts the call of
 * the thread it was sent to (one waiting in another process's wait), not
 * another's. Hostile: tgkill at threads that exit meanwhile, bad
 * sigaltstack arguments in a thread, RLIMIT_SIGPENDING across threads.
 */
#include "abi.h"

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

static pid_t main_tid;
/* The tid each handler ran on, by signal. */
static volatile pid_t ran_on[65];
static volatile int ran_count[65];
static char *alt_seen[65];

static void note(int s, siginfo_t *si, void *ctx)
{
	(void)si;
	(void)ctx;
	char here;
	ran_on[s] = (pid_t)syscall(SYS_gettid);
	alt_seen[s] = &here;
	__atomic_fetch_add(&ran_count[s], 1, __ATOMIC_SEQ_CST);
}

static void set_mask(int how, int s)
{
	sigset_t set = sigset_of(s);
	pthread_sigmask(how, &set, NULL);
}

static int pending_has(int s)
{
	sigset_t set;
	sigemptyset(&set);
	if (sigpending(&set) != 0)
		return -1;
	return sigismember(&set, s);
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* A thread that reports, on request, through these words. */
struct peer {
	pthread_t th;
	volatile pid_t tid;
	volatile int step, done;
	volatile int seen[8];
};

static void wait_step(struct peer *p, int step)
{
	while (__atomic_load_n(&p->step, __ATOMIC_SEQ_CST) < step)
		nap_ms(1);
}

static void wait_done(struct peer *p, int done)
{
	while (__atomic_load_n(&p->done, __ATOMIC_SEQ_CST) < done)
		nap_ms(1);
}

/* ---- a blocked thread-directed signal waits for its thread alone ---- */

static void *blocked_peer(void *arg)
{
	struct peer *p = arg;
	p->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&p->done, 1, __ATOMIC_SEQ_CST);
	wait_step(p, 1);
	/* SIGUSR1 was sent to this thread, which blocks it. */
	p->seen[0] = pending_has(SIGUSR1);
	p->seen[1] = ran_count[SIGUSR1];
	set_mask(SIG_UNBLOCK, SIGUSR1);
	p->seen[2] = ran_count[SIGUSR1];
	p->seen[3] = ran_on[SIGUSR1] == p->tid;
	p->seen[4] = pending_has(SIGUSR1);
	__atomic_store_n(&p->done, 2, __ATOMIC_SEQ_CST);
	return NULL;
}

static void directed_blocked(void)
{
	section("a blocked signal sent to one thread");
	handle_signal_info(SIGUSR1, note, 0);
	ran_count[SIGUSR1] = 0;
	set_mask(SIG_BLOCK, SIGUSR1);
	struct peer p = { 0 };
	pthread_create(&p.th, NULL, blocked_peer, &p);
	wait_done(&p, 1);
	/* The main thread takes SIGUSR1 again; the peer still blocks it. */
	set_mask(SIG_UNBLOCK, SIGUSR1);
	EXPECT_OK("tgkill the peer", syscall(SYS_tgkill, getpid(), p.tid, SIGUSR1));
	/* Calls of this thread, served and returned: none may take it. */
	for (int i = 0; i < 20; i++) {
		getppid();
		nap_ms(1);
	}
	EXPECT_EQ("handlers run while the peer blocks it", ran_count[SIGUSR1], 0);
	EXPECT_EQ("pending for the main thread", pending_has(SIGUSR1), 0);
	__atomic_store_n(&p.step, 1, __ATOMIC_SEQ_CST);
	pthread_join(p.th, NULL);
	EXPECT_EQ("pending for the peer", p.seen[0], 1);
	EXPECT_EQ("handlers run before it unblocks", p.seen[1], 0);
	EXPECT_EQ("handlers run as it unblocks", p.seen[2], 1);
	EXPECT_TRUE("the handler ran on the peer", p.seen[3]);
	EXPECT_EQ("pending for the peer after", p.seen[4], 0);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- sigpending and sigtimedwait: the thread's and the process's ---- */

static void *union_peer(void *arg)
{
	struct peer *p = arg;
	p->tid = (pid_t)syscall(SYS_gettid);
	/* Created with SIGUSR2 and SIGRTMIN blocked (its creator's mask). */
	sigset_t cur;
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	p->seen[0] = sigismember(&cur, SIGUSR2) && sigismember(&cur, SIGRTMIN);
	/* Nothing of the creator's own pending set. */
	p->seen[1] = pending_has(SIGRTMIN);
	__atomic_store_n(&p->done, 1, __ATOMIC_SEQ_CST);
	wait_step(p, 1);
	/* The process's SIGUSR2 is pending here too. */
	p->seen[2] = pending_has(SIGUSR2);
	p->seen[3] = pending_has(SIGRTMIN);
	/* Taken by this thread's sigtimedwait; then gone for both. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	struct timespec zero = { 0, 0 };
	siginfo_t si;
	p->seen[4] = sigtimedwait(&set, &si, &zero);
	p->seen[5] = si.si_code == SI_USER;
	p->seen[6] = sigtimedwait(&set, &si, &zero) < 0 ? errno : 0;
	__atomic_store_n(&p->done, 2, __ATOMIC_SEQ_CST);
	return NULL;
}

static void pending_union(void)
{
	section("sigpending and sigtimedwait: the thread's and the process's");
	set_mask(SIG_BLOCK, SIGUSR2);
	set_mask(SIG_BLOCK, SIGRTMIN);
	EXPECT_OK("tgkill the main thread SIGRTMIN", syscall(SYS_tgkill, getpid(), main_tid, SIGRTMIN));
	struct peer p = { 0 };
	pthread_create(&p.th, NULL, union_peer, &p);
	wait_done(&p, 1);
	EXPECT_OK("kill the process SIGUSR2", kill(getpid(), SIGUSR2));
	EXPECT_EQ("SIGUSR2 pending here", pending_has(SIGUSR2), 1);
	EXPECT_EQ("SIGRTMIN pending here", pending_has(SIGRTMIN), 1);
	__atomic_store_n(&p.step, 1, __ATOMIC_SEQ_CST);
	pthread_join(p.th, NULL);
	EXPECT_TRUE("a new thread has its creator's mask", p.seen[0]);
	EXPECT_EQ("a new thread has nothing pending", p.seen[1], 0);
	EXPECT_EQ("the process's SIGUSR2 pending in the peer", p.seen[2], 1);
	EXPECT_EQ("the main thread's SIGRTMIN pending in the peer", p.seen[3], 0);
	EXPECT_EQ("the peer's sigtimedwait takes SIGUSR2", p.seen[4], SIGUSR2);
	EXPECT_TRUE("with kill's code", p.seen[5]);
	EXPECT_STR("and then finds none", errname(p.seen[6]), "EAGAIN");
	EXPECT_EQ("SIGUSR2 pending here after", pending_has(SIGUSR2), 0);
	/* The main thread's own, taken by its own wait. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	struct timespec zero = { 0, 0 };
	siginfo_t si;
	EXPECT_EQ("sigtimedwait takes this thread's SIGRTMIN", sigtimedwait(&set, &si, &zero), SIGRTMIN);
	EXPECT_TRUE("with tkill's code", si.si_code == SI_TKILL);
	set_mask(SIG_UNBLOCK, SIGUSR2);
	set_mask(SIG_UNBLOCK, SIGRTMIN);
}

/* ---- a signal for the process goes to a thread that takes it ---- */

static void *taker_peer(void *arg)
{
	struct peer *p = arg;
	p->tid = (pid_t)syscall(SYS_gettid);
	set_mask(SIG_UNBLOCK, SIGUSR1);
	__atomic_store_n(&p->done, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 10000 && !ran_count[SIGUSR1]; i++)
		nap_ms(1);
	__atomic_store_n(&p->done, 2, __ATOMIC_SEQ_CST);
	return NULL;
}

static void process_directed(void)
{
	section("a signal for the process, blocked by the main thread");
	handle_signal_info(SIGUSR1, note, 0);
	ran_count[SIGUSR1] = 0;
	ran_on[SIGUSR1] = 0;
	set_mask(SIG_BLOCK, SIGUSR1);
	struct peer p = { 0 };
	pthread_create(&p.th, NULL, taker_peer, &p);
	wait_done(&p, 1);
	EXPECT_OK("kill the process", kill(getpid(), SIGUSR1));
	pthread_join(p.th, NULL);
	EXPECT_EQ("handled once", ran_count[SIGUSR1], 1);
	EXPECT_TRUE("by the thread that does not block it", ran_on[SIGUSR1] == p.tid);
	EXPECT_EQ("pending here after", pending_has(SIGUSR1), 0);
	set_mask(SIG_UNBLOCK, SIGUSR1);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- a mask changed while a signal comes: the signal is not lost ---- */

#define RACE_ROUNDS 200

static void *race_sender(void *arg)
{
	struct peer *p = arg;
	for (int i = 1; i <= RACE_ROUNDS; i++) {
		wait_step(p, i);
		/* Sent before, during or after the main thread's unblocking
		 * (odd rounds), or while it blocks it (even ones). */
		for (volatile int spin = 0; spin < (i * 7919) % 20000; spin++)
			;
		syscall(SYS_tgkill, getpid(), main_tid, SIGUSR2);
		__atomic_store_n(&p->done, i, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void mask_race(void)
{
	section("a thread unblocking a signal as it is sent");
	handle_signal_info(SIGUSR2, note, 0);
	ran_count[SIGUSR2] = 0;
	struct peer p = { 0 };
	pthread_create(&p.th, NULL, race_sender, &p);
	int lost = 0;
	for (int i = 1; i <= RACE_ROUNDS && !lost; i++) {
		set_mask(SIG_BLOCK, SIGUSR2);
		__atomic_store_n(&p.step, i, __ATOMIC_SEQ_CST);
		if (i % 2 == 0) {
			/* Sent while blocked, then unblocked. */
			wait_done(&p, i);
			nap_ms(1);
		}
		for (volatile int spin = 0; spin < (i * 104729) % 20000; spin++)
			;
		set_mask(SIG_UNBLOCK, SIGUSR2);
		wait_done(&p, i);
		/* Unblocked and sent: handled without another call of this
		 * thread that could deliver it (nanosleep waits only). */
		for (int t = 0; t < 2000 && ran_count[SIGUSR2] < i; t++)
			nap_ms(1);
		lost = ran_count[SIGUSR2] < i;
	}
	__atomic_store_n(&p.step, RACE_ROUNDS, __ATOMIC_SEQ_CST);
	pthread_join(p.th, NULL);
	EXPECT_EQ("handled, each", ran_count[SIGUSR2], RACE_ROUNDS);
	signal(SIGUSR2, SIG_DFL);
}

/* ---- alternate stacks are each thread's ---- */

static char main_alt[65536], peer_alt[65536];

static void *alt_peer(void *arg)
{
	struct peer *p = arg;
	p->tid = (pid_t)syscall(SYS_gettid);
	stack_t ss;
	sigaltstack(NULL, &ss);
	p->seen[0] = ss.ss_flags == SS_DISABLE;
	/* Bad arguments change nothing (the kernel's checks, not libc's). */
	stack_t bad = { .ss_sp = peer_alt, .ss_size = 1024, .ss_flags = 0 };
	p->seen[1] = syscall(SYS_sigaltstack, &bad, NULL) < 0 ? errno : 0;
	bad.ss_size = sizeof peer_alt;
	bad.ss_flags = 0x1234;
	p->seen[2] = syscall(SYS_sigaltstack, &bad, NULL) < 0 ? errno : 0;
	p->seen[3] = syscall(SYS_sigaltstack, BAD_PTR, NULL) < 0 ? errno : 0;
	p->seen[4] = syscall(SYS_sigaltstack, NULL, BAD_PTR) < 0 ? errno : 0;
	sigaltstack(NULL, &ss);
	p->seen[5] = ss.ss_flags == SS_DISABLE;
	stack_t mine = { .ss_sp = peer_alt, .ss_size = sizeof peer_alt, .ss_flags = 0 };
	p->seen[6] = sigaltstack(&mine, NULL);
	__atomic_store_n(&p->done, 1, __ATOMIC_SEQ_CST);
	wait_step(p, 1);
	raise(SIGUSR2);
	p->seen[7] = alt_seen[SIGUSR2] >= peer_alt && alt_seen[SIGUSR2] < peer_alt + sizeof peer_alt;
	__atomic_store_n(&p->done, 2, __ATOMIC_SEQ_CST);
	wait_step(p, 2);
	return NULL;
}

static void alt_stacks(void)
{
	section("alternate stacks");
	handle_signal_info(SIGUSR2, note, SA_ONSTACK);
	stack_t ss = { .ss_sp = main_alt, .ss_size = sizeof main_alt, .ss_flags = 0 };
	EXPECT_OK("the main thread's", sigaltstack(&ss, NULL));
	struct peer p = { 0 };
	pthread_create(&p.th, NULL, alt_peer, &p);
	wait_done(&p, 1);
	EXPECT_TRUE("a new thread has none", p.seen[0]);
	EXPECT_STR("too small", errname(p.seen[1]), "ENOMEM");
	EXPECT_STR("bad flags", errname(p.seen[2]), "EINVAL");
	EXPECT_STR("unreadable", errname(p.seen[3]), "EFAULT");
	EXPECT_STR("old one unwritable", errname(p.seen[4]), "EFAULT");
	EXPECT_TRUE("still none after", p.seen[5]);
	EXPECT_EQ("the peer's own", p.seen[6], 0);
	stack_t now;
	sigaltstack(NULL, &now);
	EXPECT_TRUE("the main thread's unchanged", now.ss_sp == main_alt && now.ss_size == sizeof main_alt);
	raise(SIGUSR2);
	EXPECT_TRUE("the main thread's handler on its stack",
		    alt_seen[SIGUSR2] >= main_alt && alt_seen[SIGUSR2] < main_alt + sizeof main_alt);
	__atomic_store_n(&p.step, 1, __ATOMIC_SEQ_CST);
	wait_done(&p, 2);
	EXPECT_TRUE("the peer's handler on its stack", p.seen[7]);
	__atomic_store_n(&p.step, 2, __ATOMIC_SEQ_CST);
	pthread_join(p.th, NULL);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	signal(SIGUSR2, SIG_DFL);
}

/* ---- fork keeps the forking thread's alternate stack ---- */

static int fork_child(void *arg)
{
	(void)arg;
	stack_t ss;
	sigaltstack(NULL, &ss);
	return ss.ss_sp == peer_alt && ss.ss_flags == 0 ? 0 : 1;
}

static void *fork_peer(void *arg)
{
	struct peer *p = arg;
	stack_t mine = { .ss_sp = peer_alt, .ss_size = sizeof peer_alt, .ss_flags = 0 };
	sigaltstack(&mine, NULL);
	p->seen[0] = in_child(fork_child, NULL);
	return NULL;
}

static void fork_keeps(void)
{
	section("fork");
	struct peer p = { 0 };
	pthread_create(&p.th, NULL, fork_peer, &p);
	pthread_join(p.th, NULL);
	EXPECT_STATUS("a thread's child has its alternate stack", p.seen[0], "exited 0");
}

/* ---- a signal interrupts the wait of the thread it was sent to ---- */

static int sleeper(void *arg)
{
	nap_ms((int)(long)arg);
	return 0;
}

struct waiter {
	struct peer p;
	pid_t child;
	volatile long r;
	volatile int e;
};

static void *wait_peer(void *arg)
{
	struct waiter *w = arg;
	w->p.tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&w->p.done, 1, __ATOMIC_SEQ_CST);
	int st;
	w->r = waitpid(w->child, &st, 0);
	w->e = errno;
	__atomic_store_n(&w->p.done, 2, __ATOMIC_SEQ_CST);
	return NULL;
}

/* The third thread: interrupts the peer's wait, then ends the main
 * thread's child. */
struct sender {
	struct waiter *peer;
	pid_t other;
};

static void *sender_peer(void *arg)
{
	struct sender *s = arg;
	/* A moment for both waits to begin. */
	nap_ms(300);
	syscall(SYS_tgkill, getpid(), s->peer->p.tid, SIGUSR1);
	wait_done(&s->peer->p, 2);
	nap_ms(100);
	kill(s->other, SIGKILL);
	return NULL;
}

static void interrupt_one(void)
{
	section("a signal interrupts its thread's wait");
	handle_signal_info(SIGUSR1, note, 0);
	ran_count[SIGUSR1] = 0;
	ran_on[SIGUSR1] = 0;
	/* Two children: the peer waits for one, the main thread for the other. */
	struct waiter peer = { 0 };
	peer.child = spawn_fn(sleeper, (void *)20000L);
	pid_t mine = spawn_fn(sleeper, (void *)20000L);
	pthread_create(&peer.p.th, NULL, wait_peer, &peer);
	wait_done(&peer.p, 1);
	struct sender snd = { &peer, mine };
	pthread_t s;
	pthread_create(&s, NULL, sender_peer, &snd);
	int st = 0;
	long r = waitpid(mine, &st, 0);
	int e = errno;
	pthread_join(s, NULL);
	pthread_join(peer.p.th, NULL);
	EXPECT_STR("the peer's wait", peer.r < 0 ? errname(peer.e) : "returned", "EINTR");
	EXPECT_TRUE("its handler ran on the peer", ran_on[SIGUSR1] == peer.p.tid);
	EXPECT_STR("the main thread's wait", r == mine ? "its child" : errname(e), "its child");
	EXPECT_STATUS("which was killed", st, "killed by SIGKILL");
	kill(peer.child, SIGKILL);
	wait_status(peer.child);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- tgkill at threads that come and go ---- */

static __thread int is_target;
static volatile int wrong_thread, stop_storm;
static volatile pid_t victim;

static void storm_note(int s)
{
	(void)s;
	if (!is_target)
		wrong_thread++;
}

static void *short_lived(void *arg)
{
	(void)arg;
	is_target = 1;
	__atomic_store_n(&victim, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	for (int i = 0; i < 50; i++)
		getppid();
	return NULL;
}

static void *storm_sender(void *arg)
{
	long *counts = arg;
	while (!__atomic_load_n(&stop_storm, __ATOMIC_SEQ_CST)) {
		pid_t t = __atomic_load_n(&victim, __ATOMIC_SEQ_CST);
		if (t == 0) {
			sched_yield();
			continue;
		}
		long r = syscall(SYS_tgkill, getpid(), t, SIGUSR1);
		if (r == 0)
			counts[0]++;
		else if (errno == ESRCH)
			counts[1]++;
		else
			counts[2]++;
		sched_yield();
	}
	return NULL;
}

static void exiting_targets(void)
{
	section("tgkill at threads that exit meanwhile");
	handle_signal(SIGUSR1, storm_note, SA_RESTART);
	long counts[3] = { 0, 0, 0 };
	pthread_t s;
	pthread_create(&s, NULL, storm_sender, counts);
	for (int i = 0; i < 200; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, short_lived, NULL) == 0)
			pthread_join(t, NULL);
	}
	__atomic_store_n(&stop_storm, 1, __ATOMIC_SEQ_CST);
	pthread_join(s, NULL);
	EXPECT_EQ("tgkill's other errors", counts[2], 0);
	EXPECT_TRUE("some signals sent", counts[0] + counts[1] > 0);
	EXPECT_EQ("handled by a thread never sent one", wrong_thread, 0);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- RLIMIT_SIGPENDING counts every thread's ---- */

static void *limit_peer(void *arg)
{
	struct peer *p = arg;
	p->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&p->done, 1, __ATOMIC_SEQ_CST);
	wait_step(p, 1);
	set_mask(SIG_UNBLOCK, SIGRTMIN);
	p->seen[0] = ran_count[SIGRTMIN];
	p->seen[1] = ran_on[SIGRTMIN] == p->tid;
	__atomic_store_n(&p->done, 2, __ATOMIC_SEQ_CST);
	return NULL;
}

static void pending_limit(void)
{
	section("RLIMIT_SIGPENDING across threads");
	handle_signal_info(SIGRTMIN, note, 0);
	ran_count[SIGRTMIN] = 0;
	struct rlimit old, lim;
	SETUP(getrlimit(RLIMIT_SIGPENDING, &old));
	lim.rlim_cur = 3;
	lim.rlim_max = old.rlim_max;
	set_mask(SIG_BLOCK, SIGRTMIN);
	struct peer p = { 0 };
	pthread_create(&p.th, NULL, limit_peer, &p);
	wait_done(&p, 1);
	SETUP(setrlimit(RLIMIT_SIGPENDING, &lim));
	EXPECT_OK("tgkill the peer 1", syscall(SYS_tgkill, getpid(), p.tid, SIGRTMIN));
	EXPECT_OK("tgkill the peer 2", syscall(SYS_tgkill, getpid(), p.tid, SIGRTMIN));
	EXPECT_OK("tgkill the main thread", syscall(SYS_tgkill, getpid(), main_tid, SIGRTMIN));
	EXPECT_ERR("tgkill the peer past the limit", syscall(SYS_tgkill, getpid(), p.tid, SIGRTMIN), EAGAIN);
	union sigval v = { .sival_int = 1 };
	EXPECT_ERR("sigqueue past the limit", sigqueue(getpid(), SIGRTMIN, v), EAGAIN);
	SETUP(setrlimit(RLIMIT_SIGPENDING, &old));
	__atomic_store_n(&p.step, 1, __ATOMIC_SEQ_CST);
	pthread_join(p.th, NULL);
	EXPECT_EQ("the peer's two delivered as it unblocks", p.seen[0], 2);
	EXPECT_TRUE("on the peer", p.seen[1]);
	set_mask(SIG_UNBLOCK, SIGRTMIN);
	EXPECT_EQ("the main thread's then", ran_count[SIGRTMIN], 3);
	EXPECT_TRUE("on the main thread", ran_on[SIGRTMIN] == main_tid);
	signal(SIGRTMIN, SIG_DFL);
}

/* ---- every register of interrupted code comes back ---- */

static volatile int regs_handled, regs_stop;

static void regs_note(int s)
{
	(void)s;
	regs_handled++;
}

/* Holds a known value in every general register but rsp and rax through
 * `iters` turns of a loop (rax counts them): the registers whose value
 * changed, as a bit mask (0 when all came back as they were). */
static long hold_registers(long iters)
{
	long bad;
	__asm__ volatile("sub $128, %%rsp\n\t" /* past the red zone */
			 "push %%rbx\n\tpush %%rbp\n\tpush %%r12\n\t"
			 "push %%r13\n\tpush %%r14\n\tpush %%r15\n\t"
			 "mov $0x1111, %%rbx\n\tmov $0x2222, %%rcx\n\t"
			 "mov $0x3333, %%rdx\n\tmov $0x4444, %%rsi\n\t"
			 "mov $0x5555, %%rdi\n\tmov $0x6666, %%r8\n\t"
			 "mov $0x7777, %%r9\n\tmov $0x8888, %%r10\n\t"
			 "mov $0x9999, %%r11\n\tmov $0xaaaa, %%r12\n\t"
			 "mov $0xbbbb, %%r13\n\tmov $0xcccc, %%r14\n\t"
			 "mov $0xdddd, %%r15\n\tmov $0xeeee, %%rbp\n\t"
			 "1: dec %%rax\n\tjnz 1b\n\t"
			 "xor $0x1111, %%rbx\n\tsetnz %%al\n\t"
			 "xor $0x2222, %%rcx\n\tsetnz %%ah\n\t"
			 "or %%rdx, %%rdx\n\t"
			 "xor $0x3333, %%rdx\n\tjz 2f\n\tor $0x4, %%rax\n2:\n\t"
			 "xor $0x4444, %%rsi\n\tjz 2f\n\tor $0x8, %%rax\n2:\n\t"
			 "xor $0x5555, %%rdi\n\tjz 2f\n\tor $0x10, %%rax\n2:\n\t"
			 "xor $0x6666, %%r8\n\tjz 2f\n\tor $0x20, %%rax\n2:\n\t"
			 "xor $0x7777, %%r9\n\tjz 2f\n\tor $0x40, %%rax\n2:\n\t"
			 "xor $0x8888, %%r10\n\tjz 2f\n\tor $0x80, %%rax\n2:\n\t"
			 "xor $0x9999, %%r11\n\tjz 2f\n\tor $0x10000, %%rax\n2:\n\t"
			 "xor $0xaaaa, %%r12\n\tjz 2f\n\tor $0x20000, %%rax\n2:\n\t"
			 "xor $0xbbbb, %%r13\n\tjz 2f\n\tor $0x40000, %%rax\n2:\n\t"
			 "xor $0xcccc, %%r14\n\tjz 2f\n\tor $0x80000, %%rax\n2:\n\t"
			 "xor $0xdddd, %%r15\n\tjz 2f\n\tor $0x100000, %%rax\n2:\n\t"
			 "xor $0xeeee, %%rbp\n\tjz 2f\n\tor $0x200000, %%rax\n2:\n\t"
			 "pop %%r15\n\tpop %%r14\n\tpop %%r13\n\t"
			 "pop %%r12\n\tpop %%rbp\n\tpop %%rbx\n\t"
			 "add $128, %%rsp"
			 : "=a"(bad)
			 : "a"(iters)
			 : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
	return bad;
}

static void *regs_sender(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&regs_stop, __ATOMIC_SEQ_CST)) {
		syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
		nap_ms(2);
	}
	return NULL;
}

static void registers_kept(void)
{
	section("registers of interrupted code");
	handle_signal(SIGUSR1, regs_note, SA_RESTART);
	pthread_t s;
	pthread_create(&s, NULL, regs_sender, NULL);
	long bad = 0;
	int rounds = 0;
	/* On until 30 handlers ran, most of them inside the loop. */
	while (regs_handled < 30 && rounds < 100000) {
		bad |= hold_registers(200000);
		rounds++;
	}
	__atomic_store_n(&regs_stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(s, NULL);
	EXPECT_TRUE("handlers ran", regs_handled >= 30);
	EXPECT_EQ("registers changed (bit mask)", bad, 0);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- a thread-directed fatal signal ends the process ---- */

static void *idle_peer(void *arg)
{
	struct peer *p = arg;
	p->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&p->done, 1, __ATOMIC_SEQ_CST);
	for (;;)
		nap_ms(10);
	return NULL;
}

static int fatal_child(void *arg)
{
	(void)arg;
	struct peer p = { 0 };
	pthread_create(&p.th, NULL, idle_peer, &p);
	wait_done(&p, 1);
	syscall(SYS_tgkill, getpid(), p.tid, SIGTERM);
	for (;;)
		nap_ms(10);
	return 0;
}

static void fatal(void)
{
	section("a fatal signal sent to one thread");
	EXPECT_STATUS("the process", in_child(fatal_child, NULL), "killed by SIGTERM");
}

int main(void)
{
	abi_init();
	main_tid = (pid_t)syscall(SYS_gettid);
	directed_blocked();
	pending_union();
	process_directed();
	mask_race();
	alt_stacks();
	fork_keeps();
	interrupt_one();
	exiting_targets();
	pending_limit();
	registers_kept();
	fatal();
	return abi_done();
}
