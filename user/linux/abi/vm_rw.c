/*
 * process_vm_readv and process_vm_writev: copies between this process and
 * itself, a child, and other users' processes, with hostile input: bad
 * flags, counts, arrays, lengths and addresses, dead and zombie pids,
 * foreign uids and gids, a set-uid-like target, partial transfers at an
 * unmapped or read-only page, and targets that unmap their memory or exit
 * while the copies go on.
 */
#include "abi.h"
#include <sched.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#define PAGE 4096

static char src[3 * PAGE], dst[3 * PAGE];

static long vm_read(pid_t pid, const struct iovec *l, unsigned long ln, const struct iovec *r, unsigned long rn,
		    unsigned long flags)
{
	return syscall(SYS_process_vm_readv, pid, l, ln, r, rn, flags);
}

static long vm_write(pid_t pid, const struct iovec *l, unsigned long ln, const struct iovec *r, unsigned long rn,
		     unsigned long flags)
{
	return syscall(SYS_process_vm_writev, pid, l, ln, r, rn, flags);
}

static void fill(char *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(i * 7 + seed);
}

static int filled(const char *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (char)(i * 7 + seed))
			return 0;
	return 1;
}

/* A child that waits until its parent closes the pipe, then exits. */
static pid_t holder(int *fd_out, void (*prepare)(void))
{
	int p[2], ready[2];
	SETUP(pipe(p));
	SETUP(pipe(ready));
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		close(ready[0]);
		if (prepare)
			prepare();
		char c = 1;
		if (write(ready[1], &c, 1) != 1)
			_exit(3);
		while (read(p[0], &c, 1) > 0)
			;
		_exit(filled(dst, 100, 9) ? 0 : 5);
	}
	close(p[0]);
	close(ready[1]);
	char c;
	SETUP(read(ready[0], &c, 1));
	close(ready[0]);
	*fd_out = p[1];
	return pid;
}

static int release(pid_t pid, int fd)
{
	close(fd);
	return wait_status(pid);
}

static void args(void)
{
	section("arguments");
	struct iovec l = {dst, 16}, r = {src, 16};
	pid_t me = getpid();
	EXPECT_ERR("readv flags 1", vm_read(me, &l, 1, &r, 1, 1), EINVAL);
	EXPECT_ERR("writev flags 1<<32", vm_write(me, &l, 1, &r, 1, 1UL << 32), EINVAL);
	static struct iovec many[1025];
	for (int i = 0; i < 1025; i++)
		many[i] = (struct iovec){dst, 1};
	EXPECT_ERR("1025 local iovecs", vm_read(me, many, 1025, &r, 1, 0), EINVAL);
	EXPECT_ERR("1025 remote iovecs", vm_read(me, &l, 1, many, 1025, 0), EINVAL);
	EXPECT_EQ("1024 local iovecs of one byte", vm_read(me, many, 1024, &r, 1, 0), 16);
	EXPECT_ERR("local array at a bad address", vm_read(me, BAD_PTR, 1, &r, 1, 0), EFAULT);
	EXPECT_ERR("remote array at a bad address", vm_read(me, &l, 1, BAD_PTR, 1, 0), EFAULT);
	struct iovec neg = {dst, (size_t)-1};
	EXPECT_ERR("local length -1", vm_read(me, &neg, 1, &r, 1, 0), EINVAL);
	EXPECT_ERR("remote length -1", vm_read(me, &l, 1, &neg, 1, 0), EINVAL);
	struct iovec kernel = {(void *)0xffff800000000000UL, 16};
	EXPECT_ERR("local base in the kernel", vm_read(me, &kernel, 1, &r, 1, 0), EFAULT);
	EXPECT_ERR("remote base in the kernel", vm_read(me, &l, 1, &kernel, 1, 0), EFAULT);
	struct iovec wrap = {(void *)-16L, 32};
	EXPECT_ERR("local range wrapping", vm_write(me, &wrap, 1, &r, 1, 0), EFAULT);
	/* Nothing to move: 0 before the pid or the remote array is looked at. */
	EXPECT_EQ("no local iovecs, bad pid", vm_read(-1, &l, 0, BAD_PTR, 1, 0), 0);
	struct iovec empty[2] = {{dst, 0}, {BAD_PTR, 0}};
	EXPECT_EQ("empty local iovecs", vm_read(-1, empty, 2, BAD_PTR, 1, 0), 0);
	EXPECT_EQ("empty remote iovecs, bad pid", vm_read(-1, &l, 1, empty, 2, 0), 0);
	EXPECT_ERR("pid -1", vm_read(-1, &l, 1, &r, 1, 0), ESRCH);
	EXPECT_ERR("pid 0", vm_read(0, &l, 1, &r, 1, 0), ESRCH);
	EXPECT_ERR("pid INT_MIN", vm_write(-2147483647 - 1, &l, 1, &r, 1, 0), ESRCH);
	EXPECT_ERR("an unused pid", vm_read(4194000, &l, 1, &r, 1, 0), ESRCH);
}

