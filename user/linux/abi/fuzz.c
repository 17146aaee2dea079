/*
 * A system-call fuzzer: calls of random numbers with random arguments
 * (numbers at the edges, good and bad pointers, paths, descriptors), made
 * by children that may break themselves, four at a time. Each child is
 * in a session of its own, in a folder of its own, with its standard
 * descriptors on /dev/null and a timer that ends it if it waits too long;
 * a child that dies (a signal, a bad rt_sigreturn, its memory unmapped)
 * is replaced, and one that stops making calls is killed. Calls that
 * would reach beyond the child are never made or are aimed at itself:
 * no fork, exec or exit, signals only to itself, nothing that changes the
 * whole machine (reboot, mount, clocks, host name, modules, swap).
 *
 * Whatever the calls do, nothing else may break: afterwards a file is
 * written and read back, a pipe carries bytes, a child is forked and
 * execs; on Tessera every server is still the one that was there before
 * (none died and was restarted). The transcript shows only that, the
 * same on every correct system.
 *
 * `fuzz CALLS SEED`: 20,000 calls from seed 1 unless told.
 */
#include "abi.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#define RUNNING 4
#define PER_CHILD 500
#define SCRATCH (64 * 1024)
/* A child that has made no call for this long is killed. */
#define STUCK_MS 3000

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static uint64_t below(uint64_t n)
{
	return next() % n;
}

/* ----------------------------------------------------- what is never called */

/*
 * Calls whose effect reaches past the child: a new process or program
 * (fork bombs, the fuzzer replaced), its end (calls wasted), the whole
 * machine's state (reboot, mounts, clocks, names, modules, swap, accounting,
 * real-time scheduling that could starve the parent on one CPU).
 */
static const int never[] = {
	SYS_fork,	     SYS_vfork,		 SYS_clone,	       SYS_execve,
	SYS_execveat,	     SYS_exit,		 SYS_exit_group,       SYS_reboot,
	SYS_kexec_load,	     SYS_kexec_file_load, SYS_init_module,     SYS_finit_module,
	SYS_delete_module,   SYS_swapon,	 SYS_swapoff,	       SYS_acct,
	SYS_mount,	     SYS_umount2,	 SYS_pivot_root,       SYS_settimeofday,
	SYS_clock_settime,   SYS_adjtimex,	 SYS_clock_adjtime,    SYS_sethostname,
	SYS_setdomainname,   SYS_sched_setscheduler, SYS_sched_setattr, SYS_sched_setparam,
	SYS_iopl,	     SYS_ioperm,	 SYS_syslog,	       SYS_quotactl,
	SYS_vhangup,	     SYS_setns,		 SYS_unshare,	       SYS_fanotify_init,
	SYS_open_by_handle_at,
#ifdef SYS_clone3
	SYS_clone3,
#endif
#ifdef SYS_fsmount
	SYS_fsmount,	     SYS_move_mount,	 SYS_fsopen,	       SYS_fsconfig,
	SYS_open_tree,
#endif
};

/* Calls whose first argument is a process (or group) id: aimed at the child itself. */
static const int at_self[] = {
	SYS_kill,	      SYS_tkill,	   SYS_tgkill,		SYS_rt_sigqueueinfo,
	SYS_rt_tgsigqueueinfo, SYS_ptrace,	   SYS_process_vm_readv, SYS_process_vm_writev,
	SYS_prlimit64,	      SYS_setpriority,	   SYS_getpriority,	SYS_sched_setaffinity,
	SYS_kcmp,	      SYS_pidfd_open,	   SYS_migrate_pages,	SYS_move_pages,
	SYS_ioprio_set,	      SYS_get_robust_list, SYS_setpgid,		SYS_wait4,
	SYS_waitid,
};

static int listed(const int *list, size_t n, long nr)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == nr)
			return 1;
	return 0;
}

/* ----------------------------------------------------------- arguments */

static char *scratch;
static int fds[8];

static const char *const paths[] = {
	".", "f", "d", "d/f", "l", "p", "", "/proc/self/status", "/proc/self/fd", "/proc/self/maps",
	"/nonexistent/x", "d/../f", "f/", "dd/ee/ff",
};

static long number(void)
{
	switch (below(9)) {
	case 0:
		return 0;
	case 1:
		return -1;
	case 2:
		return (long)below(65);
	case 3:
		return 1L << below(64);
	case 4:
		return (long)(below(16) * 4096);
	case 5:
		return (long)next();
	case 6:
		return -(long)below(4097);
	case 7:
		return 0x7fffffff;
	default:
		return (long)(1UL << below(64)) - 1;
	}
}

