/*
 * SysV IPC: shared memory (shmget/shmat/shmdt/shmctl), semaphores
 * (semget/semop/semtimedop/semctl with SEM_UNDO) and message queues
 * (msgget/msgsnd/msgrcv/msgctl), between processes that find them by key,
 * with the errors: bad ids, ids removed meanwhile, bad pointers, another
 * user's objects, a process killed while it waits or while attached.
 *
 * A waiter's partner learns that it waits from GETNCNT or from the
 * queue's state, so no sleep decides an outcome.
 */
#include "abi.h"

#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sched.h>
#include <time.h>

#define BAD ((void *)16)
#define NOBODY 65534

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

static void strcpy_fault(void *p);
static void abi_nothing(int s);

static key_t key_of(int n)
{
	return 0x7e550000 + n;
}

static int nattch(int id)
{
	struct shmid_ds ds;
	if (shmctl(id, IPC_STAT, &ds) == -1)
		return -1;
	return (int)ds.shm_nattch;
}

/* Waits until `n` processes wait on semaphore `num` of `id` to grow. */
static void until_waiting(int id, int num, int n)
{
	for (int i = 0; i < 100000 && semctl(id, num, GETNCNT) != n; i++)
		sched_yield();
}

static void shm_tests(void)
{
	section("shared memory");
	int id = shmget(key_of(1), 8192, IPC_CREAT | IPC_EXCL | 0600);
	EXPECT_TRUE("shmget of a new key", id >= 0);
	EXPECT_ERR("again with IPC_EXCL", shmget(key_of(1), 8192, IPC_CREAT | IPC_EXCL | 0600), EEXIST);
	EXPECT_TRUE("again without: the same id", shmget(key_of(1), 4096, 0600) == id);
	EXPECT_ERR("larger than the segment", shmget(key_of(1), 16384, 0600), EINVAL);
	EXPECT_ERR("an unknown key", shmget(key_of(2), 4096, 0600), ENOENT);
	EXPECT_ERR("size 0", shmget(IPC_PRIVATE, 0, 0600), EINVAL);
	EXPECT_EQ("nattch before shmat", nattch(id), 0);

	char *p = shmat(id, NULL, 0);
	EXPECT_TRUE("shmat", p != (void *)-1);
	EXPECT_TRUE("zero-filled", p[0] == 0 && p[8191] == 0);
	strcpy(p, "parent");
	EXPECT_EQ("nattch after shmat", nattch(id), 1);
	char *q = shmat(id, NULL, SHM_RDONLY);
	EXPECT_TRUE("a second attachment shows the same bytes", q != (void *)-1 && strcmp(q, "parent") == 0);
	EXPECT_EQ("nattch 2", nattch(id), 2);
	siginfo_t si;
	int sig = catch_fault(strcpy_fault, q, &si);
	EXPECT_STR("a write to a SHM_RDONLY attachment", signame(sig), "SIGSEGV");
	EXPECT_OK("shmdt", shmdt(q));
	EXPECT_ERR("shmdt again", shmdt(q), EINVAL);
	EXPECT_ERR("shmdt of an address not attached", shmdt((void *)0x10000), EINVAL);
	EXPECT_ERR("shmdt of an unaligned address", shmdt(p + 1), EINVAL);

	pid_t pid = fork();
	if (pid == 0) {
		/* The child finds it by key and writes through its own attachment. */
		int cid = shmget(key_of(1), 0, 0);
		char *c = shmat(cid, NULL, 0);
		if (c == (void *)-1 || strcmp(c, "parent") != 0)
			_exit(1);
		strcpy(c, "child");
		_exit(nattch(cid) == 3 ? 0 : 2);
	}
	EXPECT_STATUS("a child attaches by key (nattch 3: its own and the inherited)", wait_status(pid),
		      "exited 0");
	EXPECT_STR("the parent sees the child's write", p, "child");
	EXPECT_EQ("nattch after the child ended", nattch(id), 1);

	pid = fork();
	if (pid == 0) {
		shmat(id, NULL, 0);
		for (;;)
			pause();
	}
	for (int i = 0; i < 100000 && nattch(id) != 3; i++)
		sched_yield();
	EXPECT_EQ("a child attached twice", nattch(id), 3);
	kill(pid, SIGKILL);
	EXPECT_STATUS("killed", wait_status(pid), "killed by SIGKILL");
	EXPECT_EQ("nattch after it was killed", nattch(id), 1);

	struct shmid_ds ds;
	EXPECT_OK("IPC_STAT", shmctl(id, IPC_STAT, &ds));
	EXPECT_EQ("shm_segsz", ds.shm_segsz, 8192);
	EXPECT_EQ("mode", ds.shm_perm.mode & 0777, 0600);
	EXPECT_TRUE("cpid is the caller", ds.shm_cpid == getpid());
	ds.shm_perm.mode = 0640;
	EXPECT_OK("IPC_SET", shmctl(id, IPC_SET, &ds));
	EXPECT_OK("IPC_STAT again", shmctl(id, IPC_STAT, &ds));
	EXPECT_EQ("the new mode", ds.shm_perm.mode & 0777, 0640);
	EXPECT_ERR("IPC_STAT to a bad pointer", shmctl(id, IPC_STAT, BAD), EFAULT);
	EXPECT_ERR("IPC_SET from a bad pointer", shmctl(id, IPC_SET, BAD), EFAULT);
	EXPECT_ERR("an unknown command", shmctl(id, 99, &ds), EINVAL);
	EXPECT_ERR("a bad id", shmctl(-1, IPC_STAT, &ds), EINVAL);
	struct shminfo info;
	EXPECT_TRUE("IPC_INFO", shmctl(0, IPC_INFO, (struct shmid_ds *)&info) >= 0);
	EXPECT_EQ("shmmni", info.shmmni, 4096);

	/* Another user: no permission, no change, no removal. */
	pid = fork();
	if (pid == 0) {
		if (setgid(NOBODY) == -1 || setuid(NOBODY) == -1)
			_exit(9);
		int bad = 0;
		bad |= shmat(id, NULL, 0) != (void *)-1 || errno != EACCES;
		bad |= (shmctl(id, IPC_STAT, &ds) != -1 || errno != EACCES) << 1;
		bad |= (shmctl(id, IPC_RMID, NULL) != -1 || errno != EPERM) << 2;
		bad |= (shmget(key_of(1), 0, 0600) != -1 || errno != EACCES) << 3;
		_exit(bad);
	}
	EXPECT_STATUS("nobody: EACCES, EACCES, EPERM, EACCES", wait_status(pid), "exited 0");

	EXPECT_OK("IPC_RMID while attached", shmctl(id, IPC_RMID, NULL));
	EXPECT_OK("IPC_STAT still answers", shmctl(id, IPC_STAT, &ds));
	EXPECT_TRUE("SHM_DEST set", (ds.shm_perm.mode & SHM_DEST) != 0);
	EXPECT_ERR("the key is free", shmget(key_of(1), 0, 0600), ENOENT);
	EXPECT_STR("the memory is still there", p, "child");
	EXPECT_OK("the last shmdt", shmdt(p));
	EXPECT_ERR("then the id is gone", shmctl(id, IPC_STAT, &ds), EINVAL);
	EXPECT_ERR("shmat of a removed id", (long)shmat(id, NULL, 0), EINVAL);

	int pv = shmget(IPC_PRIVATE, 4096, 0600);
	char *fixed = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_ERR("shmat at an unaligned address", (long)shmat(pv, fixed + 1, 0), EINVAL);
	EXPECT_ERR("SHM_RND onto a mapping already there", (long)shmat(pv, fixed + 1, SHM_RND), EINVAL);
	char *r;
	munmap(fixed, 8192);
	r = shmat(pv, fixed, 0);
	EXPECT_TRUE("shmat at a free address asked for", r == fixed);
	EXPECT_OK("shmdt", shmdt(r));
	EXPECT_OK("IPC_RMID", shmctl(pv, IPC_RMID, NULL));
}

