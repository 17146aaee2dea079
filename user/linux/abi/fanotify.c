/*
 * fanotify notification groups: fanotify_init's flags and their errors,
 * fanotify_mark's (ADD, REMOVE, FLUSH; inode, mount and filesystem marks;
 * ONLYDIR, DONT_FOLLOW, ignored masks and IGNORED_SURV_MODIFY;
 * FAN_EVENT_ON_CHILD, FAN_ONDIR), the records a read gives (the mask, a
 * descriptor of the file opened with event_f_flags, the pid of the process
 * that did it), merging of an object's events, poll/epoll and FIONREAD;
 * and hostile use: bad descriptors, flags, masks, paths and buffers, a
 * short buffer, a reader killed while it waits, a wait a signal ends, a
 * flood for a group that never reads.
 *
 * Events print as their mask's names; descriptors and pids print as
 * relations ("same file", "the child").
 */
#include "abi.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>

#define BAD ((void *)16)

static char text[4096];

static void mask_text(char *out, size_t room, uint64_t m)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{FAN_ACCESS, "ACCESS"},
		{FAN_MODIFY, "MODIFY"},
		{FAN_CLOSE_WRITE, "CLOSE_WRITE"},
		{FAN_CLOSE_NOWRITE, "CLOSE_NOWRITE"},
		{FAN_OPEN, "OPEN"},
		{FAN_OPEN_EXEC, "OPEN_EXEC"},
		{FAN_Q_OVERFLOW, "Q_OVERFLOW"},
		{FAN_ONDIR, "ONDIR"},
	};
	out[0] = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (m & names[i].bit) {
			if (out[0])
				strncat(out, "|", room - strlen(out) - 1);
			strncat(out, names[i].name, room - strlen(out) - 1);
		}
}

/*
 * Every record readable now, as text: "MASK file" where file is the name
 * of `names` whose inode the descriptor has (or "nofd"), "by-me" or
 * "by-other" for the pid; each descriptor's access mode is checked to be
 * `acc` and it is closed.
 */
static const char *drain(int fd, const char **names, int acc)
{
	char buf[4096] __attribute__((aligned(8)));
	text[0] = 0;
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 0) != 1)
			break;
		ssize_t n = read(fd, buf, sizeof buf);
		if (n <= 0)
			break;
		for (char *at = buf; at < buf + n;) {
			struct fanotify_event_metadata *m = (void *)at;
			char mt[128], one[256];
			mask_text(mt, sizeof mt, m->mask);
			const char *file = "nofd";
			if (m->fd >= 0) {
				struct stat a, b;
				file = "?";
				fstat(m->fd, &a);
				for (int i = 0; names && names[i]; i++)
					if (stat(names[i], &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
						file = names[i];
				if ((fcntl(m->fd, F_GETFL) & O_ACCMODE) != acc)
					file = "bad-access-mode";
				close(m->fd);
			}
			snprintf(one, sizeof one, "%s%s %s %s", text[0] ? ", " : "", mt, file,
				 m->fd < 0 ? "-" : m->pid == getpid() ? "by-me" : "by-other");
			strncat(text, one, sizeof text - strlen(text) - 1);
			if (m->event_len < sizeof *m || m->vers != FANOTIFY_METADATA_VERSION)
				strncat(text, " BAD-RECORD", sizeof text - strlen(text) - 1);
			at += m->event_len ? m->event_len : sizeof *m;
		}
	}
	return text[0] ? text : "(none)";
}

static void touch(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
}

