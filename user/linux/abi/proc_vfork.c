/*
 * vfork and clone(CLONE_VM|CLONE_VFORK) under hostile use: the child runs
 * in its parent's memory (writes, mappings made and removed, the break),
 * the parent waits until the child execs or ends, and nothing the child
 * can do leaves the parent without its memory: a child killed by another
 * process before it execs, a child that faults, an exec that fails, a
 * parent killed while it waits (the child goes on, maps, execs), another
 * thread of the parent running meanwhile, a vfork child's own vfork, and
 * a hundred vforks in a row.
 *
 * A child touches only globals (volatile) and calls what cannot change
 * its parent's stack frame; it reports through them or a pipe.
 */
#include "abi.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>

static volatile int word;
static volatile long longword;
static char *volatile mapped;
static volatile int child_errno;
static volatile unsigned counter;
static volatile int stop;
/* What the parent wrote before each vfork, which must be intact after. */
static unsigned char pattern[8192];

static void fill_pattern(unsigned char seed)
{
	for (size_t i = 0; i < sizeof pattern; i++)
		pattern[i] = (unsigned char)(i * 7 + seed);
}

static int pattern_intact(unsigned char seed)
{
	for (size_t i = 0; i < sizeof pattern; i++)
		if (pattern[i] != (unsigned char)(i * 7 + seed))
			return 0;
	return 1;
}

static long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The program run again as "exec-child FD [GO]": it reads one byte from
 * GO if given, writes 'e' to FD and exits 12. */
static int exec_child(int argc, char **argv)
{
	int fd = atoi(argv[2]);
	if (argc > 3) {
		char c;
		if (read(atoi(argv[3]), &c, 1) != 1)
			return 1;
	}
	return write(fd, "e", 1) == 1 ? 12 : 1;
}

static void exec_self(int fd, int go)
{
	char a[16], b[16];
	snprintf(a, sizeof a, "%d", fd);
	snprintf(b, sizeof b, "%d", go);
	char *argv[] = { "proc_vfork", "exec-child", a, go >= 0 ? b : NULL, NULL };
	char *envp[] = { NULL };
	execve(self_exe(), argv, envp);
}

static int clone_fn(void *arg)
{
	word = (int)(long)arg;
	return 5;
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!stop) {
		counter++;
		sched_yield();
	}
	return NULL;
}

/* One vfork whose child writes `i` and exits with it: 0 if the parent
 * saw both. */
static __attribute__((noinline)) int vfork_once(int i)
{
	pid_t pid = vfork();
	if (pid == 0) {
		word = i;
		_exit(i & 0x7f);
	}
	int st = wait_status(pid);
	return word != i || !WIFEXITED(st) || WEXITSTATUS(st) != (i & 0x7f);
}

static int *volatile nowhere = BAD_PTR;

static void touch(void *p)
{
	*(volatile char *)p = 1;
}

