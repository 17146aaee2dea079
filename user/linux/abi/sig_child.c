/*
 * SIGCHLD and job-control signals: the siginfo a parent gets when a child
 * exits, is killed, stops and continues; SA_NOCLDSTOP, SIG_IGN and
 * SA_NOCLDWAIT (children reaped by the kernel); waitpid with WUNTRACED and
 * WCONTINUED; and the default action of every signal 1..64.
 */
#include "abi.h"

static volatile int nchld;
static siginfo_t chld[8];

static void on_chld(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (nchld < 8)
		chld[nchld] = *si;
	nchld++;
}

static const char *cld_code(int code)
{
	switch (code) {
	case CLD_EXITED: return "CLD_EXITED";
	case CLD_KILLED: return "CLD_KILLED";
	case CLD_DUMPED: return "CLD_DUMPED";
	case CLD_STOPPED: return "CLD_STOPPED";
	case CLD_CONTINUED: return "CLD_CONTINUED";
	default: return "other";
	}
}

static int exit_with(void *arg)
{
	return (int)(long)arg;
}

static int wait_forever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

static void wait_for_sigchld(int n)
{
	sigset_t none;
	sigemptyset(&none);
	while (nchld < n)
		sigsuspend(&none);
}

static void install(int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_chld;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | flags;
	sigaction(SIGCHLD, &sa, NULL);
}

static int raise_self(void *arg)
{
	int sig = (int)(long)arg;
	kill(getpid(), sig);
	return 0;
}

static int raise_in_own_group(void *arg)
{
	setpgid(0, 0);
	return raise_self(arg);
}

/* Stops itself; a sibling process continues it. */
static int stop_then_exit(void *arg)
{
	(void)arg;
	pid_t me = getpid();
	pid_t helper = fork();
	if (helper == 0) {
		char path[64];
		int seen = 0;
		for (int i = 0; i < 10000 && !seen; i++) {
			/* Wait until the stop took effect, then continue it. */
			snprintf(path, sizeof path, "/proc/%d/stat", me);
			int fd = open(path, O_RDONLY);
			char buf[256] = { 0 };
			read(fd, buf, sizeof buf - 1);
			close(fd);
			char *paren = strrchr(buf, ')');
			seen = paren && paren[2] == 'T';
			if (!seen)
				usleep(1000);
		}
		kill(me, SIGCONT);
		_exit(seen ? 0 : 1);
	}
	kill(me, SIGSTOP);
	/* Exit 0 only if the helper saw this process stopped. */
	return WEXITSTATUS(wait_status(helper));
}