static void groups(void)
{
	section("fanotify_init");
	EXPECT_ERR("unknown flag", fanotify_init(0x80000000u, O_RDONLY), EINVAL);
	EXPECT_ERR("two classes", fanotify_init(FAN_CLASS_CONTENT | FAN_CLASS_PRE_CONTENT, O_RDONLY), EINVAL);
	EXPECT_ERR("access mode 3", fanotify_init(FAN_CLASS_NOTIF, 3), EINVAL);
	EXPECT_ERR("O_CREAT in event_f_flags", fanotify_init(FAN_CLASS_NOTIF, O_RDONLY | O_CREAT), EINVAL);
	int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY);
	EXPECT_TRUE("made", fd >= 0);
	EXPECT_EQ("FAN_CLOEXEC", fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	EXPECT_EQ("FAN_NONBLOCK", !!(fcntl(fd, F_GETFL) & O_NONBLOCK), 1);
	char buf[64] __attribute__((aligned(8)));
	EXPECT_ERR("read of nothing, nonblocking", read(fd, buf, sizeof buf), EAGAIN);
	char link[64], target[64] = "";
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	EXPECT_TRUE("/proc/self/fd names it", readlink(link, target, sizeof target - 1) > 0);
	EXPECT_STR("its name", target, "anon_inode:[fanotify]");
	close(fd);
	fd = fanotify_init(FAN_CLASS_NOTIF | FAN_UNLIMITED_QUEUE | FAN_UNLIMITED_MARKS, O_RDWR);
	EXPECT_TRUE("unlimited queue and marks", fd >= 0);
	EXPECT_EQ("blocking", !!(fcntl(fd, F_GETFL) & O_NONBLOCK), 0);
	close(fd);
	pid_t c = fork();
	if (c == 0) {
		if (setuid(65534) != 0)
			_exit(3);
		int r = fanotify_init(FAN_CLASS_NOTIF, O_RDONLY);
		_exit(r == -1 && errno == EPERM ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	EXPECT_STATUS("without privilege: EPERM", st, "exited 0");
}

static void marks(void)
{
	section("fanotify_mark");
	int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY);
	SETUP(fd);
	SETUP(close(open("f", O_CREAT | O_WRONLY, 0644)));
	SETUP(mkdir("d", 0755));
	SETUP(symlink("f", "l"));
	int p[2];
	SETUP(pipe(p));
	EXPECT_ERR("bad descriptor", fanotify_mark(999, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, "f"), EBADF);
	EXPECT_ERR("not a group", fanotify_mark(p[0], FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, "f"), EINVAL);
	EXPECT_ERR("empty mask", fanotify_mark(fd, FAN_MARK_ADD, 0, AT_FDCWD, "f"), EINVAL);
	EXPECT_ERR("ADD and REMOVE", fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_REMOVE, FAN_OPEN, AT_FDCWD, "f"),
		   EINVAL);
	EXPECT_ERR("MOUNT and FILESYSTEM",
		   fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT | FAN_MARK_FILESYSTEM, FAN_OPEN, AT_FDCWD, "f"),
		   EINVAL);
	EXPECT_ERR("unknown flag", fanotify_mark(fd, FAN_MARK_ADD | 0x40000000, FAN_OPEN, AT_FDCWD, "f"), EINVAL);
	EXPECT_ERR("unknown event", fanotify_mark(fd, FAN_MARK_ADD, 1ull << 40, AT_FDCWD, "f"), EINVAL);
	EXPECT_ERR("FAN_CREATE without file handles", fanotify_mark(fd, FAN_MARK_ADD, FAN_CREATE, AT_FDCWD, "d"),
		   EINVAL);
	EXPECT_ERR("FAN_OPEN_PERM in a notification group",
		   fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, "f"), EINVAL);
	EXPECT_ERR("FLUSH with ONLYDIR", fanotify_mark(fd, FAN_MARK_FLUSH | FAN_MARK_ONLYDIR, 0, AT_FDCWD, NULL),
		   EINVAL);
	EXPECT_ERR("ONLYDIR of a file", fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_ONLYDIR, FAN_OPEN, AT_FDCWD, "f"),
		   ENOTDIR);
	EXPECT_ERR("missing file", fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, "nothing"), ENOENT);
	EXPECT_ERR("bad path pointer", fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, BAD), EFAULT);
	EXPECT_ERR("REMOVE of no mark", fanotify_mark(fd, FAN_MARK_REMOVE, FAN_OPEN, AT_FDCWD, "f"), ENOENT);
	EXPECT_OK("ONLYDIR of a directory",
		  fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_ONLYDIR, FAN_OPEN | FAN_ONDIR, AT_FDCWD, "d"));
	EXPECT_OK("DONT_FOLLOW of a link", fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_DONT_FOLLOW, FAN_OPEN, AT_FDCWD, "l"));
	EXPECT_ERR("REMOVE, following the link", fanotify_mark(fd, FAN_MARK_REMOVE, FAN_OPEN, AT_FDCWD, "l"),
		   ENOENT);
	EXPECT_OK("REMOVE", fanotify_mark(fd, FAN_MARK_REMOVE | FAN_MARK_DONT_FOLLOW, FAN_OPEN, AT_FDCWD, "l"));
	EXPECT_ERR("REMOVE again",
		   fanotify_mark(fd, FAN_MARK_REMOVE | FAN_MARK_DONT_FOLLOW, FAN_OPEN, AT_FDCWD, "l"), ENOENT);
	const char *names[] = {"f", "d", NULL};
	touch("f");
	EXPECT_STR("a link's mark is not its target's", drain(fd, names, O_RDONLY), "(none)");
	int dfd = open("d", O_RDONLY | O_DIRECTORY);
	close(dfd);
	EXPECT_STR("a directory's open with FAN_ONDIR (not reported)", drain(fd, names, O_RDONLY), "OPEN d by-me");
	EXPECT_OK("FLUSH", fanotify_mark(fd, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL));
	dfd = open("d", O_RDONLY | O_DIRECTORY);
	close(dfd);
	EXPECT_STR("nothing after FLUSH", drain(fd, names, O_RDONLY), "(none)");
	close(p[0]);
	close(p[1]);
	close(fd);
}

