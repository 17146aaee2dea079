/*
 * Signal dispositions and masks: rt_sigaction (SA_SIGINFO, SA_RESETHAND,
 * SA_NODEFER, sa_mask), rt_sigprocmask, rt_sigpending, the siginfo of
 * kill/tgkill/rt_sigqueueinfo, queueing of standard and real-time signals
 * and the order of delivery, rt_sigreturn restoring a mask the handler
 * edited, sigaltstack, signals that come while a process makes only calls
 * the kernel answers at once, and the errors.
 */
#include "abi.h"

#include <time.h>
#include <ucontext.h>

/* Kernel signal numbers: musl keeps 32..34 for itself, so raw 40 and 41. */
#define RT_A 40
#define RT_B 41

struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

static volatile int count, depth, max_depth, order[16], norder;
static siginfo_t last;
static volatile int values[8], nvalues;
static volatile int usr2_blocked_inside, on_altstack, altstack_eperm, in_range;
static char altstack[65536];

static void h_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	last = *si;
	count++;
	if (si->si_code == SI_QUEUE && nvalues < 8)
		values[nvalues++] = si->si_value.sival_int;
}

static void h_order(int sig)
{
	if (norder < 16)
		order[norder++] = sig;
}

static void h_nested(int sig)
{
	count++;
	depth++;
	if (depth > max_depth)
		max_depth = depth;
	if (count == 1)
		raise(sig);
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	usr2_blocked_inside = sigismember(&cur, SIGUSR2);
	depth--;
}

static void h_edit_mask(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	sigaddset(&uc->uc_sigmask, SIGUSR2);
}

static void h_altstack(int sig)
{
	(void)sig;
	stack_t cur;
	sigaltstack(NULL, &cur);
	on_altstack = (cur.ss_flags & SS_ONSTACK) != 0;
	stack_t other = { .ss_sp = altstack, .ss_size = sizeof altstack };
	altstack_eperm = sigaltstack(&other, NULL) == -1 && errno == EPERM;
	char local;
	in_range = &local >= altstack && &local < altstack + sizeof altstack;
}

static void block(int sig, int how)
{
	sigset_t s = sigset_of(sig);
	sigprocmask(how, &s, NULL);
}

static int resethand_child(void *arg)
{
	(void)arg;
	norder = 0;
	handle_signal(SIGUSR1, h_order, SA_RESETHAND);
	raise(SIGUSR1);
	struct sigaction sa;
	sigaction(SIGUSR1, NULL, &sa);
	if (sa.sa_handler != SIG_DFL || norder != 1)
		return 1;
	raise(SIGUSR1);
	return 2;
}

static int waits_for_signal(void *arg)
{
	(void)arg;
	pause();
	return 0;
}

static int kills_root_process(void *arg)
{
	pid_t target = (pid_t)(long)arg;
	setuid(1000);
	EXPECT_ERR("kill of a root process by uid 1000", kill(target, 0), EPERM);
	EXPECT_ERR("kill of pid 1 by uid 1000", kill(1, SIGUSR1), EPERM);
	return 0;
}

static volatile int pestered;

static void h_pestered(int sig)
{
	(void)sig;
	pestered++;
}

/* Sends SIGUSR1 to its parent every 10 ms until killed. */
static int pesters_parent(void *arg)
{
	pid_t parent = (pid_t)(long)arg;
	for (;;) {
		kill(parent, SIGUSR1);
		usleep(10000);
	}
	return 0;
}