int main(void)
{
	abi_init();
	/* SIGCHLD stays blocked except while sigsuspend waits for it. */
	sigset_t chldset;
	sigemptyset(&chldset);
	sigaddset(&chldset, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chldset, NULL);

	section("SIGCHLD");
	install(0);
	nchld = 0;
	pid_t c = spawn_fn(exit_with, (void *)3);
	wait_for_sigchld(1);
	EXPECT_STR("exit: si_signo", signame(chld[0].si_signo), "SIGCHLD");
	EXPECT_STR("si_code", cld_code(chld[0].si_code), "CLD_EXITED");
	EXPECT_EQ("si_status", chld[0].si_status, 3);
	EXPECT_TRUE("si_pid", chld[0].si_pid == c);
	EXPECT_STATUS("and the zombie waits", wait_status(c), "exited 3");
	nchld = 0;
	c = spawn_fn(wait_forever, NULL);
	kill(c, SIGSTOP);
	wait_for_sigchld(1);
	EXPECT_STR("stop: si_code", cld_code(chld[0].si_code), "CLD_STOPPED");
	EXPECT_STR("si_status", signame(chld[0].si_status), "SIGSTOP");
	int st;
	EXPECT_TRUE("waitpid WUNTRACED", waitpid(c, &st, WUNTRACED) == c);
	EXPECT_STATUS("status", st, "stopped by SIGSTOP");
	EXPECT_EQ("a second WUNTRACED wait finds nothing new", waitpid(c, &st, WUNTRACED | WNOHANG), 0);
	kill(c, SIGCONT);
	wait_for_sigchld(2);
	EXPECT_STR("continue: si_code", cld_code(chld[1].si_code), "CLD_CONTINUED");
	EXPECT_STR("si_status", signame(chld[1].si_status), "SIGCONT");
	EXPECT_TRUE("waitpid WCONTINUED", waitpid(c, &st, WCONTINUED) == c);
	EXPECT_STATUS("status", st, "continued");
	kill(c, SIGTERM);
	wait_for_sigchld(3);
	EXPECT_STR("kill: si_code", cld_code(chld[2].si_code), "CLD_KILLED");
	EXPECT_STR("si_status", signame(chld[2].si_status), "SIGTERM");
	EXPECT_STATUS("status", wait_status(c), "killed by SIGTERM");

	section("SA_NOCLDSTOP");
	install(SA_NOCLDSTOP);
	nchld = 0;
	c = spawn_fn(wait_forever, NULL);
	kill(c, SIGSTOP);
	waitpid(c, &st, WUNTRACED);
	kill(c, SIGCONT);
	waitpid(c, &st, WCONTINUED);
	kill(c, SIGKILL);
	wait_for_sigchld(1);
	EXPECT_EQ("stop and continue sent no SIGCHLD: signals", nchld, 1);
	EXPECT_STR("the one for the kill", cld_code(chld[0].si_code), "CLD_KILLED");
	wait_status(c);

	section("children reaped by the kernel");
	sigprocmask(SIG_UNBLOCK, &chldset, NULL);
	signal(SIGCHLD, SIG_IGN);
	c = spawn_fn(exit_with, (void *)1);
	/* wait blocks until every child is gone, then finds none. */
	EXPECT_ERR("SIGCHLD ignored: wait finds no zombie", waitpid(-1, &st, 0), ECHILD);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = SA_NOCLDWAIT;
	sigaction(SIGCHLD, &sa, NULL);
	c = spawn_fn(exit_with, (void *)1);
	EXPECT_ERR("SA_NOCLDWAIT: the same", waitpid(-1, &st, 0), ECHILD);
	signal(SIGCHLD, SIG_DFL);
	c = spawn_fn(exit_with, (void *)2);
	EXPECT_STATUS("SIG_DFL: a zombie to wait for", wait_status(c), "exited 2");

	section("default action of each signal");
	/* Each child in a process group of its own, which is not orphaned (its
	 * parent is in another group of the same session). */
	for (int sig = 1; sig <= 64; sig++) {
		pid_t p = spawn_fn(raise_in_own_group, (void *)(long)sig);
		waitpid(p, &st, WUNTRACED);
		char got[80];
		snprintf(got, sizeof got, "%s", status_text(st));
		if (WIFSTOPPED(st)) {
			kill(p, SIGCONT);
			waitpid(p, &st, 0);
			size_t n = strlen(got);
			snprintf(got + n, sizeof got - n, ", then %s", status_text(st));
		}
		char want[80];
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			snprintf(want, sizeof want, "stopped by %s, then exited 0", signame(sig));
		else if (sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT)
			snprintf(want, sizeof want, "exited 0");
		else
			snprintf(want, sizeof want, "killed by %s", signame(sig));
		record(strcmp(got, want) == 0, signame(sig), got, want);
	}
	/* Our own group is orphaned: its members' parents are all in it or in
	 * another session.  The terminal stop signals are dropped there. */
	EXPECT_STATUS("SIGTSTP in an orphaned group", in_child(raise_self, (void *)SIGTSTP), "exited 0");
	EXPECT_STATUS("SIGTTIN in an orphaned group", in_child(raise_self, (void *)SIGTTIN), "exited 0");
	EXPECT_STATUS("SIGSTOP in an orphaned group still stops", in_child(stop_then_exit, NULL), "exited 0");
	/* An end that orphans no group sends no SIGHUP, not even to a group
	 * orphaned already that has a stopped member. */
	pid_t held = spawn_fn(raise_self, (void *)SIGSTOP);
	waitpid(held, &st, WUNTRACED);
	EXPECT_STR("a member of the orphaned group stops", status_text(st), "stopped by SIGSTOP");
	c = spawn_fn(exit_with, (void *)4);
	EXPECT_STATUS("another member ends meanwhile", wait_status(c), "exited 4");
	kill(held, SIGCONT);
	EXPECT_STATUS("no SIGHUP came: the stopped one goes on", wait_status(held), "exited 0");
	return abi_done();
}
