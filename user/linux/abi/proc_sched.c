/*
 * Scheduling attributes: sched_get_priority_max/min, sched_getscheduler,
 * sched_setscheduler, sched_getparam, sched_setparam, getpriority,
 * setpriority, sched_setaffinity, sched_getaffinity, sched_rr_get_interval
 * (what a process may set on itself and on others, and what a forked child
 * inherits). Run as root; the unprivileged checks run in a child that
 * becomes uid 1000.
 */
#include "abi.h"

#include <sched.h>
#include <sys/resource.h>

static int policy_of(pid_t pid)
{
	return (int)syscall(SYS_sched_getscheduler, pid);
}

static int priority_of(pid_t pid)
{
	struct sched_param p = { .sched_priority = -1 };
	if (syscall(SYS_sched_getparam, pid, &p) != 0)
		return -1;
	return p.sched_priority;
}

/* getpriority as the kernel returns it: 20 - nice. */
static long nice_word(int which, int who)
{
	return syscall(SYS_getpriority, which, who);
}

static int inherited(void *arg)
{
	(void)arg;
	EXPECT_EQ("the child's policy", policy_of(0), SCHED_RR);
	EXPECT_EQ("the child's priority", priority_of(0), 7);
	EXPECT_EQ("the child's nice (as 20 - nice)", nice_word(PRIO_PROCESS, 0), 15);
	return 0;
}

static int reset_on_fork(void *arg)
{
	(void)arg;
	EXPECT_EQ("after SCHED_RESET_ON_FORK: the child's policy", policy_of(0), SCHED_OTHER);
	EXPECT_EQ("the child's priority", priority_of(0), 0);
	return 0;
}

static int affinity_inherited(void *arg)
{
	(void)arg;
	unsigned long got = 0;
	syscall(SYS_sched_getaffinity, 0, sizeof got, &got);
	EXPECT_EQ("the child's mask", got, 1);
	return 0;
}

static int unprivileged(void *arg)
{
	pid_t parent = *(pid_t *)arg;
	struct sched_param p = { .sched_priority = 10 };
	SETUP(syscall(SYS_setuid, 1000));
	EXPECT_ERR("SCHED_FIFO without privilege", syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p), EPERM);
	p.sched_priority = 0;
	EXPECT_OK("SCHED_BATCH on itself", syscall(SYS_sched_setscheduler, 0, SCHED_BATCH, &p));
	EXPECT_EQ("its policy now", policy_of(0), SCHED_BATCH);
	EXPECT_ERR("SCHED_OTHER on root's process", syscall(SYS_sched_setscheduler, parent, SCHED_OTHER, &p), EPERM);
	EXPECT_OK("nice up to 5", syscall(SYS_setpriority, PRIO_PROCESS, 0, 5));
	EXPECT_ERR("nice back down to 4", syscall(SYS_setpriority, PRIO_PROCESS, 0, 4), EACCES);
	EXPECT_ERR("setpriority of root's process", syscall(SYS_setpriority, PRIO_PROCESS, parent, 5), EPERM);
	EXPECT_ERR("setpriority of pid 1", syscall(SYS_setpriority, PRIO_PROCESS, 1, 5), EPERM);
	EXPECT_ERR("sched_setscheduler of pid 1", syscall(SYS_sched_setscheduler, 1, SCHED_OTHER, &p), EPERM);
	EXPECT_EQ("getpriority of root's process is allowed", nice_word(PRIO_PROCESS, parent), 20);
	unsigned long mask = 1;
	EXPECT_ERR("sched_setaffinity of root's process", syscall(SYS_sched_setaffinity, parent, sizeof mask, &mask), EPERM);
	return 0;
}