int main(void)
{
	abi_init();
	pid_t me = getpid();

	section("rt_sigaction");
	struct sigaction sa, old;
	EXPECT_OK("query SIGUSR1", sigaction(SIGUSR1, NULL, &old));
	EXPECT_TRUE("SIG_DFL at start", old.sa_handler == SIG_DFL);
	handle_signal_info(SIGUSR1, h_info, 0);
	sigaction(SIGUSR1, NULL, &old);
	EXPECT_TRUE("reads back the handler", old.sa_sigaction == h_info);
	EXPECT_TRUE("and SA_SIGINFO", old.sa_flags & SA_SIGINFO);
	struct ksigaction k;
	EXPECT_ERR("signal 0", syscall(SYS_rt_sigaction, 0, NULL, &k, 8), EINVAL);
	EXPECT_ERR("signal 65", syscall(SYS_rt_sigaction, 65, NULL, &k, 8), EINVAL);
	EXPECT_OK("signal 64 (the last)", syscall(SYS_rt_sigaction, 64, NULL, &k, 8));
	EXPECT_ERR("sigsetsize 4", syscall(SYS_rt_sigaction, SIGUSR1, NULL, &k, 4), EINVAL);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	EXPECT_ERR("SIG_IGN for SIGKILL", sigaction(SIGKILL, &sa, NULL), EINVAL);
	EXPECT_ERR("a handler for SIGSTOP", sigaction(SIGSTOP, &sa, NULL), EINVAL);
	EXPECT_OK("query SIGKILL", sigaction(SIGKILL, NULL, &old));
	EXPECT_ERR("from a bad pointer", syscall(SYS_rt_sigaction, SIGUSR1, BAD_PTR, NULL, 8), EFAULT);
	EXPECT_ERR("to a bad pointer", syscall(SYS_rt_sigaction, SIGUSR1, NULL, BAD_PTR, 8), EFAULT);

	section("siginfo of each sender");
	count = 0;
	EXPECT_OK("kill(self, SIGUSR1)", kill(me, SIGUSR1));
	EXPECT_EQ("delivered before kill returned", count, 1);
	EXPECT_STR("si_signo", signame(last.si_signo), "SIGUSR1");
	EXPECT_EQ("si_code (SI_USER)", last.si_code, SI_USER);
	EXPECT_TRUE("si_pid is the sender", last.si_pid == me);
	EXPECT_EQ("si_uid", last.si_uid, 0);
	syscall(SYS_tgkill, me, me, SIGUSR1);
	EXPECT_EQ("tgkill: si_code (SI_TKILL)", last.si_code, SI_TKILL);
	EXPECT_TRUE("si_pid", last.si_pid == me);
	sigqueue(me, SIGUSR1, (union sigval){ .sival_int = 42 });
	EXPECT_EQ("sigqueue: si_code (SI_QUEUE)", last.si_code, SI_QUEUE);
	EXPECT_EQ("si_value", last.si_value.sival_int, 42);
	siginfo_t qi;
	memset(&qi, 0, sizeof qi);
	qi.si_signo = SIGUSR1;
	qi.si_code = SI_USER;
	handle_signal(SIGUSR1, SIG_DFL, 0); /* the child must not start with our handler */
	pid_t c = spawn_fn(waits_for_signal, NULL);
	handle_signal_info(SIGUSR1, h_info, 0);
	/* Only the kernel may claim to be kill(): a positive or zero code to another process. */
	EXPECT_ERR("rt_sigqueueinfo with si_code SI_USER to another process",
		   syscall(SYS_rt_sigqueueinfo, c, SIGUSR1, &qi), EPERM);
	qi.si_code = SI_QUEUE;
	EXPECT_OK("with SI_QUEUE", syscall(SYS_rt_sigqueueinfo, c, SIGUSR1, &qi));
	EXPECT_STATUS("the child", wait_status(c), "killed by SIGUSR1");

	section("rt_sigprocmask and rt_sigpending");
	sigset_t s, o;
	sigfillset(&s);
	EXPECT_OK("block everything", sigprocmask(SIG_SETMASK, &s, &o));
	sigprocmask(SIG_BLOCK, NULL, &s);
	EXPECT_TRUE("SIGKILL and SIGSTOP were left out silently",
		    !sigismember(&s, SIGKILL) && !sigismember(&s, SIGSTOP) && sigismember(&s, SIGUSR1));
	sigemptyset(&s);
	sigprocmask(SIG_SETMASK, &s, NULL);
	EXPECT_ERR("a bad how", syscall(SYS_rt_sigprocmask, 3, &s, NULL, 8), EINVAL);
	EXPECT_ERR("sigsetsize 16", syscall(SYS_rt_sigprocmask, SIG_BLOCK, &s, NULL, 16), EINVAL);
	EXPECT_ERR("from a bad pointer", syscall(SYS_rt_sigprocmask, SIG_BLOCK, BAD_PTR, NULL, 8), EFAULT);
	EXPECT_OK("a bad how with no new set is a query", syscall(SYS_rt_sigprocmask, 3, NULL, &s, 8));
	EXPECT_ERR("sigsetsize 4", syscall(SYS_rt_sigprocmask, SIG_BLOCK, &s, NULL, 4), EINVAL);
	EXPECT_ERR("sigsetsize (size_t)-1", syscall(SYS_rt_sigprocmask, SIG_BLOCK, &s, NULL, (size_t)-1), EINVAL);
	EXPECT_ERR("a query with sigsetsize 16", syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &s, 16), EINVAL);
	EXPECT_ERR("from a kernel address",
		   syscall(SYS_rt_sigprocmask, SIG_BLOCK, (void *)0xffff800000000000UL, NULL, 8), EFAULT);
	EXPECT_ERR("a bad how and a bad set pointer", syscall(SYS_rt_sigprocmask, 3, BAD_PTR, NULL, 8), EFAULT);
	{
		unsigned long all = ~0UL, none = 0, got = 1;
		EXPECT_OK("SIG_SETMASK of all 64 bits", syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, 8));
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &got, 8);
		EXPECT_TRUE("the mask holds all but SIGKILL and SIGSTOP",
			    got == ~((1UL << (SIGKILL - 1)) | (1UL << (SIGSTOP - 1))));
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
		unsigned long usr2 = 1UL << (SIGUSR2 - 1);
		EXPECT_ERR("a bad how leaves the mask", syscall(SYS_rt_sigprocmask, 7, &usr2, &got, 8), EINVAL);
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &got, 8);
		EXPECT_TRUE("as it was", got == 0);
		EXPECT_ERR("the old set to a bad pointer", syscall(SYS_rt_sigprocmask, SIG_BLOCK, &usr2, BAD_PTR, 8),
			   EFAULT);
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &got, 8);
		EXPECT_TRUE("the new set was taken all the same", got == usr2);
		void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		EXPECT_ERR("the old set to read-only memory", syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &usr2, ro, 8),
			   EFAULT);
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &got, 8);
		EXPECT_TRUE("unblocked all the same", got == 0);
		munmap(ro, 4096);
	}
	count = 0;
	block(SIGUSR1, SIG_BLOCK);
	raise(SIGUSR1);
	raise(SIGUSR1);
	raise(SIGUSR1);
	EXPECT_EQ("blocked: not delivered", count, 0);
	sigpending(&s);
	EXPECT_TRUE("rt_sigpending shows it", sigismember(&s, SIGUSR1));
	block(SIGUSR1, SIG_UNBLOCK);
	EXPECT_EQ("unblocked: three sends, one delivery", count, 1);
	sigpending(&s);
	EXPECT_TRUE("no longer pending", !sigismember(&s, SIGUSR1));
	EXPECT_ERR("rt_sigpending with sigsetsize 16", syscall(SYS_rt_sigpending, &s, 16), EINVAL);
	handle_signal_info(RT_A, h_info, 0);
	nvalues = 0;
	block(RT_A, SIG_BLOCK);
	for (int i = 1; i <= 3; i++)
		sigqueue(me, RT_A, (union sigval){ .sival_int = i });
	block(RT_A, SIG_UNBLOCK);
	EXPECT_EQ("a real-time signal sent three times: deliveries", nvalues, 3);
	EXPECT_TRUE("in the order sent", values[0] == 1 && values[1] == 2 && values[2] == 3);
	/* Ignoring a pending signal throws it away. */
	block(SIGUSR2, SIG_BLOCK);
	raise(SIGUSR2);
	handle_signal(SIGUSR2, SIG_IGN, 0);
	sigpending(&s);
	EXPECT_TRUE("a pending signal set to SIG_IGN is discarded", !sigismember(&s, SIGUSR2));
	block(SIGUSR2, SIG_UNBLOCK);
	handle_signal(SIGUSR2, SIG_DFL, 0);

	section("order of delivery");
	int sigs[4] = { SIGUSR2, RT_B, SIGUSR1, RT_A };
	sigfillset(&s);
	sigprocmask(SIG_SETMASK, &s, &o);
	for (int i = 0; i < 4; i++) {
		handle_signal(sigs[i], h_order, 0);
		raise(sigs[i]);
	}
	norder = 0;
	sigprocmask(SIG_SETMASK, &o, NULL);
	char line[128] = "";
	for (int i = 0; i < norder; i++) {
		size_t len = strlen(line);
		snprintf(line + len, sizeof line - len, "%s%s", i ? " " : "", signame(order[i]));
	}
	/*
	 * The kernel takes the lowest number first, but sets up every pending
	 * signal's frame before returning to user mode, each on top of the
	 * last: the handlers run highest number first.
	 */
	say("raised SIGUSR2 SIG41 SIGUSR1 SIG40, handlers ran: %s", line);

	section("handler flags");
	count = 0;
	max_depth = 0;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h_nested;
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	EXPECT_EQ("a handler raising its own signal: deliveries", count, 2);
	EXPECT_EQ("one after the other (the signal is blocked inside)", max_depth, 1);
	EXPECT_EQ("sa_mask is blocked inside", usr2_blocked_inside, 1);
	sigprocmask(SIG_BLOCK, NULL, &s);
	EXPECT_TRUE("and not after", !sigismember(&s, SIGUSR2) && !sigismember(&s, SIGUSR1));
	count = 0;
	max_depth = 0;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	EXPECT_EQ("SA_NODEFER: nested", max_depth, 2);
	EXPECT_STATUS("SA_RESETHAND: the second raise takes the default", in_child(resethand_child, NULL),
		      "killed by SIGUSR1");
	handle_signal_info(SIGUSR1, h_edit_mask, 0);
	raise(SIGUSR1);
	sigprocmask(SIG_BLOCK, NULL, &s);
	EXPECT_TRUE("rt_sigreturn restores the mask the handler edited", sigismember(&s, SIGUSR2));
	sigemptyset(&s);
	sigprocmask(SIG_SETMASK, &s, NULL);

	section("sigaltstack");
	stack_t ss;
	EXPECT_OK("query", sigaltstack(NULL, &ss));
	EXPECT_TRUE("disabled at start", ss.ss_flags == SS_DISABLE && ss.ss_size == 0);
	stack_t small = { .ss_sp = altstack, .ss_size = 1024 };
	EXPECT_ERR("smaller than MINSIGSTKSZ", sigaltstack(&small, NULL), ENOMEM);
	stack_t badflags = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 5 };
	EXPECT_ERR("unknown flags", sigaltstack(&badflags, NULL), EINVAL);
	stack_t good = { .ss_sp = altstack, .ss_size = sizeof altstack };
	EXPECT_OK("set", sigaltstack(&good, NULL));
	sigaltstack(NULL, &ss);
	EXPECT_TRUE("reads back", ss.ss_sp == altstack && ss.ss_size == sizeof altstack && ss.ss_flags == 0);
	handle_signal(SIGUSR1, h_altstack, SA_ONSTACK);
	raise(SIGUSR1);
	EXPECT_EQ("the SA_ONSTACK handler sees SS_ONSTACK", on_altstack, 1);
	EXPECT_EQ("changing it while on it", altstack_eperm, 1);
	EXPECT_EQ("its locals are on the alternate stack", in_range, 1);
	handle_signal(SIGUSR1, h_altstack, 0);
	raise(SIGUSR1);
	EXPECT_EQ("without SA_ONSTACK it is not used", on_altstack, 0);
	stack_t off = { .ss_flags = SS_DISABLE };
	EXPECT_OK("SS_DISABLE", sigaltstack(&off, NULL));
	stack_t autodis = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = (int)(1U << 31) };
	EXPECT_OK("SS_AUTODISARM", sigaltstack(&autodis, NULL));
	sigaltstack(&off, NULL);
	EXPECT_ERR("to a bad pointer", syscall(SYS_sigaltstack, NULL, BAD_PTR), EFAULT);
	handle_signal(SIGUSR1, SIG_DFL, 0);

	section("signals between calls answered at once");
	/* getpid and clock_gettime take a shorter way through the kernel: a
	 * signal that comes meanwhile must still be delivered soon after. */
	handle_signal(SIGUSR1, h_pestered, 0);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pester = spawn_fn(pesters_parent, (void *)(long)me);
	long calls = 0;
	do {
		getpid();
		clock_gettime(CLOCK_MONOTONIC, &now);
		calls++;
	} while (pestered < 20 && now.tv_sec - t0.tv_sec < 30);
	kill(pester, SIGKILL);
	wait_status(pester);
	EXPECT_TRUE("20 handlers ran within 30 s", pestered >= 20);
	EXPECT_TRUE("between the calls", calls > 20);
	handle_signal(SIGUSR1, SIG_DFL, 0);

	section("kill");
	EXPECT_OK("signal 0 checks existence", kill(me, 0));
	EXPECT_ERR("a bad signal", kill(me, 65), EINVAL);
	EXPECT_ERR("a negative signal", kill(me, -1), EINVAL);
	EXPECT_ERR("no such process", kill(0x7fffffff, 0), ESRCH);
	EXPECT_STATUS("as another user", in_child(kills_root_process, (void *)(long)me), "exited 0");
	return abi_done();
}
