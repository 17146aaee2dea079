/*
 * Shared checks and printing for the Linux-ABI test programs.
 *
 * Each program prints a transcript: one line per check, showing what the
 * kernel answered (a value that must be the same on every correct kernel,
 * a relation such as "same inode", or an errno name), and whether that is
 * what Linux does ("ok") or not ("FAIL ... want ...").  The last line counts
 * the checks; the exit status is 0 when none failed.  The transcripts of
 * Linux are the expected output of Tessera's Linux personality, byte for
 * byte.
 *
 * Never printed: pids, addresses, times, inode and device numbers, or the
 * order of a directory listing (they differ between correct kernels).
 *
 * Output goes straight to file descriptor 1 with write(), one line per call,
 * never through stdio's buffer, which a fork would duplicate.  Only one
 * process prints at a time: a child reports to its parent through its exit
 * status or a pipe.
 */
#ifndef TESSERA_ABI_H
#define TESSERA_ABI_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The counts live in a shared page (abi_init maps it), so that the checks a
 * forked child makes count too.
 */
/* Functions a program may leave unused. */
#define ABI_FN static __attribute__((unused))

struct abi_counts {
	int checks, failed;
};
static struct abi_counts abi_local, *abi_count = &abi_local;
#define abi_checks (abi_count->checks)
#define abi_failed (abi_count->failed)

/* ---------------------------------------------------------------- output */

__attribute__((format(printf, 1, 2))) ABI_FN void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > (int)sizeof buf - 2)
		n = sizeof buf - 2;
	buf[n++] = '\n';
	int saved = errno;
	for (int off = 0; off < n;) {
		ssize_t w = write(1, buf + off, n - off);
		if (w <= 0)
			break;
		off += w;
	}
	errno = saved;
}

ABI_FN void section(const char *name)
{
	say("== %s", name);
}

/* The text of the file `path` (from directory `dir`) in `text` (at most
 * `max` - 1 bytes, then a NUL); 0, or -1 if it cannot be opened. */