static void self(void)
{
	section("its own memory");
	pid_t me = getpid();
	fill(src, sizeof src, 1);
	memset(dst, 0, sizeof dst);
	/* Three local pieces against two remote ones: scattered both ways. */
	struct iovec l[3] = {{dst, 100}, {dst + 1000, 0}, {dst + 200, 5000}};
	struct iovec r[2] = {{src, 3000}, {src + 3000, 3000}};
	EXPECT_EQ("readv 3 local x 2 remote", vm_read(me, l, 3, r, 2, 0), 5100);
	EXPECT_TRUE("first piece", memcmp(dst, src, 100) == 0);
	EXPECT_TRUE("second piece", memcmp(dst + 200, src + 100, 5000) == 0);
	EXPECT_TRUE("nothing between", dst[150] == 0 && dst[5200] == 0);
	/* The remote side shorter: what it has. */
	struct iovec r1 = {src, 10};
	EXPECT_EQ("remote shorter than local", vm_read(me, l, 3, &r1, 1, 0), 10);
	fill(src, 64, 2);
	struct iovec wl = {src, 64}, wr = {dst + 8000, 64};
	EXPECT_EQ("writev into itself", vm_write(me, &wl, 1, &wr, 1, 0), 64);
	EXPECT_TRUE("bytes written", filled(dst + 8000, 64, 2));
}

static char *area;