static void events(void)
{
	section("events");
	const char *names[] = {"f", "g", "d/c", NULL};
	SETUP(close(open("g", O_CREAT | O_WRONLY, 0644)));
	SETUP(close(open("d/c", O_CREAT | O_WRONLY, 0644)));
	int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY);
	SETUP(fd);
	SETUP(fanotify_mark(fd, FAN_MARK_ADD,
			    FAN_OPEN | FAN_ACCESS | FAN_MODIFY | FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE, AT_FDCWD,
			    "f"));
	char b[8];
	int f = open("f", O_RDWR);
	SETUP(write(f, "abc", 3));
	SETUP(lseek(f, 0, SEEK_SET));
	SETUP(read(f, b, 3) == 3 ? 0 : -1);
	EXPECT_EQ("FIONREAD: one merged event", ({
			  int n = -1;
			  ioctl(fd, FIONREAD, &n);
			  n;
		  }),
		  24);
	close(f);
	EXPECT_STR("open, write, read, close: one event", drain(fd, names, O_RDONLY),
		   "ACCESS|MODIFY|CLOSE_WRITE|OPEN f by-me");
	pid_t c = fork();
	if (c == 0) {
		int f = open("f", O_RDONLY);
		(void)!read(f, b, 1);
		close(f);
		_exit(0);
	}
	waitpid(c, NULL, 0);
	EXPECT_STR("another process's", drain(fd, names, O_RDONLY), "ACCESS|CLOSE_NOWRITE|OPEN f by-other");
	touch("g");
	EXPECT_STR("an unmarked file", drain(fd, names, O_RDONLY), "(none)");

	section("events of a directory's children");
	SETUP(fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, "d"));
	touch("d/c");
	EXPECT_STR("without FAN_EVENT_ON_CHILD", drain(fd, names, O_RDONLY), "(none)");
	SETUP(fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN | FAN_EVENT_ON_CHILD, AT_FDCWD, "d"));
	touch("d/c");
	EXPECT_STR("with FAN_EVENT_ON_CHILD", drain(fd, names, O_RDONLY), "OPEN d/c by-me");
	close(fd);

	section("mount marks and ignored masks");
	fd = fanotify_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDWR);
	SETUP(fd);
	SETUP(fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN, AT_FDCWD, "."));
	touch("g");
	EXPECT_STR("a mount mark; the descriptor is O_RDWR", drain(fd, names, O_RDWR), "OPEN g by-me");
	SETUP(fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_IGNORED_MASK, FAN_OPEN, AT_FDCWD, "g"));
	touch("g");
	touch("f");
	EXPECT_STR("g ignored", drain(fd, names, O_RDWR), "OPEN f by-me");
	int w = open("g", O_WRONLY);
	SETUP(write(w, "x", 1));
	close(w);
	(void)drain(fd, names, O_RDWR);
	touch("g");
	EXPECT_STR("a write ends the ignored mask", drain(fd, names, O_RDWR), "OPEN g by-me");
	SETUP(fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_IGNORED_MASK | FAN_MARK_IGNORED_SURV_MODIFY, FAN_OPEN,
			    AT_FDCWD, "g"));
	w = open("g", O_WRONLY);
	SETUP(write(w, "x", 1));
	close(w);
	touch("g");
	EXPECT_STR("unless it survives modification", drain(fd, names, O_RDWR), "(none)");
	SETUP(fanotify_mark(fd, FAN_MARK_REMOVE | FAN_MARK_MOUNT, FAN_OPEN, AT_FDCWD, "."));
	SETUP(fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_CLOSE_NOWRITE, AT_FDCWD, "."));
	touch("d/c");
	EXPECT_STR("a filesystem mark", drain(fd, names, O_RDWR), "CLOSE_NOWRITE d/c by-me");
	close(fd);
}