static void memory(void)
{
	section("the parent's memory");
	word = 0;
	mapped = MAP_FAILED;
	long brk0 = sys1(SYS_brk, 0);
	pid_t pid = vfork();
	if (pid == 0) {
		word = 42;
		char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED) {
			m[0] = 'v';
			m[4096] = 'w';
		}
		mapped = m;
		longword = sys1(SYS_brk, sys1(SYS_brk, 0) + 8192);
		_exit(3);
	}
	EXPECT_TRUE("vfork returns the child's pid", pid > 0);
	EXPECT_EQ("the parent sees the child's write", word, 42);
	EXPECT_TRUE("the child's mapping is in the parent",
		    mapped != MAP_FAILED && mapped[0] == 'v' && mapped[4096] == 'w');
	EXPECT_TRUE("the break the child moved is the parent's",
		    sys1(SYS_brk, 0) == longword && longword >= brk0 + 8192);
	EXPECT_EQ("the memory below it is usable", catch_fault(touch, (void *)(longword - 1), NULL), 0);
	EXPECT_OK("the parent unmaps the child's mapping", munmap(mapped, 8192));
	EXPECT_STATUS("the child", wait_status(pid), "exited 3");

	char *mine = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(mine == MAP_FAILED ? -1 : 0);
	mine[0] = 1;
	mapped = mine;
	pid = vfork();
	if (pid == 0) {
		munmap(mapped, 4096);
		_exit(0);
	}
	EXPECT_STR("the parent's mapping the child unmapped", signame(catch_fault(touch, mine, NULL)),
		   "SIGSEGV");
	EXPECT_STATUS("the child", wait_status(pid), "exited 0");

	word = 0;
	pid = vfork();
	if (pid == 0) {
		struct timespec t = { 0, 100 * 1000 * 1000 };
		nanosleep(&t, NULL);
		word = 7;
		_exit(0);
	}
	EXPECT_EQ("the parent resumes only once the child has ended", word, 7);
	EXPECT_STATUS("the child", wait_status(pid), "exited 0");

	static char stack[65536];
	word = 0;
	long tid = raw_clone(CLONE_VM | CLONE_VFORK | SIGCHLD, stack + sizeof stack, NULL, NULL, 0, clone_fn,
			     (void *)99L);
	EXPECT_TRUE("clone(CLONE_VM|CLONE_VFORK) returns the child's pid", tid > 0);
	EXPECT_EQ("the parent sees what that child wrote", word, 99);
	EXPECT_STATUS("the child", wait_status((pid_t)tid), "exited 5");

	int bad = 0;
	for (int i = 1; i <= 100; i++)
		bad += vfork_once(i);
	EXPECT_EQ("100 vforks in a row: children not seen or not reaped", bad, 0);

	word = 0;
	longword = 0;
	pid = vfork();
	if (pid == 0) {
		pid_t g = vfork();
		if (g == 0) {
			word = 77;
			_exit(1);
		}
		longword = word;
		int st;
		waitpid(g, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) + 1 : 0);
	}
	EXPECT_EQ("a vfork child's own vfork child writes where both see it", longword, 77);
	EXPECT_STATUS("the child, which reaped its own", wait_status(pid), "exited 2");
}

static void exec(void)
{
	section("exec");
	int out[2], go[2];
	SETUP(pipe(out));
	SETUP(pipe(go));
	word = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		word = 11;
		close(out[0]);
		close(go[1]);
		exec_self(out[1], go[0]);
		_exit(127);
	}
	/* The new program waits for this byte: had the parent waited for its
	 * end, neither would go on. */
	close(go[0]);
	EXPECT_EQ("the parent resumes once the child has exec'd", write(go[1], "g", 1), 1);
	close(go[1]);
	close(out[1]);
	char c = 0;
	EXPECT_EQ("the new program runs", read(out[0], &c, 1), 1);
	EXPECT_TRUE("and writes", c == 'e');
	EXPECT_EQ("what the child wrote before its exec", word, 11);
	EXPECT_STATUS("the new program", wait_status(pid), "exited 12");
	close(out[0]);

	word = 0;
	child_errno = 0;
	mapped = MAP_FAILED;
	pid = vfork();
	if (pid == 0) {
		char *argv[] = { "x", NULL };
		execve("/nonexistent/program", argv, argv + 1);
		child_errno = errno;
		/* The child goes on in the same memory. */
		char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED)
			m[10] = 'q';
		mapped = m;
		word = 44;
		_exit(45);
	}
	EXPECT_STR("the child's failed execve", errname(child_errno), "ENOENT");
	EXPECT_EQ("what it wrote after", word, 44);
	EXPECT_TRUE("what it mapped after", mapped != MAP_FAILED && mapped[10] == 'q');
	EXPECT_STATUS("the child", wait_status(pid), "exited 45");
	if (mapped != MAP_FAILED)
		munmap(mapped, 4096);
}

