/*
 * Per-process settings: prlimit64 (the limits a process starts with, and
 * their effect), arch_prctl for the TLS registers, sched_yield and
 * sched_getaffinity.
 */
#include "abi.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#define ARCH_SET_GS 0x1001
#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003
#define ARCH_GET_GS 0x1004
#define ARCH_GET_CPUID 0x1011
#define ARCH_SET_CPUID 0x1012

static void show_limit(const char *name, int resource)
{
	struct rlimit rl;
	if (syscall(SYS_prlimit64, 0, resource, NULL, &rl) != 0) {
		EXPECT_OK(name, -1);
		return;
	}
	char soft[32], hard[32];
	snprintf(soft, sizeof soft, rl.rlim_cur == RLIM_INFINITY ? "unlimited" : "%llu",
		 (unsigned long long)rl.rlim_cur);
	snprintf(hard, sizeof hard, rl.rlim_max == RLIM_INFINITY ? "unlimited" : "%llu",
		 (unsigned long long)rl.rlim_max);
	say("%s: soft %s, hard %s", name, soft, hard);
}

static int nofile_effect(void *arg)
{
	(void)arg;
	struct rlimit rl = { 8, 8 };
	EXPECT_OK("lower RLIMIT_NOFILE to 8", syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &rl, NULL));
	int last = -1, n = 0;
	for (;;) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0)
			break;
		last = fd;
		n++;
	}
	EXPECT_ERR("open beyond it", open("/dev/null", O_RDONLY), EMFILE);
	EXPECT_EQ("the highest descriptor", last, 7);
	EXPECT_ERR("dup2 to descriptor 8", dup2(0, 8), EBADF);
	EXPECT_ERR("fcntl F_DUPFD from 8", fcntl(0, F_DUPFD, 8), EINVAL);
	rl.rlim_cur = 16;
	EXPECT_ERR("raise the soft limit above the hard", syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &rl, NULL), EINVAL);
	rl.rlim_max = 16;
	EXPECT_OK("root may raise the hard limit", syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &rl, NULL));
	setuid(1000);
	rl.rlim_max = rl.rlim_cur = 32;
	EXPECT_ERR("not as another user", syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &rl, NULL), EPERM);
	rl.rlim_max = rl.rlim_cur = 12;
	EXPECT_OK("lowering is allowed to anyone", syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &rl, NULL));
	return 0;
}

