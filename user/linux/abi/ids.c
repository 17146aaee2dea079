/*
 * The uid/gid family: getuid, geteuid, getgid, getegid, getresuid,
 * getresgid, setuid, setgid, setreuid, setresuid, setresgid, setfsuid,
 * getgroups, setgroups.  Run as root; every change of identity happens in a
 * child, so the parent stays root.
 */
#include "abi.h"

#include <grp.h>
#include <sys/fsuid.h>

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

	section("dropping root");
	EXPECT_STATUS("child", in_child(drop_to_1000, NULL), "exited 0");
	section("saved set-user-id");
	EXPECT_STATUS("child", in_child(saved_uid, NULL), "exited 0");
	section("file system ids");
	EXPECT_STATUS("child", in_child(fsuid, NULL), "exited 0");
	section("supplementary groups");
	EXPECT_STATUS("child", in_child(groups, NULL), "exited 0");
	EXPECT_EQ("the parent is still root", syscall(SYS_geteuid), 0);
	return abi_done();
}