static void hostile(void)
{
	section("a child killed before it execs");
	int pp[2];
	SETUP(pipe(pp));
	pid_t killer = fork();
	if (killer == 0) {
		pid_t victim;
		if (read(pp[0], &victim, sizeof victim) != sizeof victim)
			_exit(1);
		_exit(kill(victim, SIGKILL) == 0 ? 0 : 2);
	}
	fill_pattern(3);
	word = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		word = 1;
		/* Told at once: the kill may come before the child has made
		 * any call its supervisor serves. */
		pid_t me = getpid();
		write(pp[1], &me, sizeof me);
		for (;;)
			pause();
	}
	EXPECT_STATUS("the child", wait_status(pid), "killed by SIGKILL");
	EXPECT_EQ("what it wrote first", word, 1);
	EXPECT_TRUE("the parent's memory is intact", pattern_intact(3));
	EXPECT_STATUS("the killer", wait_status(killer), "exited 0");
	close(pp[0]);
	close(pp[1]);

	section("a child that faults");
	fill_pattern(5);
	char *mine = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(mine == MAP_FAILED ? -1 : 0);
	mine[100] = 'm';
	word = 0;
	pid = vfork();
	if (pid == 0) {
		word = 2;
		*nowhere = 1;
		_exit(0);
	}
	EXPECT_STATUS("the child", wait_status(pid), "killed by SIGSEGV");
	EXPECT_EQ("what it wrote first", word, 2);
	EXPECT_TRUE("the parent's memory is intact", pattern_intact(5) && mine[100] == 'm');
	pid = fork();
	if (pid == 0)
		_exit(pattern_intact(5) && mine[100] == 'm' ? 0 : 1);
	EXPECT_STATUS("a fork after it copies that memory", wait_status(pid), "exited 0");
	munmap(mine, 4096);

	section("the parent killed while it waits");
	int rep[2], go[2];
	SETUP(pipe(rep));
	SETUP(pipe(go));
	pid_t parent = fork();
	if (parent == 0) {
		fill_pattern(9);
		pid_t c = vfork();
		if (c == 0) {
			pid_t me = getpid();
			write(rep[1], &me, sizeof me);
			char g;
			if (read(go[0], &g, 1) != 1)
				_exit(1);
			/* Its parent is gone: the memory must still be there. */
			char ok = pattern_intact(9) ? 'k' : 'p';
			char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				ok = 'm';
			else
				m[8000] = 'x';
			if (ok == 'k' && m[8000] != 'x')
				ok = 'w';
			fill_pattern(10);
			if (ok == 'k' && !pattern_intact(10))
				ok = 'r';
			write(rep[1], &ok, 1);
			close(go[0]);
			close(go[1]);
			close(rep[0]);
			exec_self(rep[1], -1);
			_exit(127);
		}
		/* Only if the parent went on before its child ended or exec'd. */
		write(rep[1], "P", 1);
		_exit(0);
	}
	close(rep[1]);
	close(go[0]);
	pid_t child = 0;
	EXPECT_EQ("the vfork child reports", read(rep[0], &child, sizeof child), (long)sizeof child);
	EXPECT_OK("the waiting parent killed", kill(parent, SIGKILL));
	EXPECT_STATUS("it", wait_status(parent), "killed by SIGKILL");
	EXPECT_EQ("the child told to go on", write(go[1], "g", 1), 1);
	close(go[1]);
	char got[4] = { 0 };
	long n = 0, r;
	while (n < 3 && (r = read(rep[0], got + n, 3 - n)) > 0)
		n += r;
	EXPECT_EQ("bytes from the child and the program it exec'd", n, 2);
	EXPECT_TRUE("its memory was whole and usable", got[0] == 'k');
	EXPECT_TRUE("then its exec ran", got[1] == 'e');
	close(rep[0]);

	section("another thread of the parent");
	pthread_t t;
	stop = 0;
	counter = 0;
	SETUP(pthread_create(&t, NULL, spinner, NULL) ? -1 : 0);
	long until = now_ms() + 5000;
	while (counter == 0 && now_ms() < until)
		sched_yield();
	word = 0;
	pid = vfork();
	if (pid == 0) {
		unsigned c0 = counter;
		while (counter == c0 && now_ms() < until)
			sched_yield();
		word = counter != c0;
		_exit(0);
	}
	EXPECT_EQ("runs while the vfork child does", word, 1);
	stop = 1;
	pthread_join(t, NULL);
	EXPECT_STATUS("the child", wait_status(pid), "exited 0");
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "exec-child") == 0)
		return exec_child(argc, argv);
	abi_init();
	struct rlimit none = { 0, 0 };
	setrlimit(RLIMIT_CORE, &none);
	memory();
	exec();
	hostile();
	return abi_done();
}
