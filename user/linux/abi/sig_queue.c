/*
 * RLIMIT_SIGPENDING and unshare(2). Signals queued past the limit: a
 * real-time signal sent with its information is EAGAIN (sigqueue,
 * rt_sigqueueinfo, tgkill), kill's is still delivered; a queue that a
 * program fills as fast as it can stays bounded. unshare: bad flags,
 * what a process may unshare, namespaces without privilege, the semaphore
 * adjustments CLONE_SYSVSEM applies.
 */
#include "abi.h"
#include <sched.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/sem.h>

static volatile int got[65];

static void count(int s)
{
	got[s]++;
}

static void limits(void)
{
	section("RLIMIT_SIGPENDING");
	struct rlimit old, lim = { 3, 3 };
	SETUP(getrlimit(RLIMIT_SIGPENDING, &old));
	SETUP(setrlimit(RLIMIT_SIGPENDING, &lim));
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = count;
	sigaction(SIGRTMIN, &sa, NULL);
	sigaction(SIGRTMIN + 1, &sa, NULL);
	sigset_t set, none;
	sigemptyset(&set);
	sigemptyset(&none);
	sigaddset(&set, SIGRTMIN);
	sigaddset(&set, SIGRTMIN + 1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	union sigval v = { .sival_int = 1 };
	EXPECT_OK("sigqueue 1", sigqueue(getpid(), SIGRTMIN, v));
	EXPECT_OK("sigqueue 2", sigqueue(getpid(), SIGRTMIN, v));
	EXPECT_OK("sigqueue 3", sigqueue(getpid(), SIGRTMIN, v));
	EXPECT_ERR("sigqueue past the limit", sigqueue(getpid(), SIGRTMIN, v), EAGAIN);
	EXPECT_ERR("tgkill past the limit", syscall(SYS_tgkill, getpid(), gettid(), SIGRTMIN), EAGAIN);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = SIGRTMIN;
	si.si_code = SI_QUEUE;
	EXPECT_ERR("rt_sigqueueinfo past the limit", syscall(SYS_rt_sigqueueinfo, getpid(), SIGRTMIN, &si), EAGAIN);
	EXPECT_OK("kill past the limit", kill(getpid(), SIGRTMIN + 1));
	sigprocmask(SIG_SETMASK, &none, NULL);
	EXPECT_EQ("SIGRTMIN delivered", got[SIGRTMIN], 3);
	EXPECT_EQ("SIGRTMIN+1 delivered", got[SIGRTMIN + 1], 1);

	/* A queue filled as fast as a program can: bounded, and then empty. */
	lim.rlim_cur = lim.rlim_max = 64;
	SETUP(setrlimit(RLIMIT_SIGPENDING, &lim));
	sigprocmask(SIG_BLOCK, &set, NULL);
	int ok = 0, again = 0;
	for (int i = 0; i < 20000; i++) {
		if (sigqueue(getpid(), SIGRTMIN, v) == 0)
			ok++;
		else if (errno == EAGAIN)
			again++;
	}
	EXPECT_EQ("queued of 20000", ok, 64);
	EXPECT_EQ("refused", again, 20000 - 64);
	got[SIGRTMIN] = 0;
	sigprocmask(SIG_SETMASK, &none, NULL);
	EXPECT_EQ("delivered", got[SIGRTMIN], 64);
	EXPECT_OK("room again", sigqueue(getpid(), SIGRTMIN, v));

	lim.rlim_cur = lim.rlim_max = 0;
	SETUP(setrlimit(RLIMIT_SIGPENDING, &lim));
	EXPECT_ERR("limit 0", sigqueue(getpid(), SIGRTMIN, v), EAGAIN);
	SETUP(setrlimit(RLIMIT_SIGPENDING, &old));
	signal(SIGRTMIN, SIG_DFL);
	signal(SIGRTMIN + 1, SIG_DFL);
}

static int unprivileged(void *arg)
{
	(void)arg;
	if (setuid(65534) != 0)
		return 9;
	int bad = 0;
	errno = 0;
	if (unshare(CLONE_NEWNS) != -1 || errno != EPERM)
		bad |= 1;
	errno = 0;
	if (unshare(CLONE_NEWUTS | CLONE_NEWIPC) != -1 || errno != EPERM)
		bad |= 2;
	if (unshare(CLONE_FILES | CLONE_FS) != 0)
		bad |= 4;
	return bad;
}

static void unsharing(void)
{
	section("unshare");
	EXPECT_ERR("flags -1", unshare(-1), EINVAL);
	EXPECT_ERR("CLONE_VFORK", unshare(CLONE_VFORK), EINVAL);
	EXPECT_ERR("CLONE_PARENT", unshare(CLONE_PARENT), EINVAL);
	EXPECT_OK("nothing", unshare(0));
	EXPECT_OK("CLONE_FILES", unshare(CLONE_FILES));
	EXPECT_OK("CLONE_FS", unshare(CLONE_FS));
	/* One thread: nothing to unshare, so Linux pretends it worked. */
	EXPECT_OK("CLONE_THREAD", unshare(CLONE_THREAD));
	EXPECT_OK("CLONE_SIGHAND", unshare(CLONE_SIGHAND));
	EXPECT_OK("CLONE_VM", unshare(CLONE_VM));
	int fd = open("kept", O_RDWR | O_CREAT, 0644);
	EXPECT_OK("descriptors kept", fcntl(fd, F_GETFD));
	close(fd);
	EXPECT_STATUS("without privilege", in_child(unprivileged, NULL), "exited 0");

	int id = semget(IPC_PRIVATE, 1, 0600);
	SETUP(id);
	struct sembuf up = { 0, 2, SEM_UNDO };
	SETUP(semop(id, &up, 1));
	EXPECT_EQ("semaphore raised", semctl(id, 0, GETVAL), 2);
	EXPECT_OK("CLONE_SYSVSEM", unshare(CLONE_SYSVSEM));
	EXPECT_EQ("its adjustment applied", semctl(id, 0, GETVAL), 0);
	EXPECT_OK("again: nothing left", unshare(CLONE_SYSVSEM));
	EXPECT_EQ("unchanged", semctl(id, 0, GETVAL), 0);
	semctl(id, 0, IPC_RMID);
}

int main(void)
{
	abi_init();
	limits();
	unsharing();
	return abi_done();
}
