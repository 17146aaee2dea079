/*
 * A storm of signals at a thread that never stops working: other threads
 * (on other CPUs when there are several) and another process send SIGUSR1
 * and SIGUSR2 as fast as they can while the thread alternates computation
 * in user mode (values kept in registers, canaries on its stack), calls a
 * kernel may answer by itself (getpid, gettid, clock_gettime, a pipe's
 * read and write, futex) and calls it may pass on to someone else
 * (getppid, rt_sigprocmask, fstat, uname), checking each result and that
 * the stack is as it left it. Each handler checks that it runs on the
 * stack it must (below the interrupted stack pointer, or on the alternate
 * stack) and that the interrupted context is one of this program's.
 * Nothing printed depends on timing: only whether every check held.
 */
#include "abi.h"

#include <pthread.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <ucontext.h>

#define SENDERS 2
#define ROUNDS 1000

extern char __executable_start[], etext[];

static pid_t main_tid, my_pid, parent_pid;
static volatile int stop_sending;
static volatile long handled;
static volatile int bad_handler, bad_context, elsewhere;
static char *alt_lo, *alt_hi;
static volatile int want_alt;
static volatile char *main_stack_top;
static int pipe_fds[2];
static char *vdso;

static void on_signal(int s, siginfo_t *si, void *ctx)
{
	(void)si;
	int saved_errno = errno;
	volatile char here[64];
	ucontext_t *uc = ctx;
	char *sp = (char *)uc->uc_mcontext.gregs[REG_RSP];
	char *ip = (char *)uc->uc_mcontext.gregs[REG_RIP];
	here[0] = (char)s;
	char *me = (char *)here;
	int mine = syscall(SYS_gettid) == main_tid;
	/* SIGUSR1 is only ever sent to the thread (tgkill). */
	if (!mine && s == SIGUSR1)
		elsewhere++;
	if (mine) {
		if (want_alt) {
			if (me < alt_lo || me >= alt_hi)
				bad_handler++;
		} else if (me >= sp - 128 || me < sp - 65536) {
			/* Below the red zone, and not far below. */
			bad_handler++;
		}
		/* (A handler interrupted on the alternate stack: a nested one.) */
		int on_alt = want_alt && sp >= alt_lo && sp < alt_hi;
		if ((sp > main_stack_top || sp < main_stack_top - (8 << 20)) && !on_alt)
			bad_context++;
	}
	/* Linux's clock_gettime runs in the vDSO. */
	int in_vdso = vdso && ip >= vdso - 65536 && ip < vdso + 65536;
	if ((ip < __executable_start || ip >= etext) && !in_vdso)
		bad_context++;
	/* Work of its own on its stack, as a handler may do. */
	char text[48];
	snprintf(text, sizeof text, "%d", s);
	if (strcmp(text, s == SIGUSR1 ? "10" : "12") != 0)
		bad_handler++;
	__atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
	errno = saved_errno;
}

static void *sender(void *arg)
{
	int s = arg ? SIGUSR2 : SIGUSR1;
	while (!__atomic_load_n(&stop_sending, __ATOMIC_RELAXED)) {
		syscall(SYS_tgkill, my_pid, main_tid, s);
		/* (With one CPU, the thread must get its turn.) */
		sched_yield();
	}
	return NULL;
}

/* Another process sends to the process as a whole. */
static int process_sender(void *arg)
{
	pid_t to = (pid_t)(long)arg;
	for (;;) {
		if (kill(to, SIGUSR2) < 0)
			return 0;
		sched_yield();
	}
}

/* Computation that keeps its values in registers; 0 if they came out as
 * a second run computes them. */
static __attribute__((noinline)) unsigned long mix(unsigned long seed, int n)
{
	unsigned long a = seed, b = seed ^ 0x9e3779b97f4a7c15UL, c = 1, d = 7;
	for (int i = 0; i < n; i++) {
		a = a * 6364136223846793005UL + 1442695040888963407UL;
		b ^= a >> 17;
		c += b * 3;
		d = (d << 5 | d >> 59) ^ c;
	}
	return a ^ b ^ c ^ d;
}

struct tally {
	int user, kernel, passed;
};

