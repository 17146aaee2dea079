/*
 * The uid/gid family: getuid, geteuid, getgid, getegid, getresuid,
 * getresgid, setuid, setgid, setreuid, setresuid, setresgid, setfsuid,
 * getgroups, setgroups, and the capability sets (capget, capset,
 * PR_CAPBSET_READ/DROP, what setuid does to them).  Run as root; every change of identity happens in a
 * child, so the parent stays root.
 */
#include "abi.h"

#include <grp.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>

static int drop_to_1000(void *arg)
{
	(void)arg;
	/* setuid as root sets real, effective and saved ids at once. */
	EXPECT_OK("setgid(1000) as root", syscall(SYS_setgid, 1000));
	EXPECT_OK("setuid(1000) as root", syscall(SYS_setuid, 1000));
	uid_t r, e, s;
	syscall(SYS_getresuid, &r, &e, &s);
	EXPECT_EQ("after setuid: real uid", r, 1000);
	EXPECT_EQ("after setuid: effective uid", e, 1000);
	EXPECT_EQ("after setuid: saved uid", s, 1000);
	EXPECT_ERR("setuid(0) without privilege", syscall(SYS_setuid, 0), EPERM);
	EXPECT_ERR("setgid(0) without privilege", syscall(SYS_setgid, 0), EPERM);
	EXPECT_OK("setuid(1000) to itself", syscall(SYS_setuid, 1000));
	EXPECT_ERR("setresuid(-1, 0, -1) without privilege", syscall(SYS_setresuid, -1, 0, -1), EPERM);
	EXPECT_ERR("setgroups without privilege", syscall(SYS_setgroups, 0, NULL), EPERM);
	EXPECT_ERR("setreuid(0, 0) without privilege", syscall(SYS_setreuid, 0, 0), EPERM);
	return 0;
}

static int saved_uid(void *arg)
{
	(void)arg;
	/* Effective 1000, saved 0: the saved id lets the process come back. */
	EXPECT_OK("setresuid(-1, 1000, 0)", syscall(SYS_setresuid, -1, 1000, 0));
	EXPECT_EQ("geteuid", syscall(SYS_geteuid), 1000);
	EXPECT_EQ("getuid", syscall(SYS_getuid), 0);
	EXPECT_OK("seteuid back to the saved 0", syscall(SYS_setresuid, -1, 0, -1));
	EXPECT_EQ("geteuid again", syscall(SYS_geteuid), 0);
	EXPECT_OK("setreuid(1000, 1000)", syscall(SYS_setreuid, 1000, 1000));
	uid_t r, e, s;
	syscall(SYS_getresuid, &r, &e, &s);
	/* setreuid with a real id given sets saved = new effective. */
	EXPECT_EQ("after setreuid: saved uid", s, 1000);
	return 0;
}

static int fsuid(void *arg)
{
	(void)arg;
	/* setfsuid returns the previous value whether or not it changed it. */
	EXPECT_EQ("setfsuid(1000) returns the old fsuid", syscall(SYS_setfsuid, 1000), 0);
	EXPECT_EQ("setfsuid(-1) returns the current fsuid", syscall(SYS_setfsuid, -1), 1000);
	EXPECT_EQ("setfsgid(1000) returns the old fsgid", syscall(SYS_setfsgid, 1000), 0);
	EXPECT_EQ("geteuid is unchanged", syscall(SYS_geteuid), 0);
	return 0;
}

static int groups(void *arg)
{
	(void)arg;
	gid_t list[4] = { 5, 7, 9, 7 };
	EXPECT_OK("setgroups(4)", syscall(SYS_setgroups, 4, list));
	EXPECT_EQ("getgroups(0) counts", syscall(SYS_getgroups, 0, NULL), 4);
	gid_t got[8] = { 0 };
	EXPECT_EQ("getgroups(8)", syscall(SYS_getgroups, 8, got), 4);
	/* The kernel keeps the list sorted (it binary-searches it). */
	say("groups: %u %u %u %u", got[0], got[1], got[2], got[3]);
	EXPECT_ERR("getgroups with too small a buffer", syscall(SYS_getgroups, 2, got), EINVAL);
	EXPECT_ERR("getgroups(-1)", syscall(SYS_getgroups, -1, got), EINVAL);
	EXPECT_ERR("getgroups to a bad pointer", syscall(SYS_getgroups, 4, BAD_PTR), EFAULT);
	EXPECT_ERR("setgroups from a bad pointer", syscall(SYS_setgroups, 2, BAD_PTR), EFAULT);
	EXPECT_ERR("setgroups(-1)", syscall(SYS_setgroups, -1, list), EINVAL);
	EXPECT_ERR("setgroups(65537)", syscall(SYS_setgroups, 65537, list), EINVAL);
	EXPECT_OK("setgroups(0)", syscall(SYS_setgroups, 0, NULL));
	EXPECT_EQ("getgroups(0) after clearing", syscall(SYS_getgroups, 0, NULL), 0);
	return 0;
}