static void map_area(void)
{
	/*
	 * At the address the parent chose: pages 0 and 2 readable and
	 * writable, 1 unmapped, 3 read-only.
	 */
	area = mmap(area, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (area == MAP_FAILED)
		_exit(4);
	fill(area, 4 * PAGE, 3);
	munmap(area + PAGE, PAGE);
	mprotect(area + 3 * PAGE, PAGE, PROT_READ);
}

static void prepare_child(void)
{
	fill(src, sizeof src, 6);
	map_area();
}

static void child(void)
{
	section("a child's memory");
	area = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(area == MAP_FAILED ? -1 : 0);
	munmap(area, 4 * PAGE);
	fill(src, sizeof src, 1);
	int fd;
	pid_t pid = holder(&fd, prepare_child);
	char buf[PAGE];
	struct iovec l = {buf, 1000}, r = {src, 1000};
	EXPECT_EQ("readv", vm_read(pid, &l, 1, &r, 1, 0), 1000);
	EXPECT_TRUE("the child's bytes, not ours", filled(buf, 1000, 6));
	fill(buf, 100, 9);
	struct iovec wl = {buf, 100}, wr = {dst, 100};
	EXPECT_EQ("writev", vm_write(pid, &wl, 1, &wr, 1, 0), 100);
	EXPECT_TRUE("ours unchanged", !filled(dst, 100, 9));

	section("partial transfers");
	struct iovec good = {area, 100}, hole = {area + PAGE, 100}, after = {area + 2 * PAGE, 100};
	struct iovec three[3] = {good, hole, after};
	struct iovec big = {buf, sizeof buf};
	EXPECT_EQ("good, unmapped, good: the first", vm_read(pid, &big, 1, three, 3, 0), 100);
	EXPECT_ERR("unmapped first", vm_read(pid, &big, 1, &hole, 1, 0), EFAULT);
	struct iovec edge = {area + PAGE - 10, 20};
	EXPECT_EQ("across into the unmapped page", vm_read(pid, &big, 1, &edge, 1, 0), 10);
	struct iovec ro = {area + 3 * PAGE, 100};
	EXPECT_EQ("read of a read-only page", vm_read(pid, &big, 1, &ro, 1, 0), 100);
	EXPECT_ERR("write to a read-only page", vm_write(pid, &big, 1, &ro, 1, 0), EFAULT);
	struct iovec pieces[2] = {{area + 2 * PAGE, 50}, ro};
	EXPECT_EQ("write, then a read-only page", vm_write(pid, &big, 1, pieces, 2, 0), 50);
	char *none = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec ln = {none, 100};
	EXPECT_ERR("into our PROT_NONE page", vm_read(pid, &ln, 1, &good, 1, 0), EFAULT);
	EXPECT_ERR("from our PROT_NONE page", vm_write(pid, &ln, 1, &after, 1, 0), EFAULT);
	struct iovec lsplit[2] = {{buf, 30}, ln};
	EXPECT_EQ("local good, then PROT_NONE", vm_read(pid, lsplit, 2, &good, 1, 0), 30);
	munmap(none, PAGE);
	EXPECT_STATUS("the child saw our write", release(pid, fd), "exited 0");
	EXPECT_ERR("a reaped child", vm_read(pid, &l, 1, &r, 1, 0), ESRCH);
	pid = fork();
	if (pid == 0)
		_exit(0);
	siginfo_t si;
	SETUP(waitid(P_PID, pid, &si, WEXITED | WNOWAIT));
	EXPECT_ERR("a zombie", vm_read(pid, &l, 1, &r, 1, 0), ESRCH);
	EXPECT_ERR("a zombie, writev", vm_write(pid, &l, 1, &r, 1, 0), ESRCH);
	wait_status(pid);
}

/* Ids set in a child before it tells its parent it is ready. */
static uid_t want_uid[3];
static gid_t want_gid[3];

static int want_dumpable;

static void become(void)
{
	if (setresgid(want_gid[0], want_gid[1], want_gid[2]) || setresuid(want_uid[0], want_uid[1], want_uid[2]))
		_exit(6);
	if (want_dumpable && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		_exit(7);
}

static pid_t holder_as(int *fd, uid_t u0, uid_t u1, uid_t u2, gid_t g0, gid_t g1, gid_t g2)
{
	want_uid[0] = u0, want_uid[1] = u1, want_uid[2] = u2;
	want_gid[0] = g0, want_gid[1] = g1, want_gid[2] = g2;
	return holder(fd, become);
}

/* PR_GET_DUMPABLE after new ids, then after PR_SET_DUMPABLE 1: two bits. */
static int dumpable_child(void *arg)
{
	(void)arg;
	int before = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	if (setresuid(1000, 1000, 1000))
		return 9;
	int after = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	int set = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	return before * 4 + after * 2 + set;
}

/* Whether a process with the given ids may read `target`'s src. */
static void try_as(const char *name, pid_t target, uid_t u, uid_t eu, gid_t g, const char *want)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (setresgid(g, g, g) || setresuid(u, eu, eu))
			_exit(6);
		char buf[16];
		struct iovec l = {buf, 16}, r = {src, 16};
		long n = vm_read(target, &l, 1, &r, 1, 0);
		if (n == 16)
			_exit(0);
		_exit(n == -1 && errno == EPERM ? 1 : 2);
	}
	int st = wait_status(pid);
	const char *got = st == 0 ? "ok" : st == 256 ? "EPERM" : status_text(st);
	EXPECT_STR(name, got, want);
}

