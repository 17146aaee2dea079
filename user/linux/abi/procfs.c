/*
 * The /proc files Linux programs read: /proc/self and /proc/self/exe,
 * /proc/<pid>/cmdline, /proc/<pid>/stat (the fields ps uses, and the state
 * of a running, sleeping, stopped and zombie process), /proc/self/fd,
 * /proc/meminfo, /proc/cpuinfo, /proc/uptime and the /proc listing.
 */
#include "abi.h"

#include <dirent.h>
#include <sched.h>

static char buf[16384];

static ssize_t slurp(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t total = 0, n;
	while ((n = read(fd, buf + total, sizeof buf - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = 0;
	return total;
}

struct stat_fields {
	int pid, ppid, pgrp, session, threads;
	char comm[64], state;
};

static int read_stat(pid_t pid, struct stat_fields *f)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (slurp(path) <= 0)
		return -1;
	char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren)
		return -1;
	f->pid = atoi(buf);
	snprintf(f->comm, sizeof f->comm, "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
	/* After "(comm) ": state ppid pgrp session tty_nr tpgid flags minflt cminflt
	 * majflt cmajflt utime stime cutime cstime priority nice num_threads */
	long v[18];
	f->state = close_paren[2];
	char *p = close_paren + 4;
	for (int i = 0; i < 17; i++)
		v[i] = strtol(p, &p, 10);
	f->ppid = v[0];
	f->pgrp = v[1];
	f->session = v[2];
	f->threads = v[16];
	return 0;
}

static char state_of(pid_t pid)
{
	struct stat_fields f;
	return read_stat(pid, &f) == 0 ? f.state : '?';
}

static char wait_for_state(pid_t pid, char want)
{
	char s = '?';
	for (int i = 0; i < 5000 && (s = state_of(pid)) != want; i++)
		usleep(1000);
	return s;
}

/* A child running `path` as `name` with `flag`, blocked reading its
 * stdin, the read end of `p` (made here); closing p[1] ends it. */
static pid_t start_reader(const char *path, char *name, char *flag, int p[2])
{
	SETUP(pipe(p));
	pid_t c = fork();
	if (c == 0) {
		close(p[1]);
		dup2(p[0], 0);
		char *cargv[] = { name, flag, NULL };
		execve(path, cargv, cargv + 2);
		_exit(127);
	}
	close(p[0]);
	return c;
}

static int report_cmdline(void)
{
	ssize_t n = slurp("/proc/self/cmdline");
	EXPECT_EQ("length of /proc/self/cmdline", n, 20);
	EXPECT_TRUE("its bytes are argv, each with its NUL", n == 20 && memcmp(buf, "cmdline\0a b\0\0last\0x\0", 20) == 0);
	return abi_done();
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[0], "cmdline") == 0)
		return report_cmdline();
	if (argc > 1) {
		/* "sleeper" and "long": block until the test closes our stdin. */
		char c;
		read(0, &c, 1);
		return 0;
	}
	abi_init();
	pid_t me = getpid();
	char path[256], link[4096];

	section("/proc/self");
	ssize_t n = readlink("/proc/self", link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	EXPECT_TRUE("readlink /proc/self is our pid", n > 0 && atoi(link) == me);
	n = readlink("/proc/self/exe", link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	EXPECT_TRUE("/proc/self/exe names the program started (argv[0])", n > 0 && strcmp(link, argv[0]) == 0);
	int fd = open("/proc/self/exe", O_RDONLY);
	char magic[4] = { 0 };
	read(fd, magic, 4);
	close(fd);
	EXPECT_TRUE("and opens as that file (ELF)", memcmp(magic, "\177ELF", 4) == 0);
	snprintf(path, sizeof path, "/proc/%d/exe", me);
	n = readlink(path, buf, sizeof buf - 1);
	EXPECT_TRUE("/proc/<pid>/exe is the same", n > 0 && memcmp(buf, link, n) == 0);

	section("/proc/<pid>/cmdline");
	char *args[] = { "cmdline", "a b", "", "last", "x", NULL };
	EXPECT_STATUS("a child reading its own", run_relayed(self_exe(), args, args + 5), "exited 0");
	int p[2];
	pid_t c = start_reader(self_exe(), "sleeper", "--flag", p);
	wait_for_state(c, 'S');
	snprintf(path, sizeof path, "/proc/%d/cmdline", c);
	n = slurp(path);
	EXPECT_TRUE("another process's", n == 15 && memcmp(buf, "sleeper\0--flag\0", 15) == 0);

	section("/proc/<pid>/stat");
	struct stat_fields f;
	EXPECT_OK("read our own", read_stat(me, &f));
	EXPECT_TRUE("pid", f.pid == me);
	EXPECT_STR("comm: the program's file name", f.comm, "procfs");
	EXPECT_EQ("state of the reader (running)", f.state, 'R');
	EXPECT_TRUE("ppid", f.ppid == getppid());
	EXPECT_TRUE("pgrp and session (a session leader)", f.pgrp == me && f.session == me);
	EXPECT_EQ("num_threads", f.threads, 1);
	EXPECT_OK("a child's", read_stat(c, &f));
	EXPECT_STR("its comm after execve", f.comm, "procfs");
	EXPECT_TRUE("its ppid is us", f.ppid == me);
	EXPECT_EQ("blocked in read: sleeping", f.state, 'S');
	kill(c, SIGSTOP);
	EXPECT_EQ("stopped", wait_for_state(c, 'T'), 'T');
	kill(c, SIGKILL);
	EXPECT_EQ("killed, not yet waited for: zombie", wait_for_state(c, 'Z'), 'Z');
	wait_status(c);
	snprintf(path, sizeof path, "/proc/%d/stat", c);
	EXPECT_ERR("after the wait it is gone", open(path, O_RDONLY), ENOENT);
	close(p[1]);
	/* comm is the file name cut to 15 characters. */
	SETUP(symlink(self_exe(), "a-very-long-program-name"));
	c = start_reader("./a-very-long-program-name", "long", "--wait", p);
	wait_for_state(c, 'S');
	read_stat(c, &f);
	EXPECT_STR("comm of a-very-long-program-name", f.comm, "a-very-long-pro");
	close(p[1]);
	wait_status(c);
	/* A process in execve is not asleep, however long the exec takes:
	 * the first time it is seen sleeping, it sleeps in the new program.
	 * Polled without pause, so that the exec's window is looked into. */
	int new_comm = 0;
	for (int round = 0; round < 20; round++) {
		c = start_reader("./a-very-long-program-name", "long", "--wait", p);
		for (int i = 0; i < 200000 && state_of(c) != 'S'; i++)
			sched_yield();
		read_stat(c, &f);
		new_comm += strcmp(f.comm, "a-very-long-pro") == 0;
		close(p[1]);
		wait_status(c);
	}
	EXPECT_EQ("20 execs: sleeping only in the new program", new_comm, 20);

	section("/proc/self/fd");
	fd = open("/dev/null", O_RDONLY);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	EXPECT_STR("a descriptor of /dev/null", link, "/dev/null");
	close(fd);
	SETUP(pipe(p));
	snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
	n = readlink(path, link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	EXPECT_TRUE("a pipe: pipe:[<inode>]", strncmp(link, "pipe:[", 6) == 0 && link[n - 1] == ']');
	close(p[0]);
	close(p[1]);
	EXPECT_ERR("a closed descriptor", readlink("/proc/self/fd/99", link, sizeof link), ENOENT);

	section("/proc/meminfo, /proc/cpuinfo, /proc/uptime");
	EXPECT_TRUE("/proc/meminfo reads", slurp("/proc/meminfo") > 0);
	EXPECT_TRUE("it starts with MemTotal, MemFree, MemAvailable",
		    strncmp(buf, "MemTotal:", 9) == 0 && strstr(buf, "\nMemFree:") && strstr(buf, "\nMemAvailable:"));
	long total = strtol(buf + 9, NULL, 10), free = strtol(strstr(buf, "\nMemFree:") + 9, NULL, 10);
	EXPECT_TRUE("values in kB, free below total", strstr(buf, " kB\n") && free > 0 && free < total);
	EXPECT_TRUE("/proc/cpuinfo reads", slurp("/proc/cpuinfo") > 0);
	int procs = 0;
	for (char *q = buf; (q = strstr(q, "processor\t:")); q++)
		procs++;
	cpu_set_t set;
	sched_getaffinity(0, sizeof set, &set);
	EXPECT_TRUE("one \"processor\" entry per CPU", procs == CPU_COUNT(&set));
	EXPECT_TRUE("with vendor_id, model name and flags",
		    strstr(buf, "vendor_id\t:") && strstr(buf, "model name\t:") && strstr(buf, "flags\t\t:"));
	EXPECT_TRUE("/proc/uptime: two numbers", slurp("/proc/uptime") > 0 && strchr(buf, ' ') && strchr(buf, '.'));

	section("the /proc listing");
	DIR *d = opendir("/proc");
	int found_self = 0, found_me = 0, found_init = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		found_self |= strcmp(e->d_name, "self") == 0;
		found_me |= atoi(e->d_name) == me;
		found_init |= strcmp(e->d_name, "1") == 0;
	}
	closedir(d);
	EXPECT_TRUE("lists self, our pid and 1", found_self && found_me && found_init);
	EXPECT_ERR("/proc/<no such pid>", open("/proc/2147483647/stat", O_RDONLY), ENOENT);
	return abi_done();
}
