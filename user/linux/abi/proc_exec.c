/*
 * execve: the argument and environment vectors and the auxiliary vector the
 * new program starts with, #! scripts, what survives an exec (descriptors
 * without close-on-exec, ignored and blocked and pending signals, the pid,
 * even when a thread other than the leader calls it), and the errors.
 *
 * The program re-executes itself: argv[1] (or ABI_MODE in the environment
 * when there is no argv) names the role; each role prints its own checks.
 */
#include "abi.h"

#include <elf.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/stat.h>

extern char **environ;

static char *const ENVP[] = { "A=1", "EMPTY=", "SPACES=x y", NULL };

/* ------------------------------------------------------------ roles */

static void report_vectors(int argc, char **argv)
{
	section("argv and envp as passed");
	EXPECT_EQ("argc", argc, 5);
	EXPECT_STR("argv[0]", argv[0], "first");
	EXPECT_STR("argv[2] (empty)", argv[2], "");
	EXPECT_STR("argv[3]", argv[3], "two words");
	EXPECT_TRUE("argv[argc] is NULL", argv[argc] == NULL);
	int n = 0;
	while (environ[n])
		n++;
	EXPECT_EQ("environment entries", n, 3);
	for (int i = 0; i < 3 && i < n; i++)
		EXPECT_STR("environment entry", environ[i], ENVP[i]);
	EXPECT_TRUE("envp follows argv's NULL", environ == argv + argc + 1);
	EXPECT_TRUE("the pid is the one the parent forked", getpid() == atoi(argv[4]));

	section("auxiliary vector");
	EXPECT_EQ("AT_PAGESZ", getauxval(AT_PAGESZ), 4096);
	EXPECT_EQ("AT_CLKTCK", getauxval(AT_CLKTCK), 100);
	EXPECT_EQ("AT_UID", getauxval(AT_UID), 0);
	EXPECT_EQ("AT_EUID", getauxval(AT_EUID), 0);
	EXPECT_EQ("AT_GID", getauxval(AT_GID), 0);
	EXPECT_EQ("AT_EGID", getauxval(AT_EGID), 0);
	EXPECT_EQ("AT_SECURE", getauxval(AT_SECURE), 0);
	EXPECT_EQ("AT_FLAGS", getauxval(AT_FLAGS), 0);
	EXPECT_EQ("AT_BASE (no interpreter)", getauxval(AT_BASE), 0);
	EXPECT_EQ("AT_PHENT", getauxval(AT_PHENT), sizeof(Elf64_Phdr));
	const char *platform = (const char *)getauxval(AT_PLATFORM);
	EXPECT_STR("AT_PLATFORM", platform, "x86_64");
	const char *execfn = (const char *)getauxval(AT_EXECFN);
	EXPECT_TRUE("AT_EXECFN is the path given to execve", execfn && strcmp(execfn, self_exe()) == 0);
	unsigned char *random = (unsigned char *)getauxval(AT_RANDOM);
	int any = 0;
	for (int i = 0; random && i < 16; i++)
		any |= random[i];
	EXPECT_TRUE("AT_RANDOM points to 16 bytes, not all zero", random && any);

	/* The program headers, in the file and where AT_PHDR says they are. */
	Elf64_Ehdr eh;
	int fd = open("/proc/self/exe", O_RDONLY);
	SETUP(fd);
	SETUP(pread(fd, &eh, sizeof eh, 0));
	EXPECT_TRUE("AT_ENTRY is the ELF entry point", getauxval(AT_ENTRY) == eh.e_entry);
	EXPECT_TRUE("AT_PHNUM is the ELF header's count", getauxval(AT_PHNUM) == eh.e_phnum);
	static Elf64_Phdr ph[64];
	size_t len = eh.e_phnum * sizeof(Elf64_Phdr);
	SETUP(pread(fd, ph, len, eh.e_phoff));
	EXPECT_TRUE("AT_PHDR holds the program headers",
		    memcmp((void *)getauxval(AT_PHDR), ph, len) == 0);
	close(fd);
}

