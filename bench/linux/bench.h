/*
 * Shared helpers for Tessera's Linux-side benchmark programs.
 *
 * Every program prints one figure per line in the format shared with
 * Tessera's kernel:
 *
 *     BENCH,<experiment>,<metric>,<param>,<value>,<unit>
 *
 * Time comes from clock_gettime(CLOCK_MONOTONIC).  Under QEMU's
 * `-icount shift=0` the guest clock advances one nanosecond per guest
 * instruction, so a "ns" printed here is a path length, not wall time.
 *
 * Command line of every program:  prog [ITERATIONS] [--short]
 *   ITERATIONS  overrides the default count of timed iterations
 *   --short     a handful of iterations: a smoke test, not a measurement
 */
#ifndef TESSERA_BENCH_H
#define TESSERA_BENCH_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void die(const char *what)
{
	/* A failure must be visible in the serial log and must not look like a figure. */
	fprintf(stderr, "BENCH-ERROR,%s,%s\n", what, strerror(errno));
	exit(1);
}

struct bench_args {
	long iters;   /* timed iterations */
	int short_mode;
};

/* Parse "[ITERATIONS] [--short]"; the defaults come from the caller. */
static inline struct bench_args parse_args(int argc, char **argv, long def_iters, long short_iters)
{
	struct bench_args a = { def_iters, 0 };
	long explicit_iters = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--short") == 0)
			a.short_mode = 1;
		else if (argv[i][0] >= '0' && argv[i][0] <= '9')
			explicit_iters = strtol(argv[i], NULL, 10);
		else {
			fprintf(stderr, "usage: %s [ITERATIONS] [--short]\n", argv[0]);
			exit(2);
		}
	}
	if (a.short_mode)
		a.iters = short_iters;
	if (explicit_iters > 0)
		a.iters = explicit_iters;
	return a;
}

/* Untimed warm-up rounds: first-use costs (page faults on our own code and
 * data, cold kernel paths) would otherwise be charged to the first figure. */
static inline long warmup_count(long iters)
{
	long w = iters / 10;
	return w < 1 ? 1 : w;
}

/* Param is printed as given; an empty string leaves the column empty. */
static inline void report(const char *exp, const char *metric, const char *param,
		   double value, const char *unit)
{
	printf("BENCH,%s,%s,%s,%.1f,%s\n", exp, metric, param, value, unit);
	fflush(stdout);
}

static inline void report_count(const char *exp, const char *metric, const char *param,
			 double value)
{
	/* Counts are per operation and may be fractional (e.g. 812.02 faults). */
	printf("BENCH,%s,%s,%s,%.2f,count\n", exp, metric, param, value);
	fflush(stdout);
}

static inline long minflt_self(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		die("getrusage");
	return ru.ru_minflt;
}

static inline long minflt_children(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_CHILDREN, &ru) != 0)
		die("getrusage");
	return ru.ru_minflt;
}

/*
 * Path of a helper program that sits next to this executable.  In the
 * reference VM everything lives in /bench; on the host (smoke test) the
 * programs live in the build folder.  /proc/self/exe works in both.
 */
static inline void sibling_path(char *out, size_t len, const char *name)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0)
		die("readlink /proc/self/exe");
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	if ((size_t)snprintf(out, len, "%s/%s", self, name) >= len) {
		errno = ENAMETOOLONG;
		die("sibling_path");
	}
}

/* A whole file into buf (NUL-terminated; at most size - 1 bytes): its
 * length, or -1 if it cannot be opened. */
static inline long read_whole(const char *file, char *buf, size_t size)
{
	size_t got = 0;
	ssize_t n;
	int fd = open(file, O_RDONLY);
	if (fd >= 0) {
		while (got < size - 1 && (n = read(fd, buf + got, size - 1 - got)) > 0)
			got += (size_t)n;
		close(fd);
	}
	buf[got] = 0;
	return fd < 0 ? -1 : (long)got;
}

#endif