static long pointer(void)
{
	switch (below(10)) {
	case 0:
		return 0;
	case 1:
		return 8;
	case 2:
		return 0x7fff00000000L; /* nothing mapped there */
	case 3:
		return (long)0xffff800000000000UL; /* the kernel's half */
	case 4:
		return (long)(uintptr_t)&next; /* text: read-only */
	case 5:
		return (long)(uintptr_t)(scratch + SCRATCH - below(64)); /* runs off the end */
	case 6:
		return (long)(uintptr_t)(scratch + below(SCRATCH) + 1); /* misaligned */
	case 7:
		return (long)(uintptr_t)paths[below(sizeof paths / sizeof paths[0])];
	default:
		return (long)(uintptr_t)(scratch + below(SCRATCH / 8) * 8);
	}
}

static long descriptor(void)
{
	switch (below(4)) {
	case 0:
		return (long)below(12);
	case 1:
		return -1;
	case 2:
		return 100000;
	default:
		return fds[below(8)];
	}
}

static long argument(void)
{
	switch (below(3)) {
	case 0:
		return number();
	case 1:
		return pointer();
	default:
		return descriptor();
	}
}

/* ------------------------------------------------------------- a child */

/* A child's calls: each counted in `made` before it is made. */
static void child(volatile long *made, long budget, uint64_t seed)
{
	rng = seed | 1;
	setsid();
	int null = open("/dev/null", O_RDWR);
	for (int i = 0; i < 3; i++)
		dup2(null, i);
	for (int fd = 3; fd < 64; fd++)
		close(fd);
	fds[0] = open("f", O_RDWR | O_CREAT, 0644);
	fds[1] = open(".", O_RDONLY | O_DIRECTORY);
	int p[2] = { -1, -1 };
	pipe(p);
	fds[2] = p[0];
	fds[3] = p[1];
	fds[4] = open("/proc/self/status", O_RDONLY);
	fds[5] = dup(0);
	fds[6] = socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0 ? p[0] : -1;
	fds[7] = fds[6] >= 0 ? p[1] : -1;
	for (size_t i = 0; i < SCRATCH; i += 8)
		*(uint64_t *)(scratch + i) = next();
	/* Ends the child if a call waits past the timer (ignored: the parent). */
	struct itimerval t = { { 0, 100000 }, { 0, 100000 } };
	setitimer(ITIMER_REAL, &t, NULL);
	/* Bounds on what it can take: CPU time, file sizes (a sparse file
	 * copied into itself would fill the disk), memory. */
	struct rlimit cpu = { 20, 20 }, fsize = { 1 << 20, 1 << 20 }, as = { 256 << 20, 256 << 20 };
	setrlimit(RLIMIT_CPU, &cpu);
	setrlimit(RLIMIT_FSIZE, &fsize);
	setrlimit(RLIMIT_AS, &as);
	for (long done = 0; done < budget; done++) {
		long nr;
		do
			nr = (long)below(460);
		while (listed(never, sizeof never / sizeof never[0], nr));
		long a[6];
		for (int i = 0; i < 6; i++)
			a[i] = argument();
		if (listed(at_self, sizeof at_self / sizeof at_self[0], nr))
			a[0] = below(2) ? 0 : getpid();
		/* No device file of a real device (a disk written at random). */
		if (nr == SYS_mknod)
			a[2] = 0;
		if (nr == SYS_mknodat)
			a[3] = 0;
		*made = done + 1;
		syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
	_exit(0);
}

/* ------------------------------------------------------------ the parent */

static long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

struct slot {
	pid_t pid;
	long budget, last, since;
};

/* `calls` calls by children RUNNING at a time: how many were made. */
static long fuzz(long calls, uint64_t seed, volatile long *made)
{
	struct slot s[RUNNING] = { 0 };
	long given = 0, counted = 0, children = 0;
	for (;;) {
		int running = 0;
		for (int k = 0; k < RUNNING; k++) {
			if (s[k].pid > 0) {
				int st;
				pid_t r = waitpid(s[k].pid, &st, WNOHANG);
				long m = made[k];
				if (r == s[k].pid && !WIFEXITED(st) && !WIFSIGNALED(st)) {
					/* Stopped (it asked to be traced): it goes. */
					kill(s[k].pid, SIGKILL);
				} else if (r == s[k].pid) {
					m = m < 0 ? 0 : m > s[k].budget ? s[k].budget : m;
					counted += m;
					given -= s[k].budget - m;
					s[k].pid = 0;
				} else if (m != s[k].last) {
					s[k].last = m;
					s[k].since = now_ms();
				} else if (now_ms() - s[k].since > STUCK_MS) {
					kill(s[k].pid, SIGKILL);
				}
			}
			if (s[k].pid == 0 && given < calls) {
				s[k].budget = calls - given < PER_CHILD ? calls - given : PER_CHILD;
				given += s[k].budget;
				made[k] = 0;
				s[k].last = 0;
				s[k].since = now_ms();
				uint64_t cs = seed * 1000003 + (uint64_t)children++;
				s[k].pid = fork();
				SETUP(s[k].pid);
				if (s[k].pid == 0)
					child(&made[k], s[k].budget, cs);
			}
			running += s[k].pid > 0;
		}
		if (running == 0)
			return counted;
		struct timespec nap = { 0, 2000000 };
		nanosleep(&nap, NULL);
	}
}

/* ------------------------------------------------- is everything still there */

/* The registered servers as "name pid" lines (Tessera; empty on Linux). */
static void servers(char *out, size_t max)
{
	static char text[16384];
	out[0] = 0;
	if (read_text("/proc/tessera/servers", text, sizeof text) != 0)
		return;
	size_t at = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64];
		long pid;
		if (sscanf(line, "%63s %ld", name, &pid) == 2 && at < max)
			at += (size_t)snprintf(out + at, max - at, "%s %ld\n", name, pid);
	}
}