static void report_fds(char **argv)
{
	int keep = atoi(argv[2]), gone = atoi(argv[3]);
	EXPECT_EQ("descriptor without FD_CLOEXEC is open, flag clear", fcntl(keep, F_GETFD), 0);
	EXPECT_ERR("descriptor with FD_CLOEXEC is closed", fcntl(gone, F_GETFD), EBADF);
	char buf[8] = { 0 };
	EXPECT_EQ("its offset is kept", read(keep, buf, 3), 3);
	EXPECT_STR("read after exec", buf, "def");
}

static void report_signals(void)
{
	struct sigaction sa;
	sigaction(SIGUSR1, NULL, &sa);
	EXPECT_TRUE("a handled signal is reset to SIG_DFL", sa.sa_handler == SIG_DFL);
	sigaction(SIGUSR2, NULL, &sa);
	EXPECT_TRUE("an ignored signal stays ignored", sa.sa_handler == SIG_IGN);
	sigset_t set;
	sigprocmask(SIG_BLOCK, NULL, &set);
	EXPECT_TRUE("the blocked mask is kept", sigismember(&set, SIGTERM) && !sigismember(&set, SIGUSR1));
	sigpending(&set);
	EXPECT_TRUE("a pending signal stays pending", sigismember(&set, SIGHUP));
	stack_t ss;
	sigaltstack(NULL, &ss);
	EXPECT_TRUE("the alternate signal stack is gone", ss.ss_flags == SS_DISABLE);
}

static void report_script(int argc, char **argv)
{
	EXPECT_EQ("argc of the interpreter", argc, 4);
	EXPECT_TRUE("argv[0] is the interpreter as #! names it", strcmp(argv[0], self_exe()) == 0);
	EXPECT_STR("argv[1] is the rest of the #! line, one word", argv[1], "script optional words");
	EXPECT_STR("argv[2] is the script's path as given to execve", argv[2], "./script.sh");
	EXPECT_STR("argv[3] is the caller's argv[1]", argv[3], "arg1");
}

static void report_pid(char **argv)
{
	EXPECT_TRUE("getpid after exec from a thread is the process's pid", getpid() == atoi(argv[2]));
	EXPECT_TRUE("and the new program's only thread has tid == pid", syscall(SYS_gettid) == getpid());
}

static int role(int argc, char **argv)
{
	const char *mode = getenv("ABI_MODE");
	if (mode && strcmp(mode, "nullargv") == 0) {
		/* Linux gives a program started with argv == NULL one empty argument. */
		EXPECT_EQ("argc with argv NULL", argc, 1);
		EXPECT_STR("argv[0] with argv NULL", argv[0], "");
		return abi_done();
	}
	if (argc < 2)
		return -1;
	if (strcmp(argv[1], "report") == 0)
		report_vectors(argc, argv);
	else if (strcmp(argv[1], "fds") == 0)
		report_fds(argv);
	else if (strcmp(argv[1], "signals") == 0)
		report_signals();
	else if (strncmp(argv[1], "script", 6) == 0)
		report_script(argc, argv);
	else if (strcmp(argv[1], "pid") == 0)
		report_pid(argv);
	else if (strcmp(argv[1], "noenv") == 0) {
		EXPECT_TRUE("envp NULL gives an empty environment", environ[0] == NULL);
	} else if (strcmp(argv[1], "exit") == 0)
		return atoi(argv[2]);
	else if (strcmp(argv[1], "hold") == 0) {
		/* Running from the copy: say so on the pipe, then wait to be killed. */
		char c = 'x';
		if (write(atoi(argv[2]), &c, 1) != 1)
			return 125;
		for (;;)
			pause();
	}
	else
		return -1;
	return abi_done();
}

/* ------------------------------------------------------------ the parent */

static char pidbuf[32];

static int exec_report(void *arg)
{
	(void)arg;
	snprintf(pidbuf, sizeof pidbuf, "%d", getpid());
	char *argv[] = { "first", "report", "", "two words", pidbuf, NULL };
	execve(self_exe(), argv, ENVP);
	return 127;
}

static int exec_null_argv(void *arg)
{
	(void)arg;
	char *envp[] = { "ABI_MODE=nullargv", NULL };
	syscall(SYS_execve, self_exe(), NULL, envp);
	return 127;
}

