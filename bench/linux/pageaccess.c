/*
 * Tender's page access experiment (seed 000, 3.2.2, table 5, figures 8-9):
 * start the page access program with 0, 200, 400 and 800 BSS pages by
 * fork+execve+wait, repeatedly, and count the page faults it causes.
 *
 * Figures per spawn, for each page count N:
 *   fork_exec_wait  time of one start-run-exit-reap cycle
 *   minflt          faults charged to the child (getrusage RUSAGE_CHILDREN)
 *   minflt_stat     faults the child itself reads from /proc/self/stat just
 *                   before exit (one extra, untimed run with --stat)
 *   minflt_parent   copy-on-write faults taken by this parent after fork
 */
#include "spawnutil.h"

static const int page_counts[] = { 0, 200, 400, 800 };

static long read_child_stat(const char *path)
{
	int fds[2];
	if (pipe(fds) != 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		char *argv[] = { (char *)"pageprog", (char *)"--stat", NULL };
		execve(path, argv, environ);
		_exit(127);
	}
	close(fds[1]);
	char buf[64] = { 0 };
	ssize_t n = read(fds[0], buf, sizeof buf - 1);
	close(fds[0]);
	reap(pid);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

int main(int argc, char **argv)
{
	struct bench_args a = parse_args(argc, argv, 50, 3);
	for (size_t k = 0; k < sizeof page_counts / sizeof page_counts[0]; k++) {
		char name[32], path[PATH_MAX], param[16];
		snprintf(name, sizeof name, "pageprog%d", page_counts[k]);
		snprintf(param, sizeof param, "%d", page_counts[k]);
		sibling_path(path, sizeof path, name);
		char *cargv[] = { name, NULL };

		for (long i = 0; i < warmup_count(a.iters); i++)
			fork_exec_wait(path, cargv);
		long child0 = minflt_children(), self0 = minflt_self();
		uint64_t t0 = now_ns();
		for (long i = 0; i < a.iters; i++)
			fork_exec_wait(path, cargv);
		uint64_t t1 = now_ns();
		long child1 = minflt_children(), self1 = minflt_self();

		report("pageaccess", "fork_exec_wait", param, (double)(t1 - t0) / a.iters, "ns");
		report_count("pageaccess", "minflt", param, (double)(child1 - child0) / a.iters);
		report_count("pageaccess", "minflt_stat", param, (double)read_child_stat(path));
		report_count("pageaccess", "minflt_parent", param, (double)(self1 - self0) / a.iters);
	}
	return 0;
}
