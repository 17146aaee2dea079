/*
 * fork + execve + pipe, 2,000 times by four workers at once (`make test`;
 * `make linux-stress` runs 10,000, `stress ROUNDS` any number): each round a
 * worker makes a pipe and forks a child that execs this program (`stress
 * child N`) with its standard output on the pipe; the child writes N and
 * exits with N % 200; the worker reads the number, waits for the child
 * and checks both. The system's level is taken after a first 400 rounds
 * (heaps keep what their peak took, the personality keeps idle
 * supervisors after a burst); after the rounds the system must be back
 * at it (levels.h): no process, space, region or memory lost.
 */
#include "abi.h"
#include "levels.h"

#define WORKERS 4
#define WARM_UP 400
#define ROUNDS 2000

static const char *self;

/* One round: 0 if the child said `n` and exited with n % 200. */
static int one(int n)
{
	int p[2];
	if (pipe(p) != 0)
		return 1;
	pid_t c = fork();
	if (c < 0) {
		close(p[0]);
		close(p[1]);
		return 1;
	}
	if (c == 0) {
		char num[16];
		snprintf(num, sizeof num, "%d", n);
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl(self, "stress", "child", num, (char *)NULL);
		_exit(255);
	}
	close(p[1]);
	char buf[32];
	size_t got = 0;
	ssize_t r;
	while (got < sizeof buf - 1 && ((r = read(p[0], buf + got, sizeof buf - 1 - got)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0)
			got += (size_t)r;
	close(p[0]);
	buf[got] = 0;
	int st = wait_status(c);
	char want[16];
	snprintf(want, sizeof want, "%d\n", n);
	return !(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == n % 200 && strcmp(buf, want) == 0);
}

/* `total` rounds shared by WORKERS processes at once: how many failed. */
static long rounds(int total)
{
	pid_t w[WORKERS];
	int each = total / WORKERS;
	for (int k = 0; k < WORKERS; k++) {
		w[k] = fork();
		SETUP(w[k]);
		if (w[k] == 0) {
			int bad = 0;
			for (int i = 0; i < each; i++)
				bad += one(k * each + i);
			_exit(bad > 254 ? 254 : bad);
		}
	}
	long failed = 0;
	for (int k = 0; k < WORKERS; k++) {
		int st = wait_status(w[k]);
		failed += st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : 1000;
	}
	return failed;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "child") == 0) {
		int n = atoi(argv[2]);
		say("%d", n);
		return n % 200;
	}
	abi_init();
	self = argv[0];
	int total = argc == 2 ? atoi(argv[1]) : ROUNDS;
	if (total < WORKERS)
		total = WORKERS;
	total -= total % WORKERS;

	section("fork + execve + pipe by four workers");
	struct level level;
	EXPECT_EQ("400 rounds: failed", rounds(WARM_UP), 0);
	take_level(&level);
	char name[64];
	snprintf(name, sizeof name, "%d rounds: failed", total);
	EXPECT_EQ(name, rounds(total), 0);
	expect_level("the system is back at its level", &level, &level);
	return abi_done();
}