/* FAN_OPEN_EXEC of this program's own file, run again by a child. */
static void execs(void)
{
	section("exec");
	static char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	SETUP(n);
	self[n] = 0;
	const char *progs[] = {self, NULL};
	int x = fanotify_init(FAN_CLASS_NOTIF | FAN_NONBLOCK, O_RDONLY);
	SETUP(fanotify_mark(x, FAN_MARK_ADD, FAN_OPEN_EXEC, AT_FDCWD, self));
	touch(self);
	EXPECT_STR("an open is not an exec", drain(x, progs, O_RDONLY), "(none)");
	pid_t c = fork();
	if (c == 0) {
		execl(self, "fanotify", "exit", (char *)NULL);
		_exit(3);
	}
	int st;
	waitpid(c, &st, 0);
	EXPECT_STATUS("the program ran", st, "exited 0");
	char want[4200];
	snprintf(want, sizeof want, "OPEN_EXEC %s by-other", self);
	const char *got = drain(x, progs, O_RDONLY);
	EXPECT_TRUE("an exec: OPEN_EXEC of the program, by the child", strcmp(got, want) == 0);
	if (strcmp(got, want) != 0)
		say("  (got %s)", got);
	close(x);
}

static void on_alarm(int s)
{
	(void)s;
}

static void hostile(void)
{
	section("reading");
	const char *names[] = {"f", NULL};
	int fd = fanotify_init(FAN_CLASS_NOTIF, O_RDONLY);
	SETUP(fd);
	SETUP(fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, "f"));
	struct pollfd p = {fd, POLLIN, 0};
	EXPECT_EQ("poll, nothing queued", poll(&p, 1, 0), 0);
	int ep = epoll_create1(0);
	struct epoll_event ee = {.events = EPOLLIN}, got;
	SETUP(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee));
	touch("f");
	EXPECT_EQ("poll, one queued", poll(&p, 1, 0), 1);
	EXPECT_EQ("epoll, one queued", epoll_wait(ep, &got, 1, 0), 1);
	char small[10];
	EXPECT_ERR("a buffer too short", read(fd, small, sizeof small), EINVAL);
	EXPECT_ERR("a bad buffer", read(fd, BAD, 100), EFAULT);
	EXPECT_STR("nothing left after a bad buffer", drain(fd, names, O_RDONLY), "(none)");
	close(ep);

	pid_t c = fork();
	if (c == 0) {
		usleep(200000);
		touch("f");
		_exit(0);
	}
	char buf[256] __attribute__((aligned(8)));
	ssize_t n = read(fd, buf, sizeof buf);
	EXPECT_EQ("a blocking read woken by another process", n, 24);
	if (n == 24)
		close(((struct fanotify_event_metadata *)buf)->fd);
	waitpid(c, NULL, 0);

	struct sigaction sa = {.sa_handler = on_alarm};
	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
	EXPECT_ERR("a waiting read ended by a signal", read(fd, buf, sizeof buf), EINTR);
	alarm(0);

	section("hostile");
	c = fork();
	if (c == 0) {
		int g = fanotify_init(FAN_CLASS_NOTIF, O_RDONLY);
		fanotify_mark(g, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN, AT_FDCWD, ".");
		(void)!read(g, buf, sizeof buf);
		(void)!read(g, buf, sizeof buf);
		_exit(1);
	}
	usleep(100000);
	touch("f");
	kill(c, SIGKILL);
	int st;
	waitpid(c, &st, 0);
	EXPECT_STATUS("a reader killed while it waits", st, "killed by SIGKILL");
	int flood = fanotify_init(FAN_CLASS_NOTIF, O_RDONLY);
	SETUP(fanotify_mark(flood, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN | FAN_CLOSE_NOWRITE, AT_FDCWD, "."));
	char name[32];
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof name, "fl%d", i);
		int k = open(name, O_CREAT | O_RDONLY, 0644);
		if (k >= 0)
			close(k);
	}
	EXPECT_TRUE("a flood for a group that never reads: still queued", ({
			    int q = 0;
			    ioctl(flood, FIONREAD, &q);
			    q >= 300 * 24;
		    }));
	close(flood);
	touch("f");
	EXPECT_STR("the other group still hears", drain(fd, names, O_RDONLY), "OPEN f by-me");
	EXPECT_ERR("read of a closed group", read(flood, buf, sizeof buf), EBADF);
	close(fd);
}

int main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return 0;
	abi_init();
	groups();
	marks();
	events();
	execs();
	hostile();
	return abi_done();
}