static int fsize_effect(void *arg)
{
	(void)arg;
	struct rlimit rl = { 10, 10 };
	signal(SIGXFSZ, SIG_IGN);
	EXPECT_OK("RLIMIT_FSIZE 10 bytes", setrlimit(RLIMIT_FSIZE, &rl));
	int fd = open("fsize", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	EXPECT_EQ("write 16 bytes: only up to the limit", write(fd, "0123456789abcdef", 16), 10);
	EXPECT_ERR("write at the limit (SIGXFSZ ignored)", write(fd, "x", 1), EFBIG);
	EXPECT_ERR("ftruncate past the limit", ftruncate(fd, 11), EFBIG);
	EXPECT_OK("ftruncate within it", ftruncate(fd, 5));
	EXPECT_ERR("truncate past the limit", truncate("fsize", 100), EFBIG);
	EXPECT_OK("truncate within it", truncate("fsize", 10));
	close(fd);
	return 0;
}

static int fsize_signal(void *arg)
{
	(void)arg;
	struct rlimit rl = { 10, 10 };
	setrlimit(RLIMIT_FSIZE, &rl);
	int fd = open("fsize", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	write(fd, "0123456789abcdef", 16);
	write(fd, "x", 1);
	return 0;
}

/* A forked child's name: its parent's, renamed or not. */
static int child_name(void *arg)
{
	char name[16] = "";
	if (prctl(PR_GET_NAME, name) != 0)
		return 2;
	return strcmp(name, arg) == 0 ? 0 : 1;
}

/* The name /proc/self/comm shows, without its newline. */
static void comm_now(char *comm, size_t max)
{
	comm[0] = 0;
	read_text("/proc/self/comm", comm, max);
	comm[strcspn(comm, "\n")] = 0;
}

static volatile int got_usr2;

static void on_usr2(int s)
{
	(void)s;
	got_usr2 = 1;
}

static int read_long(const char *path)
{
	char b[32] = { 0 };
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	read(fd, b, sizeof b - 1);
	close(fd);
	return (int)strtol(b, NULL, 10);
}

/* The middle of three generations: its child asks for SIGUSR2 when it
 * ends, and tells the grandparent through a pipe whether it came. */
static int pdeath_middle(void *arg)
{
	int *p = arg;
	pid_t c = fork();
	if (c == 0) {
		signal(SIGUSR2, on_usr2);
		prctl(PR_SET_PDEATHSIG, SIGUSR2);
		write(p[1], "r", 1);
		/* At most 10 s: a signal that never comes fails, never hangs. */
		for (int i = 0; i < 1000 && !got_usr2; i++)
			usleep(10000);
		write(p[1], got_usr2 ? "y" : "n", 1);
		_exit(0);
	}
	char r;
	read(p[0], &r, 1);
	return 0;
}

static void prctl_checks(void)
{
	section("prctl: parent-death signal, timer slack");
	int sig = -1;
	EXPECT_OK("PR_GET_PDEATHSIG", prctl(PR_GET_PDEATHSIG, &sig));
	EXPECT_EQ("none at first", sig, 0);
	EXPECT_OK("PR_SET_PDEATHSIG SIGUSR1", prctl(PR_SET_PDEATHSIG, SIGUSR1));
	EXPECT_OK("PR_GET_PDEATHSIG", prctl(PR_GET_PDEATHSIG, &sig));
	EXPECT_EQ("SIGUSR1", sig, SIGUSR1);
	EXPECT_ERR("signal 65", prctl(PR_SET_PDEATHSIG, 65), EINVAL);
	EXPECT_ERR("PR_GET_PDEATHSIG to a bad pointer", prctl(PR_GET_PDEATHSIG, BAD_PTR), EFAULT);
	pid_t c = fork();
	if (c == 0) {
		int s = -1;
		prctl(PR_GET_PDEATHSIG, &s);
		_exit(s);
	}
	EXPECT_STATUS("a child has none", wait_status(c), "exited 0");
	EXPECT_OK("PR_SET_PDEATHSIG 0", prctl(PR_SET_PDEATHSIG, 0));
	int p[2];
	pipe(p);
	EXPECT_STATUS("the middle process ends", in_child(pdeath_middle, p), "exited 0");
	/* The middle one took the "r": what is left is the orphan's answer. */
	char r = 0;
	read(p[0], &r, 1);
	EXPECT_TRUE("the orphan got SIGUSR2", r == 'y');
	close(p[0]);
	close(p[1]);

	EXPECT_EQ("PR_GET_TIMERSLACK: 50 us", prctl(PR_GET_TIMERSLACK), 50000);
	EXPECT_EQ("/proc/self/timerslack_ns", read_long("/proc/self/timerslack_ns"), 50000);
	EXPECT_OK("PR_SET_TIMERSLACK 70000", prctl(PR_SET_TIMERSLACK, 70000));
	EXPECT_EQ("PR_GET_TIMERSLACK", prctl(PR_GET_TIMERSLACK), 70000);
	EXPECT_EQ("/proc/self/timerslack_ns", read_long("/proc/self/timerslack_ns"), 70000);
	c = fork();
	if (c == 0) {
		if (prctl(PR_GET_TIMERSLACK) != 70000)
			_exit(1);
		prctl(PR_SET_TIMERSLACK, 1);
		prctl(PR_SET_TIMERSLACK, 0);
		_exit(prctl(PR_GET_TIMERSLACK) == 70000 ? 0 : 2);
	}
	EXPECT_STATUS("a child inherits it, as its default too", wait_status(c), "exited 0");
	EXPECT_OK("PR_SET_TIMERSLACK 0", prctl(PR_SET_TIMERSLACK, 0));
	EXPECT_EQ("back to the default", prctl(PR_GET_TIMERSLACK), 50000);
}

int main(void)
{
	abi_init();
	pid_t me = getpid();

	section("limits a process starts with");
	show_limit("RLIMIT_CPU", RLIMIT_CPU);
	show_limit("RLIMIT_FSIZE", RLIMIT_FSIZE);
	show_limit("RLIMIT_DATA", RLIMIT_DATA);
	show_limit("RLIMIT_STACK", RLIMIT_STACK);
	show_limit("RLIMIT_CORE", RLIMIT_CORE);
	show_limit("RLIMIT_NOFILE", RLIMIT_NOFILE);
	show_limit("RLIMIT_AS", RLIMIT_AS);
	show_limit("RLIMIT_LOCKS", RLIMIT_LOCKS);
	show_limit("RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE);
	show_limit("RLIMIT_NICE", RLIMIT_NICE);
	show_limit("RLIMIT_RTPRIO", RLIMIT_RTPRIO);
	show_limit("RLIMIT_RTTIME", RLIMIT_RTTIME);

	section("prlimit64");
	struct rlimit rl;
	EXPECT_OK("prlimit64 of our own pid", syscall(SYS_prlimit64, me, RLIMIT_NOFILE, NULL, &rl));
	EXPECT_OK("getrlimit", getrlimit(RLIMIT_STACK, &rl));
	EXPECT_ERR("an unknown resource", syscall(SYS_prlimit64, 0, 16, NULL, &rl), EINVAL);
	EXPECT_ERR("a process that does not exist", syscall(SYS_prlimit64, 0x7fffffff, RLIMIT_NOFILE, NULL, &rl), ESRCH);
	EXPECT_ERR("to a bad pointer", syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, BAD_PTR), EFAULT);
	EXPECT_ERR("from a bad pointer", syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, BAD_PTR, NULL), EFAULT);
	EXPECT_STATUS("RLIMIT_NOFILE at work", in_child(nofile_effect, NULL), "exited 0");
	EXPECT_STATUS("RLIMIT_FSIZE with SIGXFSZ ignored", in_child(fsize_effect, NULL), "exited 0");
	EXPECT_STATUS("RLIMIT_FSIZE by default", in_child(fsize_signal, NULL), "killed by SIGXFSZ");

	section("arch_prctl");
	unsigned long fs = 0, gs = 1;
	EXPECT_OK("ARCH_GET_FS", syscall(SYS_arch_prctl, ARCH_GET_FS, &fs));
	unsigned long self_ptr;
	__asm__ volatile("mov %%fs:0, %0" : "=r"(self_ptr));
	EXPECT_TRUE("the FS base is the thread pointer libc keeps at %fs:0", fs == self_ptr);
	EXPECT_OK("ARCH_GET_GS", syscall(SYS_arch_prctl, ARCH_GET_GS, &gs));
	EXPECT_EQ("GS base at start", gs, 0);
	static unsigned long block[4];
	EXPECT_OK("ARCH_SET_GS", syscall(SYS_arch_prctl, ARCH_SET_GS, block));
	block[1] = 0x1234;
	unsigned long via_gs;
	__asm__ volatile("mov %%gs:8, %0" : "=r"(via_gs));
	EXPECT_EQ("%gs:8 reads the block", via_gs, 0x1234);
	EXPECT_OK("ARCH_GET_GS after", syscall(SYS_arch_prctl, ARCH_GET_GS, &gs));
	EXPECT_TRUE("it is the block", gs == (unsigned long)block);
	EXPECT_OK("ARCH_SET_GS 0", syscall(SYS_arch_prctl, ARCH_SET_GS, 0));
	EXPECT_ERR("an unknown code", syscall(SYS_arch_prctl, 0x1fff, 0), EINVAL);
	/* A processor without CPUID faulting (QEMU's, as the reference
	 * machine's /proc/cpuinfo says): CPUID cannot be turned off. */
	EXPECT_EQ("ARCH_GET_CPUID", syscall(SYS_arch_prctl, ARCH_GET_CPUID, 0), 1);
	EXPECT_ERR("ARCH_SET_CPUID 0", syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0), ENODEV);
	EXPECT_ERR("ARCH_SET_CPUID 1", syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1), ENODEV);
	EXPECT_ERR("ARCH_GET_FS to a bad pointer", syscall(SYS_arch_prctl, ARCH_GET_FS, BAD_PTR), EFAULT);
	EXPECT_ERR("ARCH_SET_FS to a non-canonical address",
		   syscall(SYS_arch_prctl, ARCH_SET_FS, 0x8000000000000000UL), EPERM);

	section("prctl names");
	char name[16] = "", comm[64];
	EXPECT_OK("PR_GET_NAME", prctl(PR_GET_NAME, name));
	EXPECT_STR("the program's own name", name, "proc_limits");
	EXPECT_OK("PR_SET_NAME of 18 bytes", prctl(PR_SET_NAME, "renamed-123456789"));
	EXPECT_OK("PR_GET_NAME after", prctl(PR_GET_NAME, name));
	EXPECT_STR("the first 15 bytes are kept", name, "renamed-1234567");
	comm_now(comm, sizeof comm);
	EXPECT_STR("/proc/self/comm shows it", comm, "renamed-1234567");
	EXPECT_STATUS("a forked child has it", in_child(child_name, "renamed-1234567"), "exited 0");
	EXPECT_OK("PR_SET_NAME of 2 bytes", prctl(PR_SET_NAME, "ab"));
	EXPECT_OK("PR_GET_NAME again", prctl(PR_GET_NAME, name));
	EXPECT_STR("nothing of the longer name is left", name, "ab");
	EXPECT_ERR("PR_SET_NAME from a bad pointer", prctl(PR_SET_NAME, BAD_PTR), EFAULT);
	EXPECT_ERR("PR_GET_NAME to a bad pointer", prctl(PR_GET_NAME, BAD_PTR), EFAULT);
	comm_now(comm, sizeof comm);
	EXPECT_STR("a bad pointer changed nothing", comm, "ab");
	EXPECT_OK("PR_SET_NAME back", prctl(PR_SET_NAME, "proc_limits"));

	section("sched_yield and sched_getaffinity");
	EXPECT_EQ("sched_yield", syscall(SYS_sched_yield), 0);
	unsigned long mask[16] = { 0 };
	long n = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
	/* The kernel's answer is the size of its CPU mask in bytes. */
	EXPECT_EQ("sched_getaffinity returns", n, 8);
	EXPECT_TRUE("CPU 0 is in the mask", mask[0] & 1);
	EXPECT_ERR("a buffer smaller than the kernel's mask", syscall(SYS_sched_getaffinity, 0, 4, mask), EINVAL);
	EXPECT_ERR("a size not a multiple of 8", syscall(SYS_sched_getaffinity, 0, 12, mask), EINVAL);
	EXPECT_ERR("to a bad pointer", syscall(SYS_sched_getaffinity, 0, 8, BAD_PTR), EFAULT);
	EXPECT_ERR("of no process", syscall(SYS_sched_getaffinity, 0x7fffffff, 8, mask), ESRCH);
	EXPECT_OK("sched_setaffinity to the same mask", syscall(SYS_sched_setaffinity, 0, 8, mask));
	prctl_checks();
	return abi_done();
}
