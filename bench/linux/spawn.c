/*
 * Process creation and deletion: start the tiny static program and wait
 * for it, by fork+execve, vfork+execve and posix_spawn (musl implements
 * posix_spawn with clone(CLONE_VM|CLONE_VFORK), so it is close to vfork).
 *
 * Beside each time: page faults per spawn, in the children (getrusage
 * RUSAGE_CHILDREN) and in this parent (fork's copy-on-write breaks).
 */
#include "spawnutil.h"

typedef void (*spawn_fn)(const char *, char *const[]);

static void measure(const char *metric, spawn_fn fn, const char *path, long iters)
{
	char *argv[] = { (char *)"tiny", NULL };
	for (long i = 0; i < warmup_count(iters); i++)
		fn(path, argv);
	long child0 = minflt_children(), self0 = minflt_self();
	uint64_t t0 = now_ns();
	for (long i = 0; i < iters; i++)
		fn(path, argv);
	uint64_t t1 = now_ns();
	long child1 = minflt_children(), self1 = minflt_self();

	char name[64];
	report("spawn", metric, "", (double)(t1 - t0) / iters, "ns");
	snprintf(name, sizeof name, "%s_minflt_child", metric);
	report_count("spawn", name, "", (double)(child1 - child0) / iters);
	snprintf(name, sizeof name, "%s_minflt_parent", metric);
	report_count("spawn", name, "", (double)(self1 - self0) / iters);
}

int main(int argc, char **argv)
{
	struct bench_args a = parse_args(argc, argv, 200, 3);
	char path[PATH_MAX];
	sibling_path(path, sizeof path, "tiny");
	measure("fork_exec_wait", fork_exec_wait, path, a.iters);
	measure("vfork_exec_wait", vfork_exec_wait, path, a.iters);
	measure("posix_spawn_wait", posix_spawn_wait, path, a.iters);
	return 0;
}
