/*
 * The system as a whole: uname (and sethostname), sysinfo against
 * /proc/meminfo and /proc/uptime, getrandom, sysfs against
 * /proc/filesystems, ustat, adjtimex's clock parameters, and the checks
 * of reboot (only Ctrl-Alt-Del's setting is changed), iopl and ioperm.
 */
#include "abi.h"

#include <sys/random.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <sys/timex.h>
#include <sys/utsname.h>
#include <time.h>

struct abi_ustat {
	int f_tfree;
	unsigned long f_tinode;
	char f_fname[6];
	char f_fpack[6];
};

static int lines_of(const char *path)
{
	static char text[8192];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, text, sizeof text);
	if (fd >= 0)
		close(fd);
	int lines = 0;
	for (ssize_t i = 0; i < n; i++)
		lines += text[i] == '\n';
	return lines;
}

static void file_systems(void)
{
	section("sysfs");
	long proc = syscall(SYS_sysfs, 1, "proc");
	EXPECT_TRUE("sysfs(1, \"proc\") is an index", proc >= 0);
	char name[64] = { 0 };
	EXPECT_OK("sysfs(2, that index)", syscall(SYS_sysfs, 2, proc, name));
	EXPECT_STR("its name", name, "proc");
	long n = syscall(SYS_sysfs, 3);
	EXPECT_TRUE("sysfs(3) counts /proc/filesystems's lines", n > proc && n == lines_of("/proc/filesystems"));
	EXPECT_ERR("sysfs(2) past the last", syscall(SYS_sysfs, 2, n, name), EINVAL);
	EXPECT_ERR("sysfs(1) of an unknown name", syscall(SYS_sysfs, 1, "ext0"), EINVAL);
	EXPECT_ERR("sysfs(1) of a bad pointer", syscall(SYS_sysfs, 1, BAD_PTR), EFAULT);
	EXPECT_ERR("sysfs(2) into a bad pointer", syscall(SYS_sysfs, 2, proc, BAD_PTR), EFAULT);
	EXPECT_ERR("sysfs(4)", syscall(SYS_sysfs, 4, 0, name), EINVAL);
	EXPECT_ERR("sysfs(0)", syscall(SYS_sysfs, 0, 0, name), EINVAL);

	section("ustat");
	struct stat st;
	stat(".", &st);
	struct abi_ustat u;
	memset(&u, 0x55, sizeof u);
	EXPECT_OK("ustat of this folder's device", syscall(SYS_ustat, (unsigned)st.st_dev, &u));
	struct statfs sf;
	statfs(".", &sf);
	EXPECT_TRUE("f_tfree is at most the blocks there are", u.f_tfree >= 0 && (unsigned long)u.f_tfree <= sf.f_blocks);
	EXPECT_TRUE("f_fname and f_fpack are empty", u.f_fname[0] == 0 && u.f_fpack[0] == 0);
	EXPECT_ERR("ustat of a device with no file system", syscall(SYS_ustat, 0xfffffffu, &u), EINVAL);
	EXPECT_ERR("ustat into a bad pointer", syscall(SYS_ustat, (unsigned)st.st_dev, BAD_PTR), EFAULT);
}

