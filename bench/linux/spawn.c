/*
 * Process creation and deletion: start the tiny static program and wait
 * for it, by fork+execve, vfork+execve and posix_spawn (musl implements
 * posix_spawn with clone(CLONE_VM|CLONE_VFORK), so it is close to vfork).
 *
 * Beside each time: page faults per spawn, in the children (getrusage
 * RUSAGE_CHILDREN) and in this parent (fork's copy-on-write breaks).
 *
 *   spawn [ITERATIONS] [--short] [-s FILE]...
 *
 * -s FILE (Tessera, tools/bench/spawnsplit.py): only fork+execve, with a
 * snapshot of each FILE (/proc/tessera/cpu: CPU time by process) read just
 * before the first timed spawn and just after the last, printed as
 * CPUSPLIT,<metric>,before|after,<file>,<line>.
 */
#include "spawnutil.h"
#include <fcntl.h>

typedef void (*spawn_fn)(const char *, char *const[]);

#define SPLIT_FILES 4
static const char *split_files[SPLIT_FILES];
static int nsplit;
static char split_before[SPLIT_FILES][32768], split_after[SPLIT_FILES][32768];

static void print_lines(const char *metric, const char *when, const char *file, char *text)
{
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		printf("CPUSPLIT,%s,%s,%s,%s\n", metric, when, file, line);
}

static void measure(const char *metric, spawn_fn fn, const char *path, long iters)
{
	char *argv[] = { (char *)"tiny", NULL };
	for (long i = 0; i < warmup_count(iters); i++)
		fn(path, argv);
	long child0 = minflt_children(), self0 = minflt_self();
	for (int i = nsplit - 1; i >= 0; i--)
		read_whole(split_files[i], split_before[i], sizeof split_before[i]);
	uint64_t t0 = now_ns();
	for (long i = 0; i < iters; i++)
		fn(path, argv);
	uint64_t t1 = now_ns();
	for (int i = 0; i < nsplit; i++)
		read_whole(split_files[i], split_after[i], sizeof split_after[i]);
	long child1 = minflt_children(), self1 = minflt_self();
	for (int i = 0; i < nsplit; i++) {
		print_lines(metric, "before", split_files[i], split_before[i]);
		print_lines(metric, "after", split_files[i], split_after[i]);
	}

	char name[64];
	report("spawn", metric, "", (double)(t1 - t0) / iters, "ns");
	snprintf(name, sizeof name, "%s_minflt_child", metric);
	report_count("spawn", name, "", (double)(child1 - child0) / iters);
	snprintf(name, sizeof name, "%s_minflt_parent", metric);
	report_count("spawn", name, "", (double)(self1 - self0) / iters);
}

int main(int argc, char **argv)
{
	/* -s FILE pairs are this program's own; the rest is every program's. */
	int n = 1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-s") == 0 && i + 1 < argc && nsplit < SPLIT_FILES)
			split_files[nsplit++] = argv[++i];
		else
			argv[n++] = argv[i];
	}
	struct bench_args a = parse_args(n, argv, 200, 3);
	char path[PATH_MAX];
	sibling_path(path, sizeof path, "tiny");
	measure("fork_exec_wait", fork_exec_wait, path, a.iters);
	if (nsplit)
		return 0;
	measure("vfork_exec_wait", vfork_exec_wait, path, a.iters);
	measure("posix_spawn_wait", posix_spawn_wait, path, a.iters);
	return 0;
}