static int exec_null_envp(void *arg)
{
	(void)arg;
	char *argv[] = { "x", "noenv", NULL };
	syscall(SYS_execve, self_exe(), argv, NULL);
	return 127;
}

static int exec_fds(void *arg)
{
	(void)arg;
	int keep = open("data", O_RDONLY);
	int gone = open("data", O_RDONLY | O_CLOEXEC);
	char buf[3];
	read(keep, buf, 3);
	char k[16], g[16];
	snprintf(k, sizeof k, "%d", keep);
	snprintf(g, sizeof g, "%d", gone);
	char *argv[] = { "x", "fds", k, g, NULL };
	execve(self_exe(), argv, ENVP);
	return 127;
}

static void on_usr1(int s)
{
	(void)s;
}

static int exec_signals(void *arg)
{
	(void)arg;
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, SIG_IGN);
	static char alt[16384];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt };
	sigaltstack(&ss, NULL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	kill(getpid(), SIGHUP);
	char *argv[] = { "x", "signals", NULL };
	execve(self_exe(), argv, ENVP);
	return 127;
}

static int exec_script(void *arg)
{
	(void)arg;
	char *argv[] = { "ignored-argv0", "arg1", NULL };
	execve("./script.sh", argv, ENVP);
	return 127;
}

static void *thread_exec(void *arg)
{
	(void)arg;
	char *argv[] = { "x", "pid", pidbuf, NULL };
	execve(self_exe(), argv, ENVP);
	return NULL;
}

static int exec_from_thread(void *arg)
{
	(void)arg;
	snprintf(pidbuf, sizeof pidbuf, "%d", getpid());
	pthread_t t;
	pthread_create(&t, NULL, thread_exec, NULL);
	/* The exec in the other thread ends this thread. */
	for (int i = 0; i < 1000; i++)
		pause();
	return 126;
}

static void copy_file(const char *from, const char *to)
{
	static char buf[65536];
	int in = open(from, O_RDONLY);
	SETUP(in);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	SETUP(out);
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		SETUP(write(out, buf, n) == n ? 0 : -1);
	SETUP(n);
	close(in);
	close(out);
}

/* Linux's deny_write_access: a program's file is not written while it runs,
   and a file open for writing does not run. */
static void running_program_not_written(void)
{
	char *argv0[] = { "x", NULL };
	copy_file(self_exe(), "copy");
	int w = open("copy", O_WRONLY);
	SETUP(w);
	EXPECT_ERR("exec of a file open for writing", execve("./copy", argv0, ENVP), ETXTBSY);
	close(w);
	int p[2];
	SETUP(pipe(p));
	char fdtext[16];
	snprintf(fdtext, sizeof fdtext, "%d", p[1]);
	pid_t pid = fork();
	SETUP(pid);
	if (pid == 0) {
		char *holdv[] = { "copy", "hold", fdtext, NULL };
		execve("./copy", holdv, ENVP);
		_exit(124);
	}
	close(p[1]);
	char c;
	EXPECT_EQ("the copy runs", read(p[0], &c, 1), 1);
	close(p[0]);
	EXPECT_ERR("open for writing while it runs", open("copy", O_WRONLY), ETXTBSY);
	EXPECT_ERR("open read-write while it runs", open("copy", O_RDWR), ETXTBSY);
	EXPECT_ERR("creat while it runs", creat("copy", 0755), ETXTBSY);
	EXPECT_ERR("truncate while it runs", truncate("copy", 0), ETXTBSY);
	int r = open("copy", O_RDONLY);
	EXPECT_TRUE("open for reading while it runs", r >= 0);
	if (r >= 0)
		close(r);
	SETUP(kill(pid, SIGKILL));
	int st;
	SETUP(waitpid(pid, &st, 0));
	w = open("copy", O_WRONLY);
	EXPECT_TRUE("open for writing once it ended", w >= 0);
	if (w >= 0)
		close(w);
	EXPECT_OK("unlink while not running", unlink("copy"));
}

static void write_file(const char *name, const char *text, int mode)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, mode);
	SETUP(fd);
	SETUP(write(fd, text, strlen(text)));
	close(fd);
	SETUP(chmod(name, mode));
}