static void clock_parameters(void)
{
	section("adjtimex");
	struct timex t, saved;
	memset(&saved, 0, sizeof saved);
	long state = syscall(SYS_adjtimex, &saved);
	EXPECT_TRUE("reading answers a clock state", state >= TIME_OK && state <= TIME_ERROR);
	EXPECT_EQ("tick (µs per 1/100 s)", saved.tick, 10000);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	EXPECT_TRUE("its time is CLOCK_REALTIME's (within 2 s)", saved.time.tv_sec >= now.tv_sec - 2 && saved.time.tv_sec <= now.tv_sec);
	memset(&t, 0, sizeof t);
	t.modes = ADJ_TICK;
	t.tick = 10001;
	EXPECT_TRUE("ADJ_TICK 10001", syscall(SYS_adjtimex, &t) >= 0);
	memset(&t, 0, sizeof t);
	syscall(SYS_adjtimex, &t);
	EXPECT_EQ("tick read back", t.tick, 10001);
	memset(&t, 0, sizeof t);
	t.modes = ADJ_MAXERROR | ADJ_TIMECONST;
	t.maxerror = 1000;
	t.constant = 3;
	EXPECT_TRUE("ADJ_MAXERROR 1000, ADJ_TIMECONST 3", syscall(SYS_adjtimex, &t) >= 0);
	memset(&t, 0, sizeof t);
	syscall(SYS_adjtimex, &t);
	EXPECT_TRUE("maxerror read back (it grows with time)", t.maxerror >= 1000 && t.maxerror < 100000);
	EXPECT_EQ("constant read back (4 more, in microseconds mode)", t.constant, 7);
	memset(&t, 0, sizeof t);
	t.modes = ADJ_OFFSET_SINGLESHOT;
	EXPECT_TRUE("ADJ_OFFSET_SINGLESHOT of 0", syscall(SYS_adjtimex, &t) >= 0);
	memset(&t, 0, sizeof t);
	t.modes = ADJ_OFFSET_SS_READ;
	EXPECT_TRUE("ADJ_OFFSET_SS_READ", syscall(SYS_adjtimex, &t) >= 0);
	EXPECT_EQ("no adjustment left", t.offset, 0);
	memset(&t, 0, sizeof t);
	t.modes = 0x8000;
	EXPECT_ERR("ADJ_ADJTIME without ADJ_OFFSET", syscall(SYS_adjtimex, &t), EINVAL);
	EXPECT_EQ("nothing written back (tai)", t.tai, 0);
	t.modes = ADJ_TICK;
	t.tick = 8999;
	EXPECT_ERR("ADJ_TICK 8999", syscall(SYS_adjtimex, &t), EINVAL);
	t.tick = 11001;
	EXPECT_ERR("ADJ_TICK 11001", syscall(SYS_adjtimex, &t), EINVAL);
	EXPECT_ERR("from a bad pointer", syscall(SYS_adjtimex, BAD_PTR), EFAULT);
	pid_t c = fork();
	if (c == 0) {
		setuid(1000);
		struct timex u;
		memset(&u, 0, sizeof u);
		int ok = syscall(SYS_adjtimex, &u) >= 0 && u.tick == 10001;
		u.modes = ADJ_TICK;
		u.tick = 10000;
		ok = ok && syscall(SYS_adjtimex, &u) == -1 && errno == EPERM;
		u.modes = ADJ_OFFSET_SINGLESHOT;
		u.offset = 0;
		ok = ok && syscall(SYS_adjtimex, &u) == -1 && errno == EPERM;
		u.modes = ADJ_OFFSET_SS_READ;
		ok = ok && syscall(SYS_adjtimex, &u) >= 0;
		_exit(ok ? 0 : 1);
	}
	EXPECT_STATUS("uid 1000 reads, and changes nothing (EPERM)", wait_status(c), "exited 0");
	saved.modes = ADJ_TICK | ADJ_MAXERROR | ADJ_ESTERROR | ADJ_STATUS | ADJ_TIMECONST;
	if (saved.status & STA_NANO)
		saved.modes |= ADJ_NANO;
	else
		saved.constant -= 4;
	EXPECT_TRUE("the saved parameters back", syscall(SYS_adjtimex, &saved) >= 0);
}