/* <linux/capability.h>'s records (musl has no kernel headers). */
struct __user_cap_header_struct {
	unsigned version;
	int pid;
};
struct __user_cap_data_struct {
	unsigned effective, permitted, inheritable;
};
#define _LINUX_CAPABILITY_VERSION_1 0x19980330
#define _LINUX_CAPABILITY_VERSION_3 0x20080522
#define CAP_CHOWN 0
#define CAP_KILL 5
#define CAP_SETPCAP 8
#define CAP_NET_RAW 13
#define CAP_CHECKPOINT_RESTORE 40

/* The capability sets' two 32-bit halves as one word each. */
static int caps_of(int pid, unsigned long long set[3])
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, pid };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) != 0)
		return -1;
	set[0] = d[0].effective | (unsigned long long)d[1].effective << 32;
	set[1] = d[0].permitted | (unsigned long long)d[1].permitted << 32;
	set[2] = d[0].inheritable | (unsigned long long)d[1].inheritable << 32;
	return 0;
}

static int cap_set(int pid, unsigned long long e, unsigned long long p, unsigned long long i)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, pid };
	struct __user_cap_data_struct d[2] = {
		{ (unsigned)e, (unsigned)p, (unsigned)i },
		{ (unsigned)(e >> 32), (unsigned)(p >> 32), (unsigned)(i >> 32) },
	};
	return syscall(SYS_capset, &h, d);
}

#define ALL_CAPS ((1ULL << (CAP_CHECKPOINT_RESTORE + 1)) - 1)
#define BIT(c) (1ULL << (c))

static int cap_changes(void *arg)
{
	(void)arg;
	unsigned long long s[3];
	EXPECT_OK("capset: pE without CAP_NET_RAW", cap_set(0, ALL_CAPS & ~BIT(CAP_NET_RAW), ALL_CAPS, 0));
	caps_of(0, s);
	EXPECT_TRUE("capget: CAP_NET_RAW gone from pE, still in pP",
		    s[0] == (ALL_CAPS & ~BIT(CAP_NET_RAW)) && s[1] == ALL_CAPS);
	EXPECT_ERR("pE beyond pP", cap_set(0, ALL_CAPS, ALL_CAPS & ~BIT(CAP_KILL), 0), EPERM);
	EXPECT_ERR("another process's sets", cap_set(getppid(), 0, 0, 0), EPERM);
	EXPECT_EQ("PR_CAPBSET_READ CAP_KILL", prctl(PR_CAPBSET_READ, CAP_KILL), 1);
	EXPECT_OK("PR_CAPBSET_DROP CAP_KILL", prctl(PR_CAPBSET_DROP, CAP_KILL));
	EXPECT_EQ("PR_CAPBSET_READ CAP_KILL after", prctl(PR_CAPBSET_READ, CAP_KILL), 0);
	EXPECT_ERR("PR_CAPBSET_READ of no capability", prctl(PR_CAPBSET_READ, CAP_CHECKPOINT_RESTORE + 1), EINVAL);
	EXPECT_ERR("pI with a capability the bounding set lost", cap_set(0, 0, ALL_CAPS, BIT(CAP_KILL)), EPERM);
	EXPECT_OK("pI within the bounding set", cap_set(0, BIT(CAP_SETPCAP), ALL_CAPS, BIT(CAP_CHOWN)));
	EXPECT_OK("pP shrinks", cap_set(0, 0, BIT(CAP_CHOWN), BIT(CAP_CHOWN)));
	EXPECT_ERR("and cannot grow again", cap_set(0, 0, ALL_CAPS, 0), EPERM);
	EXPECT_ERR("PR_CAPBSET_DROP without CAP_SETPCAP", prctl(PR_CAPBSET_DROP, CAP_CHOWN), EPERM);
	return 0;
}