/* Writes into memory that may be read-only (catch_fault's callee). */
static void strcpy_fault(void *p)
{
	*(volatile char *)p = 'x';
}

static void sem_tests(void)
{
	section("semaphores");
	int id = semget(key_of(3), 2, IPC_CREAT | IPC_EXCL | 0600);
	EXPECT_TRUE("semget", id >= 0);
	EXPECT_ERR("more than the set has", semget(key_of(3), 3, 0600), EINVAL);
	EXPECT_ERR("nsems 0 for a new set", semget(IPC_PRIVATE, 0, 0600), EINVAL);
	EXPECT_EQ("a new semaphore is 0", semctl(id, 0, GETVAL), 0);
	struct sembuf up = {0, 2, 0}, down = {0, -1, 0}, zero = {1, 0, 0};
	EXPECT_OK("semop +2", semop(id, &up, 1));
	EXPECT_EQ("GETVAL", semctl(id, 0, GETVAL), 2);
	EXPECT_TRUE("GETPID is the caller", semctl(id, 0, GETPID) == getpid());
	EXPECT_OK("wait for zero on a zero semaphore", semop(id, &zero, 1));
	struct sembuf two[2] = {{0, -1, 0}, {1, -1, IPC_NOWAIT}};
	EXPECT_ERR("all or nothing, IPC_NOWAIT", semop(id, two, 2), EAGAIN);
	EXPECT_EQ("nothing applied", semctl(id, 0, GETVAL), 2);
	struct sembuf big = {0, 32767, 0};
	EXPECT_ERR("past SEMVMX", semop(id, &big, 1), ERANGE);
	struct sembuf far = {5, 1, 0};
	EXPECT_ERR("a semaphore past the set", semop(id, &far, 1), EFBIG);
	EXPECT_ERR("nsops 0", semop(id, &up, 0), EINVAL);
	EXPECT_ERR("a bad pointer", semop(id, BAD, 1), EFAULT);
	EXPECT_ERR("a bad id", semop(-1, &up, 1), EINVAL);
	EXPECT_ERR("SETVAL past SEMVMX", semctl(id, 0, SETVAL, 40000), ERANGE);
	unsigned short all[2] = {7, 8}, got[2] = {0, 0};
	EXPECT_OK("SETALL", semctl(id, 0, SETALL, all));
	EXPECT_OK("GETALL", semctl(id, 0, GETALL, got));
	EXPECT_TRUE("GETALL reads 7 8", got[0] == 7 && got[1] == 8);
	EXPECT_ERR("GETALL to a bad pointer", semctl(id, 0, GETALL, BAD), EFAULT);
	EXPECT_ERR("GETVAL of a semaphore past the set", semctl(id, 2, GETVAL), EINVAL);
	EXPECT_OK("SETVAL 0", semctl(id, 0, SETVAL, 0));

	/* A child blocks in semop; the parent's semop lets it go on. */
	pid_t pid = fork();
	if (pid == 0)
		_exit(semop(id, &down, 1) == 0 ? 0 : 1);
	until_waiting(id, 0, 1);
	EXPECT_EQ("GETNCNT: one waits", semctl(id, 0, GETNCNT), 1);
	struct sembuf one = {0, 1, 0};
	EXPECT_OK("semop +1", semop(id, &one, 1));
	EXPECT_STATUS("the waiter went on", wait_status(pid), "exited 0");
	EXPECT_EQ("and took it", semctl(id, 0, GETVAL), 0);

	/* SEM_UNDO: what a process did is undone as it ends. */
	pid = fork();
	if (pid == 0) {
		struct sembuf u = {1, 5, SEM_UNDO};
		_exit(semop(id, &u, 1) == 0 ? 0 : 1);
	}
	EXPECT_STATUS("a child adds 5 with SEM_UNDO", wait_status(pid), "exited 0");
	EXPECT_EQ("undone when it ended", semctl(id, 1, GETVAL), 8);

	/* A waiter killed: the others are not disturbed. */
	pid = fork();
	if (pid == 0) {
		semop(id, &down, 1);
		_exit(3);
	}
	until_waiting(id, 0, 1);
	kill(pid, SIGKILL);
	EXPECT_STATUS("a waiter killed", wait_status(pid), "killed by SIGKILL");
	EXPECT_EQ("GETNCNT: nobody waits", semctl(id, 0, GETNCNT), 0);

	struct timespec ts = {0, 20 * 1000 * 1000};
	EXPECT_ERR("semtimedop times out", semtimedop(id, &down, 1, &ts), EAGAIN);
	struct timespec bad_ts = {0, 1000000000};
	EXPECT_ERR("semtimedop with tv_nsec 10^9", semtimedop(id, &down, 1, &bad_ts), EINVAL);
	EXPECT_ERR("semtimedop with a bad timeout pointer", semtimedop(id, &down, 1, BAD), EFAULT);

	/* A signal ends a wait with EINTR, even with SA_RESTART. */
	pid = fork();
	if (pid == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = abi_nothing;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGUSR1, &sa, NULL);
		int r = semop(id, &down, 1);
		_exit(r == -1 && errno == EINTR ? 0 : 1);
	}
	until_waiting(id, 0, 1);
	kill(pid, SIGUSR1);
	EXPECT_STATUS("a signal: EINTR", wait_status(pid), "exited 0");

	/* The set removed under a waiter: EIDRM. */
	pid = fork();
	if (pid == 0) {
		int r = semop(id, &down, 1);
		_exit(r == -1 && errno == EIDRM ? 0 : 1);
	}
	until_waiting(id, 0, 1);
	pid_t other = fork();
	if (other == 0) {
		if (setgid(NOBODY) == -1 || setuid(NOBODY) == -1)
			_exit(9);
		int bad = (semctl(id, 0, IPC_RMID) != -1 || errno != EPERM);
		bad |= (semctl(id, 0, GETVAL) != -1 || errno != EACCES) << 1;
		_exit(bad);
	}
	EXPECT_STATUS("nobody: EPERM, EACCES", wait_status(other), "exited 0");
	EXPECT_OK("IPC_RMID", semctl(id, 0, IPC_RMID));
	EXPECT_STATUS("the waiter: EIDRM", wait_status(pid), "exited 0");
	EXPECT_ERR("the id is gone", semctl(id, 0, GETVAL), EINVAL);
}