static int file_works(void)
{
	const char text[] = "still here";
	char back[sizeof text];
	int fd = open("/tmp/fuzz-after", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 0;
	int ok = write(fd, text, sizeof text) == (ssize_t)sizeof text && pread(fd, back, sizeof back, 0) == (ssize_t)sizeof back &&
		 memcmp(text, back, sizeof text) == 0;
	close(fd);
	return ok && unlink("/tmp/fuzz-after") == 0;
}

static int pipe_works(void)
{
	int p[2];
	char b[4] = { 0 };
	if (pipe(p) != 0)
		return 0;
	int ok = write(p[1], "abc", 4) == 4 && read(p[0], b, 4) == 4 && strcmp(b, "abc") == 0;
	close(p[0]);
	close(p[1]);
	return ok;
}

static int exec_works(const char *self)
{
	pid_t c = fork();
	if (c == 0) {
		execl(self, "fuzz", "exit", "7", (char *)NULL);
		_exit(1);
	}
	int st = wait_status(c);
	return c > 0 && st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 7;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "exit") == 0)
		return atoi(argv[2]);
	abi_init();
	long calls = argc > 1 ? atol(argv[1]) : 20000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	/* Between guard pages: a call that runs off its end must fault, not
	 * write into the pages shared with the parent. */
	char *area = mmap(NULL, SCRATCH + 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(area == MAP_FAILED ? -1 : 0);
	scratch = area + 4096;
	SETUP(mprotect(scratch, SCRATCH, PROT_READ | PROT_WRITE));
	volatile long *made = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	SETUP(made == MAP_FAILED ? -1 : 0);
	/* The children's folder, and what its paths name. */
	SETUP(mkdir("play", 0755));
	SETUP(chdir("play"));
	SETUP(mkdir("d", 0755));
	SETUP(symlink("f", "l"));
	SETUP(mkfifo("p", 0644));
	static char before[4096], after[4096];
	servers(before, sizeof before);
	section("random system calls");
	long made_calls = fuzz(calls, seed, made);
	char name[64];
	snprintf(name, sizeof name, "calls made of %ld", calls);
	EXPECT_EQ(name, made_calls, calls);

	section("afterwards");
	EXPECT_TRUE("a file is written and read back", file_works());
	EXPECT_TRUE("a pipe carries bytes", pipe_works());
	EXPECT_TRUE("a child forks and execs", exec_works(argv[0]));
	servers(after, sizeof after);
	if (strcmp(before, after) != 0)
		say("(servers before:\n%s after:\n%s)", before, after);
	EXPECT_TRUE("every server is the one before", strcmp(before, after) == 0);
	return abi_done();
}