static void perm(void)
{
	section("who may");
	int fd;
	pid_t root = getpid();
	try_as("uid 1000 reads root", root, 1000, 1000, 100, "EPERM");
	EXPECT_STATUS("dumpable, after new ids, after PR_SET_DUMPABLE", in_child(dumpable_child, NULL), "exited 5");
	EXPECT_ERR("PR_SET_DUMPABLE 2", prctl(PR_SET_DUMPABLE, 2, 0, 0, 0), EINVAL);
	/* A process whose ids changed is no longer dumpable: root's only. */
	pid_t user = holder_as(&fd, 1000, 1000, 1000, 100, 100, 100);
	char buf[16];
	struct iovec l = {buf, 16}, r = {src, 16};
	EXPECT_EQ("root reads uid 1000", vm_read(user, &l, 1, &r, 1, 0), 16);
	try_as("uid 1000 reads uid 1000, not dumpable", user, 1000, 1000, 100, "EPERM");
	release(user, fd);
	want_dumpable = 1;
	user = holder_as(&fd, 1000, 1000, 1000, 100, 100, 100);
	try_as("uid 1000 reads uid 1000", user, 1000, 1000, 100, "ok");
	try_as("uid 1001 reads uid 1000", user, 1001, 1001, 100, "EPERM");
	try_as("uid 1000 of group 200 reads group 100", user, 1000, 1000, 200, "EPERM");
	try_as("real uid 1000, effective 1001", user, 1000, 1001, 100, "ok");
	try_as("real uid 1001, effective 1000", user, 1001, 1000, 100, "EPERM");
	release(user, fd);
	/* Like a set-uid program: its saved uid is root's. */
	pid_t suid = holder_as(&fd, 1000, 1000, 0, 100, 100, 100);
	try_as("uid 1000 reads one whose saved uid is 0", suid, 1000, 1000, 100, "EPERM");
	EXPECT_EQ("root reads it", vm_read(suid, &l, 1, &r, 1, 0), 16);
	release(suid, fd);
	pid_t sgid = holder_as(&fd, 1000, 1000, 1000, 100, 0, 100);
	try_as("uid 1000 reads one whose effective gid is 0", sgid, 1000, 1000, 100, "EPERM");
	release(sgid, fd);
}

/* A target remapping its memory, or ending, while copies go on. */
static void churn(void)
{
	section("targets that change meanwhile");
	char *spot = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(spot == MAP_FAILED ? -1 : 0);
	munmap(spot, 4 * PAGE);
	int p[2];
	SETUP(pipe(p));
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		char c = 1;
		for (long i = 0;; i++) {
			void *m = mmap(spot, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				       -1, 0);
			if (m == MAP_FAILED)
				_exit(7);
			memset(m, 1, 4 * PAGE);
			if (i == 0 && write(p[1], &c, 1) != 1)
				_exit(3);
			munmap(m, 4 * PAGE);
			/* With one CPU, the copies get their turn now and then. */
			if (i % 16 == 0)
				sched_yield();
		}
	}
	close(p[1]);
	char c;
	SETUP(read(p[0], &c, 1));
	static char buf[4 * PAGE];
	struct iovec l = {buf, sizeof buf}, r = {spot, 4 * PAGE};
	int odd = 0, some = 0;
	for (int i = 0; i < 1000; i++) {
		long n = (i & 1) ? vm_write(pid, &l, 1, &r, 1, 0) : vm_read(pid, &l, 1, &r, 1, 0);
		if (n == -1 && errno != EFAULT)
			odd++;
		if (n > (long)sizeof buf)
			odd++;
		if (n > 0)
			some = 1;
	}
	EXPECT_EQ("copies that were neither bytes nor EFAULT", odd, 0);
	(void)some;
	kill(pid, SIGKILL);
	EXPECT_STATUS("the target", wait_status(pid), "killed by SIGKILL");
	close(p[0]);

	/* Targets that end while the copies go on. */
	odd = 0;
	for (int round = 0; round < 20; round++) {
		pid = fork();
		if (pid == 0) {
			for (volatile int i = 0; i < round * 500; i++)
				;
			_exit(0);
		}
		struct iovec rs = {src, 1000};
		int ended = 0;
		for (int i = 0; i < 20000 && !ended; i++) {
			long n = (i & 1) ? vm_write(pid, &l, 1, &rs, 1, 0) : vm_read(pid, &l, 1, &rs, 1, 0);
			if (n == -1 && errno == ESRCH)
				ended = 1;
			else if (n != 1000 && !(n == -1 && errno == EFAULT))
				odd++;
		}
		if (!ended)
			odd++;
		wait_status(pid);
	}
	EXPECT_EQ("copies with a target ending: bytes, EFAULT, then ESRCH", odd, 0);
}

int main(void)
{
	abi_init();
	args();
	self();
	child();
	perm();
	churn();
	return abi_done();
}