ABI_FN int read_text_at(int dir, const char *path, char *text, size_t max)
{
	int fd = openat(dir, path, O_RDONLY);
	if (fd < 0)
		return -1;
	size_t got = 0;
	ssize_t n;
	while (got < max - 1 && (n = read(fd, text + got, max - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	text[got] = 0;
	return 0;
}

ABI_FN int read_text(const char *path, char *text, size_t max)
{
	return read_text_at(AT_FDCWD, path, text, max);
}

ABI_FN const char *errname(int e)
{
	static const char *names[] = {
		[0] = "0", [EPERM] = "EPERM", [ENOENT] = "ENOENT", [ESRCH] = "ESRCH",
		[EINTR] = "EINTR", [EIO] = "EIO", [ENXIO] = "ENXIO", [E2BIG] = "E2BIG",
		[ENOEXEC] = "ENOEXEC", [EBADF] = "EBADF", [ECHILD] = "ECHILD",
		[EAGAIN] = "EAGAIN", [ENOMEM] = "ENOMEM", [EACCES] = "EACCES",
		[EFAULT] = "EFAULT", [ENOTBLK] = "ENOTBLK", [EBUSY] = "EBUSY",
		[EEXIST] = "EEXIST", [EXDEV] = "EXDEV", [ENODEV] = "ENODEV",
		[ENOTDIR] = "ENOTDIR", [EISDIR] = "EISDIR", [EINVAL] = "EINVAL",
		[ENFILE] = "ENFILE", [EMFILE] = "EMFILE", [ENOTTY] = "ENOTTY",
		[ETXTBSY] = "ETXTBSY", [EFBIG] = "EFBIG", [ENOSPC] = "ENOSPC",
		[ESPIPE] = "ESPIPE", [EROFS] = "EROFS", [EMLINK] = "EMLINK",
		[EPIPE] = "EPIPE", [EDOM] = "EDOM", [ERANGE] = "ERANGE",
		[EDEADLK] = "EDEADLK", [ENAMETOOLONG] = "ENAMETOOLONG",
		[ENOLCK] = "ENOLCK", [ENOSYS] = "ENOSYS", [ENOTEMPTY] = "ENOTEMPTY",
		[ELOOP] = "ELOOP", [ENOMSG] = "ENOMSG", [ENODATA] = "ENODATA",
		[ETIME] = "ETIME", [EOVERFLOW] = "EOVERFLOW", [EBADFD] = "EBADFD",
		[EILSEQ] = "EILSEQ", [ENOTSOCK] = "ENOTSOCK", [EOPNOTSUPP] = "EOPNOTSUPP",
		[ETIMEDOUT] = "ETIMEDOUT", [ESTALE] = "ESTALE", [EDQUOT] = "EDQUOT",
		[ECANCELED] = "ECANCELED", [EOWNERDEAD] = "EOWNERDEAD",
		[ENOTRECOVERABLE] = "ENOTRECOVERABLE", [ERESTART] = "ERESTART",
		[EDESTADDRREQ] = "EDESTADDRREQ", [EMSGSIZE] = "EMSGSIZE",
		[EPROTOTYPE] = "EPROTOTYPE", [ENOPROTOOPT] = "ENOPROTOOPT",
		[EPROTONOSUPPORT] = "EPROTONOSUPPORT", [ESOCKTNOSUPPORT] = "ESOCKTNOSUPPORT",
		[EAFNOSUPPORT] = "EAFNOSUPPORT", [EADDRINUSE] = "EADDRINUSE",
		[EADDRNOTAVAIL] = "EADDRNOTAVAIL", [ENETDOWN] = "ENETDOWN",
		[ENETUNREACH] = "ENETUNREACH", [ECONNRESET] = "ECONNRESET",
		[ENOBUFS] = "ENOBUFS", [EISCONN] = "EISCONN", [ENOTCONN] = "ENOTCONN",
		[ECONNREFUSED] = "ECONNREFUSED", [EALREADY] = "EALREADY",
		[EINPROGRESS] = "EINPROGRESS", [ENOKEY] = "ENOKEY",
		[EKEYEXPIRED] = "EKEYEXPIRED", [EKEYREVOKED] = "EKEYREVOKED",
	};
	static char other[32];
	if (e >= 0 && e < (int)(sizeof names / sizeof names[0]) && names[e])
		return names[e];
	snprintf(other, sizeof other, "errno%d", e);
	return other;
}

/* The text of a small file, `path` from directory `dir` (its first 255
 * bytes), or the errno name of its open's failure. */
ABI_FN const char *text_at(int dir, const char *path)
{
	static char text[256];
	return read_text_at(dir, path, text, sizeof text) < 0 ? errname(errno) : text;
}

ABI_FN const char *text_of(const char *path)
{
	return text_at(AT_FDCWD, path);
}

ABI_FN const char *signame(int s)
{
	static const char *names[] = {
		[0] = "0", [SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGQUIT] = "SIGQUIT",
		[SIGILL] = "SIGILL", [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
		[SIGBUS] = "SIGBUS", [SIGFPE] = "SIGFPE", [SIGKILL] = "SIGKILL",
		[SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
		[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
		[SIGSTKFLT] = "SIGSTKFLT", [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",
		[SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN",
		[SIGTTOU] = "SIGTTOU", [SIGURG] = "SIGURG", [SIGXCPU] = "SIGXCPU",
		[SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
		[SIGWINCH] = "SIGWINCH", [SIGIO] = "SIGIO", [SIGPWR] = "SIGPWR",
		[SIGSYS] = "SIGSYS",
	};
	static char other[32];
	if (s > 0 && s < (int)(sizeof names / sizeof names[0]) && names[s])
		return names[s];
	/* Linux's real-time signals are 32..64; libc reserves the first few. */
	if (s >= 32 && s <= 64)
		snprintf(other, sizeof other, "SIG%d", s);
	else
		snprintf(other, sizeof other, "signal%d", s);
	return other;
}

/* What a wait status says, in words that are the same on every kernel. */
ABI_FN const char *status_text(int st)
{
	static char buf[64];
	if (WIFEXITED(st))
		snprintf(buf, sizeof buf, "exited %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, sizeof buf, "killed by %s%s", signame(WTERMSIG(st)),
			 WCOREDUMP(st) ? " (core dumped)" : "");
	else if (WIFSTOPPED(st))
		snprintf(buf, sizeof buf, "stopped by %s", signame(WSTOPSIG(st)));
	else if (WIFCONTINUED(st))
		snprintf(buf, sizeof buf, "continued");
	else
		snprintf(buf, sizeof buf, "status 0x%x", st);
	return buf;
}

/* ---------------------------------------------------------------- checks */

/* The result of a call: "ok", or the errno name when it returned -1. */
ABI_FN const char *result_text(long r, int e)
{
	return r == -1 ? errname(e) : "ok";
}

ABI_FN void record(int good, const char *name, const char *got, const char *want)
{
	__atomic_fetch_add(&abi_checks, 1, __ATOMIC_SEQ_CST);
	if (good) {
		say("%s: %s", name, got);
	} else {
		__atomic_fetch_add(&abi_failed, 1, __ATOMIC_SEQ_CST);
		say("%s: %s FAIL want %s", name, got, want);
	}
}

/* A call that must fail with errno `want`. */
#define EXPECT_ERR(name, call, want)                                           \
	do {                                                                   \
		errno = 0;                                                     \
		long r_ = (long)(call);                                        \
		int e_ = errno;                                                \
		char got_[48];                                                 \
		if (r_ == -1)                                                  \
			snprintf(got_, sizeof got_, "%s", errname(e_));        \
		else                                                           \
			snprintf(got_, sizeof got_, "returned %ld", r_);       \
		record(r_ == -1 && e_ == (want), name, got_, errname(want));   \
	} while (0)

/* A call that must succeed (not return -1); the value is not printed. */
#define EXPECT_OK(name, call)                                                  \
	do {                                                                   \
		errno = 0;                                                     \
		long r_ = (long)(call);                                        \
		int e_ = errno;                                                \
		record(r_ != -1, name, result_text(r_, e_), "ok");             \
	} while (0)

/* A value that must equal `want` (both printed as numbers). */
#define EXPECT_EQ(name, got, want)                                             \
	do {                                                                   \
		long g_ = (long)(got), w_ = (long)(want);                      \
		char gs_[48], ws_[48];                                         \
		snprintf(gs_, sizeof gs_, "%ld", g_);                          \
		snprintf(ws_, sizeof ws_, "%ld", w_);                          \
		record(g_ == w_, name, gs_, ws_);                              \
	} while (0)

/* A relation that must hold; printed as yes / no. */
#define EXPECT_TRUE(name, cond)                                                \
	do {                                                                   \
		int c_ = !!(cond);                                             \
		record(c_, name, c_ ? "yes" : "no", "yes");                    \
	} while (0)

/* A string that must equal `want`. */
#define EXPECT_STR(name, got, want)                                            \
	do {                                                                   \
		const char *g_ = (got), *w_ = (want);                          \
		record(g_ && strcmp(g_, w_) == 0, name, g_ ? g_ : "(null)", w_); \
	} while (0)

/* A wait status that must read `want` (status_text's words). */
#define EXPECT_STATUS(name, st, want) EXPECT_STR(name, status_text(st), want)

/* Ends the program: the count line, and the exit status. */
ABI_FN int abi_done(void)
{
	say("-- %d checks, %d failed", abi_checks, abi_failed);
	return abi_failed ? 1 : 0;
}

/* A failure of the test's own setup, not of a check: stop here. */
#define SETUP(call)                                                            \
	do {                                                                   \
		if ((long)(call) == -1) {                                      \
			say("SETUP FAILED line %d: %s: %s", __LINE__, #call,   \
			    errname(errno));                                   \
			exit(2);                                               \
		}                                                              \
	} while (0)

/* ---------------------------------------------------------------- processes */

/*
 * The same starting state on every system: a session and process group of
 * its own (so no controlling terminal), default signal dispositions (a
 * shell starting a program in the background ignores SIGINT and SIGQUIT for
 * it), nothing blocked, the file mode mask 022.
 */
ABI_FN void abi_init(void)
{
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (page != MAP_FAILED)
		abi_count = page;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < 65; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	umask(022);
	if (getsid(0) != getpid())
		setsid();
}

/* Fork a child that runs fn and exits with its return value. */
ABI_FN pid_t spawn_fn(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn(arg));
	return pid;
}

/* Wait for one child; returns its status (or -1 with errno). */
ABI_FN int wait_status(pid_t pid)
{
	int st;
	pid_t r;
	do
		r = waitpid(pid, &st, 0);
	while (r == -1 && errno == EINTR);
	return r == -1 ? -1 : st;
}

/* Run fn in a child; its wait status. */
ABI_FN int in_child(int (*fn)(void *), void *arg)
{
	pid_t pid = spawn_fn(fn, arg);
	if (pid < 0)
		return -1;
	return wait_status(pid);
}

/* ---------------------------------------------------------------- signals */

/* Signal `sig`'s disposition: handler (or SIG_DFL, SIG_IGN) `h`, with
 * `flags` and an empty sa_mask. */
ABI_FN void handle_signal(int sig, void (*h)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigaction(sig, &sa, NULL);
}

/* The same with a handler that takes a siginfo_t (SA_SIGINFO). */
ABI_FN void handle_signal_info(int sig, void (*h)(int, siginfo_t *, void *), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = h;
	sa.sa_flags = flags | SA_SIGINFO;
	sigaction(sig, &sa, NULL);
}

/* The set of signal `sig` alone. */
ABI_FN sigset_t sigset_of(int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	return s;
}

/* A section whose checks child fn(NULL) makes, then the check `name` that
 * the child exited 0. */
ABI_FN void section_in_child(const char *title, const char *name, int (*fn)(void *))
{
	section(title);
	EXPECT_STATUS(name, in_child(fn, NULL), "exited 0");
}

/* ---------------------------------------------------------------- faults */

/*
 * Run fn(arg) and catch a synchronous fault: returns the signal number (0
 * if fn returned) and fills *info.  The handler runs on its own stack, so a
 * stack overflow can be caught too.
 */
static sigjmp_buf abi_fault_jmp;
static siginfo_t abi_fault_info;
static int abi_fault_sig;

ABI_FN void abi_fault_handler(int sig, siginfo_t *info, void *uc)
{
	(void)uc;
	abi_fault_sig = sig;
	abi_fault_info = *info;
	siglongjmp(abi_fault_jmp, 1);
}

ABI_FN int catch_fault(void (*fn)(void *), void *arg, siginfo_t *info)
{
	static char altstack[65536];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 };
	sigaltstack(&ss, NULL);
	struct sigaction sa, old[5];
	int sigs[5] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP };
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = abi_fault_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	for (int i = 0; i < 5; i++)
		sigaction(sigs[i], &sa, &old[i]);
	abi_fault_sig = 0;
	if (sigsetjmp(abi_fault_jmp, 1) == 0)
		fn(arg);
	for (int i = 0; i < 5; i++)
		sigaction(sigs[i], &old[i], NULL);
	if (info)
		*info = abi_fault_info;
	return abi_fault_sig;
}

/* The fault fn(p) gives, in words: "SIGSEGV SEGV_MAPERR at the address"
 * style, or "no fault". */
ABI_FN const char *fault_words(void (*fn)(void *), void *p)
{
	static char buf[96];
	siginfo_t si;
	int sig = catch_fault(fn, p, &si);
	if (!sig)
		return "no fault";
	const char *code = "other";
	if (sig == SIGSEGV)
		code = si.si_code == SEGV_MAPERR ? "SEGV_MAPERR" : si.si_code == SEGV_ACCERR ? "SEGV_ACCERR" : "other";
	else if (sig == SIGBUS)
		code = si.si_code == BUS_ADRERR ? "BUS_ADRERR" : "other";
	snprintf(buf, sizeof buf, "%s %s%s", signame(sig), code, si.si_addr == p ? " at the address" : " elsewhere");
	return buf;
}

/* SIGALRMs handled since the count was last set (`abi_alarm_in`). */
static volatile int abi_alarms __attribute__((unused));

ABI_FN void abi_on_alarm(int s)
{
	(void)s;
	abi_alarms++;
}

/* SIGALRM in `ms` milliseconds, its handler counting it and restarting
 * calls or not. */
ABI_FN void abi_alarm_in(int ms, int restart)
{
	handle_signal(SIGALRM, abi_on_alarm, restart ? SA_RESTART : 0);
	struct itimerval it = { { 0, 0 }, { 0, ms * 1000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

/* An address that is never mapped: the first page. */
#define BAD_PTR ((void *)8)

/* ---------------------------------------------------------------- raw calls */

/*
 * A system call that returns -errno and never touches errno: errno lives in
 * thread-local storage, which a thread made by raw_clone shares with the
 * thread that made it.
 */
ABI_FN long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#define sys0(n) sys6(n, 0, 0, 0, 0, 0, 0)
#define sys1(n, a) sys6(n, (long)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/*
 * clone(flags, stack, ptid, ctid, tls), the child running fn(arg) on
 * `stack_top` and then exit(fn's value) (SYS_exit: this thread only).
 * Returns the child's tid, or -1 with errno.  The child shares the
 * caller's thread-local storage unless CLONE_SETTLS says otherwise, so it
 * must use sys6 rather than libc calls that set errno.
 */
ABI_FN long raw_clone(unsigned long flags, void *stack_top, int *ptid, int *ctid, unsigned long tls,
		      int (*fn)(void *), void *arg)
{
	long ret;
	void **sp = (void **)((uintptr_t)stack_top & ~15UL);
	*--sp = arg;
	*--sp = (void *)fn;
	register long r10 __asm__("r10") = (long)ctid;
	register long r8 __asm__("r8") = (long)tls;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 /* The child: its own stack holds fn and arg. */
			 "xor %%ebp, %%ebp\n\t"
			 "pop %%rax\n\t"
			 "pop %%rdi\n\t"
			 "call *%%rax\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov $60, %%eax\n\t"
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(ret)
			 : "a"((long)SYS_clone), "D"(flags), "S"(sp), "d"(ptid), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

/* A futex word's wait until it is no longer `val` (no timeout). */
ABI_FN void futex_wait_while(volatile int *addr, int val)
{
	while (__atomic_load_n(addr, __ATOMIC_SEQ_CST) == val)
		sys6(SYS_futex, (long)addr, 0 /* FUTEX_WAIT */, val, 0, 0, 0);
}

/* ---------------------------------------------------------------- roles in a re-executed program */

/*
 * Run fn(arg) in a child whose standard output is a pipe (fn usually ends
 * in an execve of a program that prints checks); copy its lines to ours,
 * except its final count line, whose checks are added to ours.  Returns the
 * child's wait status.
 */
ABI_FN int relay_child(int (*fn)(void *), void *arg)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], 1);
		close(p[1]);
		_exit(fn(arg));
	}
	close(p[1]);
	char buf[8192];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(p[0], buf + have, sizeof buf - 1 - have);
		if (n <= 0)
			break;
		have += n;
		char *start = buf, *nl;
		while ((nl = memchr(start, '\n', buf + have - start))) {
			*nl = 0;
			int c, f;
			if (sscanf(start, "-- %d checks, %d failed", &c, &f) == 2) {
				__atomic_fetch_add(&abi_checks, c, __ATOMIC_SEQ_CST);
				__atomic_fetch_add(&abi_failed, f, __ATOMIC_SEQ_CST);
			} else {
				say("%s", start);
			}
			start = nl + 1;
		}
		have -= start - buf;
		memmove(buf, start, have);
		if (have == sizeof buf - 1) {
			buf[have] = 0;
			say("%s", buf);
			have = 0;
		}
	}
	if (have) {
		buf[have] = 0;
		say("%s", buf);
	}
	close(p[0]);
	return wait_status(pid);
}

struct exec_args {
	const char *path;
	char *const *argv, *const *envp;
};

ABI_FN int relay_exec_fn(void *arg)
{
	struct exec_args *a = arg;
	execve(a->path, a->argv, a->envp);
	say("execve %s: %s", a->path, errname(errno));
	return 127;
}

/* Run `path` with argv and envp, relayed as relay_child says. */
ABI_FN int run_relayed(const char *path, char *const argv[], char *const envp[])
{
	struct exec_args a = { path, argv, envp };
	return relay_child(relay_exec_fn, &a);
}

/* This program's own file, for re-executing itself in another role. */
ABI_FN const char *self_exe(void)
{
	static char path[4096];
	if (!path[0]) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
		path[n > 0 ? n : 0] = 0;
	}
	return path;
}

#endif
