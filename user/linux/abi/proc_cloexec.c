/*
 * Close-on-exec: every way a descriptor gets the flag (pipe2, dup3,
 * F_DUPFD_CLOEXEC, F_SETFD, open, socket, socketpair, eventfd, timerfd,
 * epoll_create1) and the same descriptors without it. A child makes them,
 * then executes this program again through a link of another name; the new
 * program's very first calls are reads, writes and preads on those numbers
 * (before anything else can close them), then fcntl(F_GETFD): a
 * close-on-exec descriptor must be gone (EBADF) from the new program's first
 * instruction on, the others open with their data. The command name must
 * already be the new one. Then many more execs check the pipes and files
 * alone, the calls a kernel may serve without asking anyone.
 */
#include "abi.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

/* What the new program does first with a descriptor. */
enum use {
	READ,	/* read 1 byte: the object holds some */
	WRITE,	/* write 1 byte: there is room */
	PREAD,	/* pread 1 byte at offset 1 of the file "data" */
	EVENT,	/* read an eventfd's 8-byte count */
	NONE,	/* fcntl only (a read would wait) */
};

struct item {
	const char *name;
	int cloexec;
	enum use use;
};

/* The order the child makes them in and passes their numbers in. */
static const struct item ITEMS[] = {
	{ "pipe2(O_CLOEXEC) read end", 1, READ },
	{ "pipe2(O_CLOEXEC) write end", 1, WRITE },
	{ "pipe read end", 0, READ },
	{ "pipe write end", 0, WRITE },
	{ "dup3(O_CLOEXEC) of a read end", 1, READ },
	{ "dup3(0) of a read end", 0, READ },
	{ "dup2 of a read end", 0, READ },
	{ "F_DUPFD_CLOEXEC of a write end", 1, WRITE },
	{ "F_DUPFD of a write end", 0, WRITE },
	{ "write end given FD_CLOEXEC by F_SETFD", 1, WRITE },
	{ "pipe2(O_CLOEXEC) end cleared by F_SETFD", 0, READ },
	{ "open(O_CLOEXEC) file", 1, PREAD },
	{ "open file", 0, PREAD },
	{ "file given FD_CLOEXEC by F_SETFD", 1, PREAD },
	{ "socket(SOCK_CLOEXEC)", 1, NONE },
	{ "socket", 0, NONE },
	{ "socketpair(SOCK_CLOEXEC) end", 1, READ },
	{ "socketpair end", 0, READ },
	{ "eventfd(EFD_CLOEXEC)", 1, EVENT },
	{ "eventfd", 0, EVENT },
	{ "timerfd_create(TFD_CLOEXEC)", 1, NONE },
	{ "timerfd_create", 0, NONE },
	{ "epoll_create1(EPOLL_CLOEXEC)", 1, NONE },
	{ "epoll_create1(0)", 0, NONE },
};
#define N_ITEMS ((int)(sizeof ITEMS / sizeof ITEMS[0]))

/* Pipes and files only: the descriptors of the repeated execs. */
static int pipes_and_files(const struct item *it)
{
	return it->use == READ || it->use == WRITE || it->use == PREAD;
}

/* The link the child executes: the new program's command name. */
#define NEW_NAME "execed-image"

/* ------------------------------------------------------------ the new program */

struct outcome {
	long r;
	int e;
};

static struct outcome use_fd(int fd, enum use use)
{
	char b[8] = { 0 };
	long r;
	errno = 0;
	switch (use) {
	case READ:
		r = read(fd, b, 1);
		break;
	case WRITE:
		r = write(fd, "w", 1);
		break;
	case PREAD:
		r = pread(fd, b, 1, 1);
		if (r == 1 && b[0] != 'b')
			r = -2;
		break;
	case EVENT:
		r = read(fd, b, 8);
		break;
	default:
		r = fcntl(fd, F_GETFD);
		break;
	}
	return (struct outcome){ r, errno };
}

static long replay(struct outcome o)
{
	errno = o.e;
	return o.r;
}

static int parse_fds(const char *list, int *fds, int n)
{
	int i = 0;
	for (const char *p = list; *p && i < n; i++) {
		fds[i] = atoi(p);
		p = strchr(p, ',');
		if (!p)
			return i + 1;
		p++;
	}
	return i;
}