int main(void)
{
	abi_init();
	pid_t me = getpid();

	section("priority ranges");
	EXPECT_EQ("max of SCHED_FIFO", syscall(SYS_sched_get_priority_max, SCHED_FIFO), 99);
	EXPECT_EQ("min of SCHED_RR", syscall(SYS_sched_get_priority_min, SCHED_RR), 1);
	EXPECT_EQ("max of SCHED_OTHER", syscall(SYS_sched_get_priority_max, SCHED_OTHER), 0);
	EXPECT_EQ("min of SCHED_IDLE", syscall(SYS_sched_get_priority_min, SCHED_IDLE), 0);
	EXPECT_ERR("max of policy 4", syscall(SYS_sched_get_priority_max, 4), EINVAL);
	EXPECT_ERR("min of policy -1", syscall(SYS_sched_get_priority_min, -1), EINVAL);

	section("sched_getscheduler and sched_getparam");
	EXPECT_EQ("a new process's policy", policy_of(0), SCHED_OTHER);
	EXPECT_EQ("by its own pid", policy_of(me), SCHED_OTHER);
	EXPECT_EQ("its priority", priority_of(0), 0);
	EXPECT_ERR("getscheduler of pid -1", syscall(SYS_sched_getscheduler, -1), EINVAL);
	EXPECT_ERR("getscheduler of no process", syscall(SYS_sched_getscheduler, 0x3fffffff), ESRCH);
	EXPECT_ERR("getparam with NULL", syscall(SYS_sched_getparam, 0, NULL), EINVAL);
	EXPECT_ERR("getparam of no process", syscall(SYS_sched_getparam, 0x3fffffff, &(struct sched_param){ .sched_priority = 0 }), ESRCH);
	EXPECT_ERR("getparam to a bad pointer", syscall(SYS_sched_getparam, 0, BAD_PTR), EFAULT);

	section("sched_setscheduler and sched_setparam");
	struct sched_param p = { .sched_priority = 0 };
	EXPECT_ERR("negative policy", syscall(SYS_sched_setscheduler, 0, -1, &p), EINVAL);
	EXPECT_ERR("policy 4", syscall(SYS_sched_setscheduler, 0, 4, &p), EINVAL);
	EXPECT_ERR("NULL param", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, NULL), EINVAL);
	EXPECT_ERR("param at a bad pointer", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, BAD_PTR), EFAULT);
	EXPECT_ERR("pid -1", syscall(SYS_sched_setscheduler, -1, SCHED_OTHER, &p), EINVAL);
	EXPECT_ERR("no process", syscall(SYS_sched_setscheduler, 0x3fffffff, SCHED_OTHER, &p), ESRCH);
	EXPECT_ERR("SCHED_FIFO with priority 0", syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p), EINVAL);
	p.sched_priority = 1;
	EXPECT_ERR("SCHED_OTHER with priority 1", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &p), EINVAL);
	p.sched_priority = 100;
	EXPECT_ERR("SCHED_RR with priority 100", syscall(SYS_sched_setscheduler, 0, SCHED_RR, &p), EINVAL);
	p.sched_priority = 5;
	EXPECT_OK("SCHED_RR with priority 5 as root", syscall(SYS_sched_setscheduler, 0, SCHED_RR, &p));
	EXPECT_EQ("the policy now", policy_of(0), SCHED_RR);
	EXPECT_EQ("the priority now", priority_of(0), 5);
	p.sched_priority = 7;
	EXPECT_OK("setparam to 7", syscall(SYS_sched_setparam, 0, &p));
	EXPECT_EQ("the priority then", priority_of(0), 7);
	p.sched_priority = 0;
	EXPECT_ERR("setparam to 0 under SCHED_RR", syscall(SYS_sched_setparam, 0, &p), EINVAL);
	EXPECT_ERR("setparam with NULL", syscall(SYS_sched_setparam, 0, NULL), EINVAL);
	EXPECT_ERR("setparam of no process", syscall(SYS_sched_setparam, 0x3fffffff, &p), ESRCH);

	section("getpriority and setpriority");
	EXPECT_EQ("getpriority of a new process (20 - nice)", nice_word(PRIO_PROCESS, 0), 20);
	EXPECT_OK("setpriority to 5", syscall(SYS_setpriority, PRIO_PROCESS, 0, 5));
	EXPECT_EQ("then", nice_word(PRIO_PROCESS, 0), 15);
	EXPECT_EQ("of its process group", nice_word(PRIO_PGRP, 0), 15);
	EXPECT_EQ("of its user", nice_word(PRIO_USER, 0) >= 15, 1);
	EXPECT_ERR("which 3", syscall(SYS_getpriority, 3, 0), EINVAL);
	EXPECT_ERR("setpriority which 3", syscall(SYS_setpriority, 3, 0, 0), EINVAL);
	EXPECT_ERR("no process", syscall(SYS_getpriority, PRIO_PROCESS, 0x3fffffff), ESRCH);
	EXPECT_ERR("no process group", syscall(SYS_setpriority, PRIO_PGRP, 0x3fffffff, 0), ESRCH);
	EXPECT_STATUS("a child inherits policy, priority and nice", in_child(inherited, NULL), "exited 0");
	EXPECT_OK("setpriority to 100 (clamped)", syscall(SYS_setpriority, PRIO_PROCESS, 0, 100));
	EXPECT_EQ("clamped to 19", nice_word(PRIO_PROCESS, 0), 1);
	EXPECT_OK("root may lower it to -20", syscall(SYS_setpriority, PRIO_PROCESS, 0, -30));
	EXPECT_EQ("clamped to -20", nice_word(PRIO_PROCESS, 0), 40);
	EXPECT_OK("and back to 0", syscall(SYS_setpriority, PRIO_PROCESS, 0, 0));

	section("SCHED_RESET_ON_FORK");
	p.sched_priority = 3;
	EXPECT_OK("SCHED_FIFO | SCHED_RESET_ON_FORK", syscall(SYS_sched_setscheduler, 0, SCHED_FIFO | 0x40000000, &p));
	EXPECT_EQ("the flag shows in the policy", policy_of(0), SCHED_FIFO | 0x40000000);
	struct timespec ts = { 1, 1 };
	EXPECT_OK("sched_rr_get_interval under SCHED_FIFO", syscall(SYS_sched_rr_get_interval, 0, &ts));
	EXPECT_TRUE("no time slice", ts.tv_sec == 0 && ts.tv_nsec == 0);
	EXPECT_ERR("sched_rr_get_interval of pid -1", syscall(SYS_sched_rr_get_interval, -1, &ts), EINVAL);
	EXPECT_ERR("of no process", syscall(SYS_sched_rr_get_interval, 0x3fffffff, &ts), ESRCH);
	EXPECT_ERR("to a bad pointer", syscall(SYS_sched_rr_get_interval, 0, BAD_PTR), EFAULT);
	EXPECT_STATUS("a child starts as SCHED_OTHER", in_child(reset_on_fork, NULL), "exited 0");
	p.sched_priority = 0;
	EXPECT_OK("back to SCHED_OTHER", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &p));

	section("sched_setaffinity");
	unsigned long mask = 1, got = 0;
	EXPECT_OK("CPU 0 only", syscall(SYS_sched_setaffinity, 0, sizeof mask, &mask));
	EXPECT_EQ("sched_getaffinity returns", syscall(SYS_sched_getaffinity, 0, sizeof got, &got), 8);
	EXPECT_EQ("the mask then", got, 1);
	EXPECT_STATUS("a child has it too", in_child(affinity_inherited, NULL), "exited 0");
	mask = 0;
	EXPECT_ERR("no CPU", syscall(SYS_sched_setaffinity, 0, sizeof mask, &mask), EINVAL);
	EXPECT_ERR("a mask of length 0", syscall(SYS_sched_setaffinity, 0, 0, &mask), EINVAL);
	EXPECT_ERR("a bad pointer", syscall(SYS_sched_setaffinity, 0, sizeof mask, BAD_PTR), EFAULT);
	mask = 1;
	EXPECT_ERR("of no process", syscall(SYS_sched_setaffinity, 0x3fffffff, sizeof mask, &mask), ESRCH);
	EXPECT_ERR("get of no process", syscall(SYS_sched_getaffinity, 0x3fffffff, sizeof got, &got), ESRCH);

	section("without privilege");
	EXPECT_STATUS("uid 1000", in_child(unprivileged, &me), "exited 0");
	return abi_done();
}