static void abi_nothing(int s)
{
	(void)s;
}

struct msg {
	long type;
	char text[64];
};

static void msg_tests(void)
{
	section("message queues");
	int id = msgget(key_of(4), IPC_CREAT | IPC_EXCL | 0600);
	EXPECT_TRUE("msgget", id >= 0);
	EXPECT_TRUE("msgget again: the same id", msgget(key_of(4), 0600) == id);
	struct msg m = {3, "three"};
	EXPECT_OK("msgsnd type 3", msgsnd(id, &m, 6, 0));
	m.type = 1;
	strcpy(m.text, "one");
	EXPECT_OK("msgsnd type 1", msgsnd(id, &m, 4, 0));
	m.type = 2;
	strcpy(m.text, "two");
	EXPECT_OK("msgsnd type 2", msgsnd(id, &m, 4, 0));
	m.type = 0;
	EXPECT_ERR("type 0", msgsnd(id, &m, 4, 0), EINVAL);
	EXPECT_ERR("a bad pointer", msgsnd(id, BAD, 4, 0), EFAULT);
	EXPECT_ERR("longer than msgmax", msgsnd(id, &m, 9000, 0), EINVAL);

	struct msqid_ds ds;
	EXPECT_OK("IPC_STAT", msgctl(id, IPC_STAT, &ds));
	EXPECT_EQ("msg_qnum", ds.msg_qnum, 3);
	EXPECT_EQ("msg_cbytes", ds.msg_cbytes, 14);
	EXPECT_EQ("msg_qbytes", ds.msg_qbytes, 16384);

	struct msg r;
	EXPECT_EQ("type 2 first", msgrcv(id, &r, 64, 2, 0), 4);
	EXPECT_STR("its text", r.text, "two");
	EXPECT_EQ("the lowest type up to 5", msgrcv(id, &r, 64, -5, 0), 4);
	EXPECT_STR("is type 1", r.type == 1 ? "1" : "other", "1");
	EXPECT_ERR("too short without MSG_NOERROR", msgrcv(id, &r, 2, 0, 0), E2BIG);
	EXPECT_EQ("cut with MSG_NOERROR", msgrcv(id, &r, 2, 0, MSG_NOERROR), 2);
	EXPECT_ERR("empty, IPC_NOWAIT", msgrcv(id, &r, 64, 0, IPC_NOWAIT), ENOMSG);
	m.type = 5;
	msgsnd(id, &m, 4, 0);
	m.type = 6;
	msgsnd(id, &m, 4, 0);
	EXPECT_EQ("MSG_EXCEPT 5", msgrcv(id, &r, 64, 5, MSG_EXCEPT), 4);
	EXPECT_EQ("is type 6", r.type, 6);
	m.type = 7;
	msgsnd(id, &m, 4, 0);
	EXPECT_ERR("type 7 to a bad pointer", msgrcv(id, BAD, 64, 7, 0), EFAULT);
	EXPECT_ERR("the message went with the fault", msgrcv(id, &r, 64, 7, IPC_NOWAIT), ENOMSG);
	EXPECT_EQ("type 5 is still there", msgrcv(id, &r, 64, 0, IPC_NOWAIT), 4);

	/* A receiver waits; a sender lets it go on. */
	pid_t pid = fork();
	if (pid == 0) {
		struct msg c;
		long n = msgrcv(id, &c, 64, 9, 0);
		_exit(n == 4 && strcmp(c.text, "nine") == 0 ? 0 : 1);
	}
	sched_yield();
	m.type = 9;
	strcpy(m.text, "nine");
	EXPECT_OK("send type 9", msgsnd(id, &m, 5 - 1, 0));
	EXPECT_STATUS("the receiver got it", wait_status(pid), "exited 0");

	/* A full queue makes a sender wait, or EAGAIN. */
	ds.msg_qbytes = 8;
	EXPECT_OK("IPC_SET msg_qbytes 8", msgctl(id, IPC_SET, &ds));
	m.type = 1;
	EXPECT_OK("8 bytes", msgsnd(id, &m, 8, 0));
	EXPECT_ERR("one more, IPC_NOWAIT", msgsnd(id, &m, 1, IPC_NOWAIT), EAGAIN);
	pid = fork();
	if (pid == 0)
		_exit(msgsnd(id, &m, 1, 0) == 0 ? 0 : 1);
	for (int i = 0; i < 20; i++)
		sched_yield();
	EXPECT_EQ("a receive makes room", msgrcv(id, &r, 64, 0, 0), 8);
	EXPECT_STATUS("the sender went on", wait_status(pid), "exited 0");
	EXPECT_EQ("its message", msgrcv(id, &r, 64, 0, IPC_NOWAIT), 1);

	pid = fork();
	if (pid == 0) {
		if (setgid(NOBODY) == -1 || setuid(NOBODY) == -1)
			_exit(9);
		int bad = (msgsnd(id, &m, 1, 0) != -1 || errno != EACCES);
		bad |= (msgctl(id, IPC_RMID, NULL) != -1 || errno != EPERM) << 1;
		ds.msg_qbytes = 100000;
		bad |= (msgctl(id, IPC_SET, &ds) != -1 || errno != EPERM) << 2;
		_exit(bad);
	}
	EXPECT_STATUS("nobody: EACCES, EPERM, EPERM", wait_status(pid), "exited 0");

	/* A receiver killed while it waits, another told EIDRM. */
	pid = fork();
	if (pid == 0) {
		msgrcv(id, &r, 64, 0, 0);
		_exit(3);
	}
	kill(pid, SIGKILL);
	EXPECT_STATUS("a receiver killed", wait_status(pid), "killed by SIGKILL");
	int pipefd[2];
	SETUP(pipe(pipefd));
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		write(pipefd[1], "w", 1);
		long n = msgrcv(id, &r, 64, 0, 0);
		_exit(n == -1 && errno == EIDRM ? 0 : 1);
	}
	close(pipefd[1]);
	char c;
	read(pipefd[0], &c, 1);
	close(pipefd[0]);
	/* Time for it to reach msgrcv: nothing tells that it waits. */
	struct timespec settle = {0, 300 * 1000 * 1000};
	nanosleep(&settle, NULL);
	EXPECT_OK("IPC_RMID", msgctl(id, IPC_RMID, NULL));
	EXPECT_STATUS("the waiter: EIDRM", wait_status(pid), "exited 0");
	EXPECT_ERR("the id is gone", msgsnd(id, &m, 1, 0), EINVAL);
	EXPECT_ERR("an unknown key", msgget(key_of(5), 0), ENOENT);
}

int main(void)
{
	abi_init();
	shm_tests();
	sem_tests();
	msg_tests();
	return abi_done();
}