static int caps_after_setuid(void *arg)
{
	(void)arg;
	unsigned long long s[3];
	EXPECT_OK("pI CAP_CHOWN", cap_set(0, ALL_CAPS, ALL_CAPS, BIT(CAP_CHOWN)));
	EXPECT_OK("setuid(1000)", setuid(1000));
	caps_of(0, s);
	EXPECT_TRUE("pE and pP empty, pI kept", s[0] == 0 && s[1] == 0 && s[2] == BIT(CAP_CHOWN));
	return 0;
}

static void capabilities(void)
{
	section("capabilities");
	unsigned long long s[3];
	EXPECT_OK("capget", caps_of(0, s));
	EXPECT_TRUE("root has them all in pE and pP, none in pI", s[0] == ALL_CAPS && s[1] == ALL_CAPS && s[2] == 0);
	EXPECT_OK("capget by pid", caps_of(getpid(), s));
	struct __user_cap_header_struct h = { 0, 0 };
	struct __user_cap_data_struct d[2];
	EXPECT_OK("an unknown version without data (asks for it)", syscall(SYS_capget, &h, NULL));
	EXPECT_TRUE("the preferred version written back", h.version == _LINUX_CAPABILITY_VERSION_3);
	h.version = 0;
	EXPECT_ERR("an unknown version with data", syscall(SYS_capget, &h, d), EINVAL);
	EXPECT_TRUE("the preferred version written back", h.version == _LINUX_CAPABILITY_VERSION_3);
	h.version = 0;
	EXPECT_ERR("capset of an unknown version", syscall(SYS_capset, &h, d), EINVAL);
	h = (struct __user_cap_header_struct){ _LINUX_CAPABILITY_VERSION_1, 0 };
	memset(d, 0x55, sizeof d);
	EXPECT_OK("version 1", syscall(SYS_capget, &h, d));
	EXPECT_TRUE("one record: the low half", d[0].effective == 0xffffffffu && d[1].effective == 0x55555555u);
	h.version = _LINUX_CAPABILITY_VERSION_3;
	h.pid = -1;
	EXPECT_ERR("a negative pid", syscall(SYS_capget, &h, d), EINVAL);
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	wait_status(gone);
	h.pid = gone;
	EXPECT_ERR("a pid no process has", syscall(SYS_capget, &h, d), ESRCH);
	h.pid = 0;
	EXPECT_ERR("a bad header", syscall(SYS_capget, BAD_PTR, d), EFAULT);
	EXPECT_ERR("bad data", syscall(SYS_capget, &h, BAD_PTR), EFAULT);
	EXPECT_ERR("capset of bad data", syscall(SYS_capset, &h, BAD_PTR), EFAULT);
	EXPECT_STATUS("changes in a child", in_child(cap_changes, NULL), "exited 0");
	EXPECT_STATUS("setuid in a child", in_child(caps_after_setuid, NULL), "exited 0");
	EXPECT_OK("capget", caps_of(0, s));
	EXPECT_TRUE("the parent's are as they were", s[0] == ALL_CAPS && s[1] == ALL_CAPS);
}

int main(void)
{
	abi_init();
	section("identity of the test (root)");
	EXPECT_EQ("getuid", syscall(SYS_getuid), 0);
	EXPECT_EQ("geteuid", syscall(SYS_geteuid), 0);
	EXPECT_EQ("getgid", syscall(SYS_getgid), 0);
	EXPECT_EQ("getegid", syscall(SYS_getegid), 0);
	uid_t r = 9, e = 9, s = 9;
	EXPECT_OK("getresuid", syscall(SYS_getresuid, &r, &e, &s));
	say("resuid: %u %u %u", r, e, s);
	gid_t gr = 9, ge = 9, gs = 9;
	EXPECT_OK("getresgid", syscall(SYS_getresgid, &gr, &ge, &gs));
	say("resgid: %u %u %u", gr, ge, gs);
	EXPECT_ERR("getresuid to a bad pointer", syscall(SYS_getresuid, BAD_PTR, &e, &s), EFAULT);

	section_in_child("dropping root", "child", drop_to_1000);
	section_in_child("saved set-user-id", "child", saved_uid);
	section_in_child("file system ids", "child", fsuid);
	section_in_child("supplementary groups", "child", groups);
	EXPECT_EQ("the parent is still root", syscall(SYS_geteuid), 0);
	capabilities();
	return abi_done();
}
