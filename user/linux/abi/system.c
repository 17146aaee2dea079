/*
 * The system as a whole: uname (and sethostname), sysinfo against
 * /proc/meminfo and /proc/uptime, and getrandom.
 */
#include "abi.h"

#include <sys/random.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>

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