static long meminfo_kb(const char *key)
{
	static char buf[8192];
	int fd = open("/proc/meminfo", O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	char *p = strstr(buf, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static void reboot_checks(void)
{
	section("reboot");
	const long m1 = 0xfee1dead, m2 = 0x28121969;
	EXPECT_OK("Ctrl-Alt-Del off", syscall(SYS_reboot, m1, m2, 0));
	EXPECT_OK("the second magic of 1996", syscall(SYS_reboot, m1, 0x05121996, 0));
	EXPECT_ERR("a bad first magic", syscall(SYS_reboot, 0xfee1deadL + 1, m2, 0), EINVAL);
	EXPECT_ERR("a bad second magic", syscall(SYS_reboot, m1, 12345, 0), EINVAL);
	EXPECT_ERR("an unknown command", syscall(SYS_reboot, m1, m2, 0x12345678), EINVAL);
	pid_t c = fork();
	if (c == 0) {
		setuid(1000);
		_exit(syscall(SYS_reboot, m1, m2, 0) == -1 && errno == EPERM ? 0 : 1);
	}
	EXPECT_STATUS("by uid 1000 (EPERM)", wait_status(c), "exited 0");
	c = fork();
	if (c == 0) {
		setuid(1000);
		_exit(syscall(SYS_reboot, 1, 2, 0x12345678) == -1 && errno == EPERM ? 0 : 1);
	}
	EXPECT_STATUS("bad magic by uid 1000 (EPERM first)", wait_status(c), "exited 0");

	section("iopl and ioperm (arguments; no port is asked for)");
	EXPECT_ERR("iopl 4", syscall(SYS_iopl, 4), EINVAL);
	EXPECT_OK("iopl 0", syscall(SYS_iopl, 0));
	EXPECT_ERR("ioperm past port 0xffff", syscall(SYS_ioperm, 0xffffUL, 2, 1), EINVAL);
	EXPECT_ERR("ioperm of no ports", syscall(SYS_ioperm, 0x80, 0, 1), EINVAL);
	EXPECT_OK("ioperm turning ports off", syscall(SYS_ioperm, 0x80, 8, 0));
	c = fork();
	if (c == 0) {
		setuid(1000);
		_exit(syscall(SYS_iopl, 3) == -1 && errno == EPERM && syscall(SYS_ioperm, 0x80, 1, 1) == -1 &&
				      errno == EPERM ?
			      0 :
			      1);
	}
	EXPECT_STATUS("by uid 1000 (EPERM)", wait_status(c), "exited 0");
}

int main(void)
{
	abi_init();

	section("sysinfo");
	struct sysinfo si;
	EXPECT_OK("sysinfo", syscall(SYS_sysinfo, &si));
	EXPECT_EQ("mem_unit", si.mem_unit, 1);
	EXPECT_TRUE("totalram is /proc/meminfo's MemTotal", si.totalram == (unsigned long)meminfo_kb("MemTotal:") * 1024);
	EXPECT_TRUE("freeram is below totalram", si.freeram > 0 && si.freeram < si.totalram);
	EXPECT_EQ("totalswap (no swap)", si.totalswap, 0);
	EXPECT_EQ("totalhigh (no high memory on 64-bit)", si.totalhigh, 0);
	EXPECT_TRUE("procs counts at least this process and init", si.procs >= 2);
	char up[64] = { 0 };
	int fd = open("/proc/uptime", O_RDONLY);
	read(fd, up, sizeof up - 1);
	close(fd);
	long uptime = strtol(up, NULL, 10);
	EXPECT_TRUE("uptime agrees with /proc/uptime (within 2 s)", (long)si.uptime >= uptime - 2 && (long)si.uptime <= uptime + 2);
	EXPECT_ERR("to a bad pointer", syscall(SYS_sysinfo, BAD_PTR), EFAULT);

	section("getrandom");
	unsigned char a[64], b[64];
	memset(a, 0, sizeof a);
	memset(b, 0, sizeof b);
	EXPECT_EQ("64 bytes", syscall(SYS_getrandom, a, sizeof a, 0), 64);
	EXPECT_EQ("64 more, GRND_NONBLOCK", syscall(SYS_getrandom, b, sizeof b, GRND_NONBLOCK), 64);
	EXPECT_TRUE("they differ", memcmp(a, b, sizeof a) != 0);
	EXPECT_EQ("GRND_RANDOM", syscall(SYS_getrandom, b, 16, GRND_RANDOM), 16);
	EXPECT_EQ("0 bytes", syscall(SYS_getrandom, b, 0, 0), 0);
	EXPECT_ERR("unknown flags", syscall(SYS_getrandom, b, 16, 0x40), EINVAL);
	EXPECT_ERR("into a bad buffer", syscall(SYS_getrandom, BAD_PTR, 16, 0), EFAULT);
	static unsigned char big[1 << 20];
	EXPECT_EQ("1 MiB at once", syscall(SYS_getrandom, big, sizeof big, 0), 1 << 20);
	file_systems();
	clock_parameters();
	reboot_checks();
	section("uname");
	struct utsname u;
	EXPECT_OK("uname", syscall(SYS_uname, &u));
	EXPECT_STR("sysname", u.sysname, "Linux");
	EXPECT_STR("machine", u.machine, "x86_64");
	/* A kernel nobody has named yet calls itself "(none)". */
	EXPECT_STR("nodename", u.nodename, "(none)");
	EXPECT_STR("domainname", u.domainname, "(none)");
	EXPECT_TRUE("release starts with a digit", u.release[0] >= '0' && u.release[0] <= '9');
	EXPECT_TRUE("version is not empty", u.version[0] != 0);
	EXPECT_ERR("to a bad pointer", syscall(SYS_uname, BAD_PTR), EFAULT);
	if (strcmp(u.nodename, "(none)") != 0) {
		/* A machine with a name is not a test machine: leave it alone. */
		say("the host has a name: sethostname not tried");
		return abi_done();
	}
	EXPECT_OK("sethostname", sethostname("tessera-test", 12));
	syscall(SYS_uname, &u);
	EXPECT_STR("nodename after it", u.nodename, "tessera-test");
	char name[80];
	EXPECT_OK("gethostname", gethostname(name, sizeof name));
	EXPECT_STR("gethostname", name, "tessera-test");
	EXPECT_ERR("sethostname of 65 characters", sethostname(name, 65), EINVAL);
	EXPECT_ERR("sethostname with a negative length", syscall(SYS_sethostname, name, -1), EINVAL);
	EXPECT_OK("back to (none)", sethostname("(none)", 6));
	pid_t c = fork();
	if (c == 0) {
		setuid(1000);
		_exit(sethostname("x", 1) == -1 && errno == EPERM ? 0 : 1);
	}
	EXPECT_STATUS("sethostname by uid 1000 (EPERM)", wait_status(c), "exited 0");

	return abi_done();
}