/* argv[2]: the numbers; argv[3]: "all" or "race". */
static int new_program(char **argv)
{
	int fds[N_ITEMS];
	int n = parse_fds(argv[2], fds, N_ITEMS);
	int all = strcmp(argv[3], "all") == 0;
	struct outcome first[N_ITEMS];
	/* Before anything else: the calls on pipes and files first of all. */
	for (int i = 0; i < n; i++)
		if (pipes_and_files(&ITEMS[i]))
			first[i] = use_fd(fds[i], ITEMS[i].use);
	if (!all) {
		/* Exit status: how many went wrong (the parent counts them). */
		int wrong = 0;
		for (int i = 0; i < n; i++) {
			if (!pipes_and_files(&ITEMS[i]))
				continue;
			int gone = first[i].r == -1 && first[i].e == EBADF;
			wrong += ITEMS[i].cloexec ? !gone : first[i].r != 1;
		}
		return wrong;
	}
	for (int i = 0; i < n; i++)
		if (!pipes_and_files(&ITEMS[i]))
			first[i] = use_fd(fds[i], ITEMS[i].use);
	char comm[64] = "", stat[512] = "";
	int comm_ok = read_text("/proc/self/comm", comm, sizeof comm);
	comm[strcspn(comm, "\n")] = 0;
	int stat_ok = read_text("/proc/self/stat", stat, sizeof stat);

	section("the new program's first calls");
	for (int i = 0; i < n; i++) {
		char name[128];
		const struct item *it = &ITEMS[i];
		const char *what = it->use == WRITE ? "write" : it->use == PREAD ? "pread" :
				   it->use == NONE ? "fcntl" : "read";
		snprintf(name, sizeof name, "%s: %s", it->name, what);
		if (it->cloexec)
			EXPECT_ERR(name, replay(first[i]), EBADF);
		else if (it->use == NONE)
			EXPECT_EQ(name, first[i].r, 0);
		else
			EXPECT_EQ(name, first[i].r, it->use == EVENT ? 8 : 1);
	}
	section("fcntl(F_GETFD) after");
	for (int i = 0; i < n; i++) {
		if (ITEMS[i].cloexec)
			EXPECT_ERR(ITEMS[i].name, fcntl(fds[i], F_GETFD), EBADF);
		else
			EXPECT_EQ(ITEMS[i].name, fcntl(fds[i], F_GETFD), 0);
	}
	section("the command name");
	EXPECT_STR("/proc/self/comm", comm_ok == 0 ? comm : "(unreadable)", NEW_NAME);
	EXPECT_TRUE("/proc/self/stat names it", stat_ok == 0 && strstr(stat, "(" NEW_NAME ")") != NULL);
	return abi_done();
}

/* ------------------------------------------------------------ the child */

static int must(int fd)
{
	if (fd < 0) {
		say("SETUP FAILED: %s", errname(errno));
		_exit(2);
	}
	return fd;
}

/* Makes every item and executes the new program with their numbers. */
static int make_and_exec(void *arg)
{
	const char *mode = arg;
	int fds[N_ITEMS];
	int a[2], b[2], c[2], s[2], u[2];
	SETUP(pipe2(a, O_CLOEXEC));
	SETUP(pipe(b));
	SETUP(pipe2(c, O_CLOEXEC));
	SETUP(write(a[1], "a", 1));
	SETUP(write(b[1], "bbbb", 4));
	SETUP(write(c[1], "c", 1));
	fds[0] = a[0];
	fds[1] = a[1];
	fds[2] = b[0];
	fds[3] = b[1];
	/* musl turns dup3 without O_CLOEXEC into dup2: the call itself. */
	fds[4] = must(fcntl(b[0], F_DUPFD, 40));
	SETUP(syscall(SYS_dup3, b[0], fds[4], O_CLOEXEC));
	fds[5] = must(fcntl(b[0], F_DUPFD_CLOEXEC, 40));
	SETUP(syscall(SYS_dup3, b[0], fds[5], 0));
	fds[6] = must(fcntl(b[0], F_DUPFD_CLOEXEC, 40));
	SETUP(dup2(b[0], fds[6]));
	fds[7] = must(fcntl(b[1], F_DUPFD_CLOEXEC, 0));
	fds[8] = must(fcntl(b[1], F_DUPFD, 0));
	fds[9] = must(dup(b[1]));
	SETUP(fcntl(fds[9], F_SETFD, FD_CLOEXEC));
	fds[10] = c[0];
	SETUP(fcntl(c[0], F_SETFD, 0));
	fds[11] = must(open("data", O_RDONLY | O_CLOEXEC));
	fds[12] = must(open("data", O_RDONLY));
	fds[13] = must(open("data", O_RDONLY));
	SETUP(fcntl(fds[13], F_SETFD, FD_CLOEXEC));
	fds[14] = must(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	fds[15] = must(socket(AF_INET, SOCK_STREAM, 0));
	SETUP(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s));
	SETUP(write(s[1], "s", 1));
	fds[16] = s[0];
	SETUP(socketpair(AF_UNIX, SOCK_STREAM, 0, u));
	SETUP(write(u[1], "u", 1));
	fds[17] = u[0];
	fds[18] = must(eventfd(1, EFD_CLOEXEC));
	fds[19] = must(eventfd(1, 0));
	fds[20] = must(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
	fds[21] = must(timerfd_create(CLOCK_MONOTONIC, 0));
	fds[22] = must(epoll_create1(EPOLL_CLOEXEC));
	fds[23] = must(epoll_create1(0));
	char list[512];
	size_t at = 0;
	for (int i = 0; i < N_ITEMS; i++)
		at += snprintf(list + at, sizeof list - at, "%s%d", i ? "," : "", fds[i]);
	char *argv[] = { NEW_NAME, "new", list, (char *)mode, NULL };
	char *envp[] = { NULL };
	execve("./" NEW_NAME, argv, envp);
	say("execve: %s", errname(errno));
	return 127;
}

static int race_child(void *arg)
{
	(void)arg;
	/* The child's own output would mix with the parent's: none. */
	int null = open("/dev/null", O_WRONLY);
	if (null >= 0)
		dup2(null, 1);
	return make_and_exec("race");
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "new") == 0)
		return new_program(argv);
	abi_init();
	int fd = open("data", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	SETUP(write(fd, "abcdef", 6));
	close(fd);
	SETUP(symlink(self_exe(), NEW_NAME));

	section("close-on-exec descriptors, as the new program sees them");
	EXPECT_STATUS("the new program", relay_child(make_and_exec, "all"), "exited 0");

	section("repeated execs, pipes and files");
	int rounds = 40, clean = 0;
	for (int i = 0; i < rounds; i++) {
		int st = in_child(race_child, NULL);
		clean += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	EXPECT_EQ("execs where every close-on-exec pipe and file was gone at once", clean, rounds);
	return abi_done();
}