int main(int argc, char **argv)
{
	/* init starts the test with no arguments; every role has some. */
	if (argc >= 2 || getenv("ABI_MODE"))
		return role(argc, argv);
	abi_init();

	section("argv, envp and auxv");
	EXPECT_STATUS("child", relay_child(exec_report, NULL), "exited 0");
	EXPECT_STATUS("argv NULL", relay_child(exec_null_argv, NULL), "exited 0");
	EXPECT_STATUS("envp NULL", relay_child(exec_null_envp, NULL), "exited 0");

	section("what survives execve");
	write_file("data", "abcdef", 0644);
	EXPECT_STATUS("descriptors", relay_child(exec_fds, NULL), "exited 0");
	EXPECT_STATUS("signals", relay_child(exec_signals, NULL), "exited 0");
	EXPECT_STATUS("exec from a second thread", relay_child(exec_from_thread, NULL), "exited 0");

	section("#! scripts");
	char line[4200];
	snprintf(line, sizeof line, "#!%s script optional words\nnot read\n", self_exe());
	write_file("script.sh", line, 0755);
	EXPECT_STATUS("script", relay_child(exec_script, NULL), "exited 0");
	write_file("badinterp.sh", "#!/nonexistent/interpreter\n", 0755);
	char *argv0[] = { "x", NULL };
	EXPECT_ERR("interpreter missing", execve("./badinterp.sh", argv0, ENVP), ENOENT);

	section("errors");
	EXPECT_ERR("missing file", execve("/nonexistent", argv0, ENVP), ENOENT);
	EXPECT_ERR("empty path", execve("", argv0, ENVP), ENOENT);
	write_file("noexec", "#!/bin/sh\n", 0644);
	EXPECT_ERR("no execute permission (even for root)", execve("./noexec", argv0, ENVP), EACCES);
	EXPECT_ERR("a directory", execve(".", argv0, ENVP), EACCES);
	write_file("garbage", "\x01\x02\x03 not a program\n", 0755);
	EXPECT_ERR("unknown format", execve("./garbage", argv0, ENVP), ENOEXEC);
	write_file("empty", "", 0755);
	EXPECT_ERR("empty file", execve("./empty", argv0, ENVP), ENOEXEC);
	EXPECT_ERR("path through a file", execve("./garbage/x", argv0, ENVP), ENOTDIR);
	SETUP(symlink("garbage", "link"));
	EXPECT_ERR("execveat of a link with AT_SYMLINK_NOFOLLOW",
		syscall(SYS_execveat, AT_FDCWD, "link", argv0, ENVP, AT_SYMLINK_NOFOLLOW), ELOOP);
	EXPECT_ERR("execveat with an unknown flag",
		syscall(SYS_execveat, AT_FDCWD, self_exe(), argv0, ENVP, 0x4), EINVAL);
	EXPECT_ERR("bad path pointer", syscall(SYS_execve, BAD_PTR, argv0, ENVP), EFAULT);
	EXPECT_ERR("bad argv pointer", syscall(SYS_execve, self_exe(), BAD_PTR, ENVP), EFAULT);
	char *badv[] = { "x", BAD_PTR, NULL };
	EXPECT_ERR("bad argv element", syscall(SYS_execve, self_exe(), badv, ENVP), EFAULT);
	EXPECT_ERR("bad envp element", syscall(SYS_execve, self_exe(), argv0, badv), EFAULT);
	/* One string may be at most 32 pages, its NUL included. */
	static char big[131073];
	memset(big, 'x', sizeof big - 1);
	char *bigv[] = { "x", "exit", big, NULL };
	EXPECT_ERR("an argument of 131072 characters", execve(self_exe(), bigv, ENVP), E2BIG);
	running_program_not_written();
	char *okv[] = { "x", "exit", "7", NULL };
	EXPECT_STATUS("exit code through exec", relay_child(relay_exec_fn,
		&(struct exec_args){ self_exe(), okv, ENVP }), "exited 7");
	EXPECT_EQ("the caller survives failed execs", getpid() > 0, 1);
	return abi_done();
}