static __attribute__((noinline)) void one_round(int i, struct tally *t)
{
	char canary[64];
	memset(canary, 0x5a ^ (i & 0xff), sizeof canary);
	unsigned long x = mix((unsigned long)i, 200), y = mix((unsigned long)i, 200);
	if (x != y)
		t->user++;

	/* Calls a kernel may serve itself. */
	if (getpid() != my_pid || syscall(SYS_gettid) != main_tid)
		t->kernel++;
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		t->kernel++;
	char c = (char)i, back = 0;
	ssize_t w, r;
	do
		w = write(pipe_fds[1], &c, 1);
	while (w < 0 && errno == EINTR);
	do
		r = read(pipe_fds[0], &back, 1);
	while (r < 0 && errno == EINTR);
	if (w != 1 || r != 1 || back != c)
		t->kernel++;
	int word = 0;
	if (syscall(SYS_futex, &word, 1 /* FUTEX_WAKE */, 1, NULL, NULL, 0) != 0)
		t->kernel++;

	/* Calls passed on. */
	if (getppid() != parent_pid)
		t->passed++;
	sigset_t set;
	if (sigprocmask(SIG_BLOCK, NULL, &set) != 0 || sigismember(&set, SIGUSR1))
		t->passed++;
	struct stat st;
	if (fstat(pipe_fds[0], &st) != 0 || !S_ISFIFO(st.st_mode))
		t->passed++;
	struct utsname u;
	if (uname(&u) != 0 || strcmp(u.sysname, "Linux") != 0)
		t->passed++;

	/* What the bug looked like: a number formatted on the stack, then
	 * found overwritten. */
	char gs[48];
	snprintf(gs, sizeof gs, "%ld", (long)(i % 10));
	char want[2] = { (char)('0' + i % 10), 0 };
	if (strcmp(gs, want) != 0)
		t->user++;
	for (int k = 0; k < (int)sizeof canary; k++)
		if (canary[k] != (char)(0x5a ^ (i & 0xff)))
			t->user++;
}

static void storm(const char *what, int alt, int from_process)
{
	static char altstack[65536];
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | (alt ? SA_ONSTACK : 0);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	if (alt) {
		stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
		SETUP(sigaltstack(&ss, NULL));
		alt_lo = altstack;
		alt_hi = altstack + sizeof altstack;
	}
	want_alt = alt;
	handled = 0;
	bad_handler = bad_context = elsewhere = 0;
	stop_sending = 0;
	pthread_t th[SENDERS];
	for (int i = 0; i < SENDERS; i++)
		pthread_create(&th[i], NULL, sender, i ? (void *)1 : NULL);
	pid_t other = from_process ? spawn_fn(process_sender, (void *)(long)my_pid) : 0;
	struct tally t = { 0, 0, 0 };
	/* At least ROUNDS rounds, and on until 50 handlers ran. */
	for (int i = 0; i < ROUNDS || (handled < 50 && i < 100 * ROUNDS); i++)
		one_round(i, &t);
	__atomic_store_n(&stop_sending, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < SENDERS; i++)
		pthread_join(th[i], NULL);
	if (other > 0) {
		kill(other, SIGKILL);
		wait_status(other);
	}
	say("-- %s", what);
	EXPECT_EQ("user-mode values and stack canaries wrong", t.user, 0);
	EXPECT_EQ("calls served at once wrong", t.kernel, 0);
	EXPECT_EQ("calls passed on wrong", t.passed, 0);
	EXPECT_EQ("handlers on the wrong stack", bad_handler, 0);
	EXPECT_EQ("signals sent to the thread handled by another", elsewhere, 0);
	EXPECT_EQ("interrupted contexts not the program's", bad_context, 0);
	EXPECT_TRUE("at least 50 handlers ran", handled >= 50);
	if (alt) {
		stack_t ss = { .ss_flags = SS_DISABLE };
		sigaltstack(&ss, NULL);
	}
}

int main(void)
{
	abi_init();
	char top;
	main_stack_top = (char *)((unsigned long)&top + 4096);
	my_pid = getpid();
	vdso = (char *)getauxval(AT_SYSINFO_EHDR);
	parent_pid = getppid();
	main_tid = syscall(SYS_gettid);
	SETUP(pipe(pipe_fds));
	section("signals at a working thread");
	/* Each thread has its alternate stack on Linux: signals for the
	 * process as a whole, which any thread may take, only without one. */
	storm("sent to the thread, handled on its own stack", 0, 0);
	storm("sent to the thread, handled on the alternate stack", 1, 0);
	storm("sent to the thread and the process, on its own stack", 0, 1);
	return abi_done();
}
