/*
 * inotify: instances and their flags, watches and their masks (IN_MASK_ADD,
 * IN_MASK_CREATE, IN_ONLYDIR, IN_DONT_FOLLOW, IN_ONESHOT, IN_EXCL_UNLINK),
 * the records a directory's and a file's watches read (names, cookies of a
 * move, IN_IGNORED), events made by another process, poll/epoll readiness
 * and FIONREAD, the limits of /proc/sys/fs/inotify (IN_Q_OVERFLOW, EMFILE,
 * ENOSPC), /proc/self/fdinfo; and hostile use: bad descriptors and watch
 * numbers, bad pointers, a short buffer, a watcher that dies, a watched
 * file removed, a flood of events for a reader that never reads.
 *
 * Events print as "dir:CREATE a" (the watch's name, the event, its name);
 * wd numbers, inodes and cookies' values are never printed.
 */
#include "abi.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>

#define BAD ((void *)16)

static char text[4096];
static int wds[4];
static const char *wdnames[4];
static int nwds;

static void name_wd(int wd, const char *name)
{
	wds[nwds] = wd;
	wdnames[nwds++] = name;
}

static const char *wd_name(int wd)
{
	for (int i = 0; i < nwds; i++)
		if (wds[i] == wd)
			return wdnames[i];
	return wd == -1 ? "none" : "?";
}

static void mask_text(char *out, size_t room, uint32_t m)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{IN_ACCESS, "ACCESS"},         {IN_MODIFY, "MODIFY"},
		{IN_ATTRIB, "ATTRIB"},         {IN_CLOSE_WRITE, "CLOSE_WRITE"},
		{IN_CLOSE_NOWRITE, "CLOSE_NOWRITE"}, {IN_OPEN, "OPEN"},
		{IN_MOVED_FROM, "MOVED_FROM"}, {IN_MOVED_TO, "MOVED_TO"},
		{IN_CREATE, "CREATE"},         {IN_DELETE, "DELETE"},
		{IN_DELETE_SELF, "DELETE_SELF"}, {IN_MOVE_SELF, "MOVE_SELF"},
		{IN_UNMOUNT, "UNMOUNT"},       {IN_Q_OVERFLOW, "Q_OVERFLOW"},
		{IN_IGNORED, "IGNORED"},       {IN_ISDIR, "ISDIR"},
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
 * Every record readable now (nonblocking), as text; moves' cookies are
 * checked to be equal and not zero, pairwise.
 */
static const char *drain(int fd)
{
	char buf[8192] __attribute__((aligned(8)));
	uint32_t cookie = 0;
	text[0] = 0;
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 0) != 1)
			break;
		ssize_t n = read(fd, buf, sizeof buf);
		if (n <= 0)
			break;
		for (char *at = buf; at < buf + n;) {
			struct inotify_event *e = (struct inotify_event *)at;
			char m[128], one[256];
			mask_text(m, sizeof m, e->mask);
			snprintf(one, sizeof one, "%s%s:%s%s%s", text[0] ? "; " : "", wd_name(e->wd), m,
				 e->len ? " " : "", e->len ? e->name : "");
			strncat(text, one, sizeof text - strlen(text) - 1);
			if (e->mask & IN_MOVED_FROM)
				cookie = e->cookie;
			if (e->mask & IN_MOVED_TO)
				strncat(text, e->cookie == cookie && cookie ? " (same cookie)" : " (other cookie)",
					sizeof text - strlen(text) - 1);
			at += sizeof *e + e->len;
		}
	}
	return text;
}

static int events_pending(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};
	poll(&p, 1, 0);
	return p.revents;
}

static long read_setting(const char *name)
{
	char path[128], b[32] = {0};
	snprintf(path, sizeof path, "/proc/sys/fs/inotify/%s", name);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	read(fd, b, sizeof b - 1);
	close(fd);
	return atol(b);
}

static int write_setting(const char *name, long v)
{
	char path[128], b[32];
	snprintf(path, sizeof path, "/proc/sys/fs/inotify/%s", name);
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	int n = snprintf(b, sizeof b, "%ld\n", v);
	int r = write(fd, b, n) == n ? 0 : -1;
	close(fd);
	return r;
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
}

static void instances(void)
{
	section("instances");
	EXPECT_ERR("inotify_init1 with unknown flags", inotify_init1(1), EINVAL);
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	EXPECT_TRUE("inotify_init1", fd >= 0);
	EXPECT_EQ("FD_CLOEXEC", fcntl(fd, F_GETFD), FD_CLOEXEC);
	EXPECT_TRUE("O_NONBLOCK", fcntl(fd, F_GETFL) & O_NONBLOCK);
	char b[64];
	EXPECT_ERR("a read with nothing queued", read(fd, b, sizeof b), EAGAIN);
	EXPECT_EQ("poll with nothing queued", events_pending(fd), 0);
	int n = -1;
	EXPECT_OK("FIONREAD", ioctl(fd, FIONREAD, &n));
	EXPECT_EQ("FIONREAD with nothing queued", n, 0);
	EXPECT_ERR("a write", write(fd, b, 8), EBADF);
	close(fd);
	fd = syscall(SYS_inotify_init);
	EXPECT_TRUE("inotify_init", fd >= 0);
	EXPECT_EQ("no FD_CLOEXEC", fcntl(fd, F_GETFD), 0);
	close(fd);
	char link[64] = {0};
	fd = inotify_init();
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	readlink(path, link, sizeof link - 1);
	EXPECT_STR("its /proc/self/fd link", link, "anon_inode:inotify");
	close(fd);
}

static void watches(void)
{
	section("watches");
	int fd = inotify_init1(IN_NONBLOCK);
	mkdir("w", 0755);
	touch("w/f");
	symlink("f", "w/l");
	int file = open("w/f", O_RDONLY);
	EXPECT_ERR("a closed descriptor", inotify_add_watch(999, "w", IN_ALL_EVENTS), EBADF);
	EXPECT_ERR("a file's descriptor", inotify_add_watch(file, "w", IN_ALL_EVENTS), EINVAL);
	EXPECT_ERR("mask 0", inotify_add_watch(fd, "w", 0), EINVAL);
	EXPECT_ERR("IN_MASK_ADD with IN_MASK_CREATE",
		   inotify_add_watch(fd, "w", IN_OPEN | IN_MASK_ADD | IN_MASK_CREATE), EINVAL);
	EXPECT_ERR("no such file", inotify_add_watch(fd, "w/none", IN_ALL_EVENTS), ENOENT);
	EXPECT_ERR("a bad path pointer", inotify_add_watch(fd, BAD, IN_ALL_EVENTS), EFAULT);
	EXPECT_ERR("IN_ONLYDIR on a file", inotify_add_watch(fd, "w/f", IN_OPEN | IN_ONLYDIR), ENOTDIR);
	int d = inotify_add_watch(fd, "w", IN_CREATE | IN_ONLYDIR);
	EXPECT_TRUE("IN_ONLYDIR on a directory", d >= 1);
	EXPECT_EQ("the same inode again: the same wd", inotify_add_watch(fd, "w/.", IN_DELETE), d);
	EXPECT_ERR("IN_MASK_CREATE on a watched inode", inotify_add_watch(fd, "w", IN_OPEN | IN_MASK_CREATE), EEXIST);
	int f = inotify_add_watch(fd, "w/l", IN_ATTRIB);
	EXPECT_TRUE("through a link: another wd", f >= 1 && f != d);
	EXPECT_EQ("the file itself: the link's wd", inotify_add_watch(fd, "w/f", IN_ATTRIB), f);
	int l = inotify_add_watch(fd, "w/l", IN_ATTRIB | IN_DONT_FOLLOW);
	EXPECT_TRUE("IN_DONT_FOLLOW: the link's own wd", l >= 1 && l != f && l != d);
	nwds = 0;
	name_wd(d, "dir");
	name_wd(f, "file");
	name_wd(l, "link");
	/* The directory's mask was replaced by IN_DELETE: no IN_CREATE. */
	touch("w/g");
	unlink("w/g");
	EXPECT_STR("a replaced mask", drain(fd), "dir:DELETE g");
	EXPECT_EQ("IN_MASK_ADD", inotify_add_watch(fd, "w", IN_CREATE | IN_MASK_ADD), d);
	touch("w/g");
	unlink("w/g");
	EXPECT_STR("an added mask", drain(fd), "dir:CREATE g; dir:DELETE g");
	chmod("w/f", 0600);
	EXPECT_STR("chmod of the file", drain(fd), "file:ATTRIB");

	EXPECT_ERR("rm of an unknown wd", inotify_rm_watch(fd, 12345), EINVAL);
	EXPECT_ERR("rm of wd -1", inotify_rm_watch(fd, -1), EINVAL);
	EXPECT_ERR("rm through a closed descriptor", inotify_rm_watch(999, d), EBADF);
	EXPECT_ERR("rm through a file's descriptor", inotify_rm_watch(file, d), EINVAL);
	EXPECT_OK("rm", inotify_rm_watch(fd, l));
	EXPECT_STR("IN_IGNORED", drain(fd), "link:IGNORED");
	EXPECT_ERR("rm again", inotify_rm_watch(fd, l), EINVAL);
	int other = inotify_init1(IN_NONBLOCK);
	EXPECT_ERR("rm of another instance's wd", inotify_rm_watch(other, d), EINVAL);
	close(other);

	/* The file's watch again: its mask replaced. */
	EXPECT_EQ("IN_ONESHOT on the file", inotify_add_watch(fd, "w/f", IN_MODIFY | IN_ONESHOT), f);
	int w = open("w/f", O_WRONLY);
	write(w, "a", 1);
	write(w, "b", 1);
	close(w);
	EXPECT_STR("IN_ONESHOT", drain(fd), "file:MODIFY; file:IGNORED");
	close(file);
	close(fd);
}

static void events(void)
{
	section("events");
	int fd = inotify_init1(IN_NONBLOCK);
	mkdir("e", 0755);
	int d = inotify_add_watch(fd, "e", IN_ALL_EVENTS);
	nwds = 0;
	name_wd(d, "dir");
	int w = open("e/a", O_RDWR | O_CREAT, 0644);
	EXPECT_EQ("poll: readable", events_pending(fd), POLLIN);
	int n = 0;
	ioctl(fd, FIONREAD, &n);
	EXPECT_EQ("FIONREAD: two records with a name", n, 2 * (16 + 16));
	int f = inotify_add_watch(fd, "e/a", IN_ALL_EVENTS);
	name_wd(f, "file");
	write(w, "hello", 5);
	write(w, "hello", 5);
	lseek(w, 0, SEEK_SET);
	char b[16];
	read(w, b, 5);
	close(w);
	EXPECT_STR("create, open, write, read, close",
		   drain(fd),
		   "dir:CREATE a; dir:OPEN a; dir:MODIFY a; file:MODIFY; dir:MODIFY a; file:MODIFY; "
		   "dir:ACCESS a; file:ACCESS; "
		   "dir:CLOSE_WRITE a; file:CLOSE_WRITE");
	int r = open("e/a", O_RDONLY);
	close(r);
	EXPECT_STR("open and close for reading", drain(fd),
		   "dir:OPEN a; file:OPEN; dir:CLOSE_NOWRITE a; file:CLOSE_NOWRITE");
	rename("e/a", "e/b");
	EXPECT_STR("a rename", drain(fd), "dir:MOVED_FROM a; dir:MOVED_TO b (same cookie); file:MOVE_SELF");
	mkdir("e/sub", 0755);
	rmdir("e/sub");
	EXPECT_STR("mkdir and rmdir", drain(fd), "dir:CREATE|ISDIR sub; dir:DELETE|ISDIR sub");
	truncate("e/b", 1);
	EXPECT_STR("truncate", drain(fd), "dir:MODIFY b; file:MODIFY");
	link("e/b", "e/c");
	EXPECT_STR("link", drain(fd), "file:ATTRIB; dir:CREATE c");
	unlink("e/c");
	EXPECT_STR("unlink of one of two names", drain(fd), "file:ATTRIB; dir:DELETE c");
	unlink("e/b");
	EXPECT_STR("unlink of the last name", drain(fd),
		   "file:ATTRIB; file:DELETE_SELF; file:IGNORED; dir:DELETE b");
	EXPECT_ERR("rm of the removed file's wd", inotify_rm_watch(fd, f), EINVAL);

	/* Another process's calls reach this watcher; a blocking read waits. */
	int blocking = inotify_init();
	int bd = inotify_add_watch(blocking, "e", IN_CREATE);
	pid_t c = fork();
	if (c == 0) {
		usleep(100000);
		touch("e/from-child");
		_exit(0);
	}
	char buf[256] __attribute__((aligned(8)));
	ssize_t got = read(blocking, buf, sizeof buf);
	struct inotify_event *e = (struct inotify_event *)buf;
	EXPECT_TRUE("a blocking read ends with the child's create",
		    got > 0 && e->wd == bd && e->mask == IN_CREATE && strcmp(e->name, "from-child") == 0);
	waitpid(c, NULL, 0);
	EXPECT_ERR("a buffer too short for the record", (inotify_rm_watch(blocking, bd), read(blocking, buf, 8)), EINVAL);
	EXPECT_EQ("then read whole", read(blocking, buf, sizeof buf), 16);
	close(blocking);

	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN}, out;
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	drain(fd);
	EXPECT_EQ("epoll: nothing", epoll_wait(ep, &out, 1, 0), 0);
	touch("e/x");
	EXPECT_EQ("epoll: readable", epoll_wait(ep, &out, 1, 0), 1);
	EXPECT_ERR("a read into a bad pointer", read(fd, BAD, 4096), EFAULT);
	close(ep);

	/* IN_EXCL_UNLINK: an unlinked child's events do not reach the directory. */
	int ex = inotify_init1(IN_NONBLOCK);
	int xd = inotify_add_watch(ex, "e", IN_MODIFY | IN_EXCL_UNLINK);
	nwds = 0;
	name_wd(xd, "excl");
	w = open("e/x", O_WRONLY);
	write(w, "1", 1);
	unlink("e/x");
	write(w, "2", 1);
	close(w);
	EXPECT_STR("IN_EXCL_UNLINK", drain(ex), "excl:MODIFY x");
	close(ex);
	close(fd);
}

static void limits(void)
{
	section("limits");
	long inst = read_setting("max_user_instances");
	long watches = read_setting("max_user_watches");
	long queued = read_setting("max_queued_events");
	EXPECT_TRUE("max_user_instances", inst > 0);
	EXPECT_TRUE("max_user_watches", watches > 0);
	EXPECT_EQ("max_queued_events", queued, 16384);
	EXPECT_ERR("a negative setting", write_setting("max_queued_events", -5), EINVAL);

	SETUP(write_setting("max_queued_events", 8));
	int fd = inotify_init1(IN_NONBLOCK);
	SETUP(write_setting("max_queued_events", queued));
	mkdir("q", 0755);
	int d = inotify_add_watch(fd, "q", IN_CREATE);
	nwds = 0;
	name_wd(d, "dir");
	char name[32];
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof name, "q/%d", i);
		touch(name);
	}
	EXPECT_STR("8 events, then one overflow", drain(fd),
		   "dir:CREATE 0; dir:CREATE 1; dir:CREATE 2; dir:CREATE 3; dir:CREATE 4; "
		   "dir:CREATE 5; dir:CREATE 6; dir:CREATE 7; none:Q_OVERFLOW");
	touch("q/again");
	EXPECT_STR("room again", drain(fd), "dir:CREATE again");

	char info[64], line[256];
	snprintf(info, sizeof info, "/proc/self/fdinfo/%d", fd);
	FILE *fi = fopen(info, "r");
	unsigned mask = 0;
	int found = 0;
	while (fi && fgets(line, sizeof line, fi))
		if (sscanf(line, "inotify wd:%*x ino:%*x sdev:%*x mask:%x", &mask) == 1)
			found++;
	if (fi)
		fclose(fi);
	EXPECT_EQ("fdinfo: one watch", found, 1);
	EXPECT_EQ("fdinfo: its mask", mask, IN_CREATE);
	close(fd);

	SETUP(write_setting("max_user_watches", 2));
	fd = inotify_init1(0);
	EXPECT_TRUE("watch 1", inotify_add_watch(fd, "q", IN_CREATE) >= 1);
	EXPECT_TRUE("watch 2", inotify_add_watch(fd, "q/0", IN_CREATE) >= 1);
	EXPECT_ERR("watch 3: max_user_watches", inotify_add_watch(fd, "q/1", IN_CREATE), ENOSPC);
	EXPECT_TRUE("a watch changed, not added", inotify_add_watch(fd, "q", IN_DELETE) >= 1);
	close(fd);
	SETUP(write_setting("max_user_watches", watches));

	int held[8], made = 0;
	SETUP(write_setting("max_user_instances", 3 + 0));
	/* The instances this program holds already: none. */
	for (; made < 8; made++) {
		held[made] = inotify_init1(0);
		if (held[made] < 0)
			break;
	}
	EXPECT_EQ("instances up to max_user_instances", made, 3);
	EXPECT_ERR("one more", inotify_init1(0), EMFILE);
	for (int i = 0; i < made; i++)
		close(held[i]);
	EXPECT_TRUE("after closing them", (fd = inotify_init1(0)) >= 0);
	close(fd);
	SETUP(write_setting("max_user_instances", inst));
}

static void hostile(void)
{
	section("hostile");
	mkdir("h", 0755);
	/* A watcher that dies with watches and queued events. */
	int p[2];
	pipe(p);
	pid_t c = fork();
	if (c == 0) {
		int fd = inotify_init();
		inotify_add_watch(fd, "h", IN_ALL_EVENTS);
		inotify_add_watch(fd, ".", IN_ALL_EVENTS);
		write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	char x;
	read(p[0], &x, 1);
	touch("h/a");
	kill(c, SIGKILL);
	EXPECT_STATUS("a watcher killed", wait_status(c), "killed by SIGKILL");
	touch("h/b");
	unlink("h/b");

	/* A flood for a reader that never reads. */
	long queued = read_setting("max_queued_events");
	SETUP(write_setting("max_queued_events", 64));
	c = fork();
	if (c == 0) {
		int fd = inotify_init();
		inotify_add_watch(fd, "h", IN_ALL_EVENTS);
		write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	read(p[0], &x, 1);
	SETUP(write_setting("max_queued_events", queued));
	char name[32];
	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof name, "h/f%d", i);
		touch(name);
		unlink(name);
	}
	kill(c, SIGKILL);
	EXPECT_STATUS("a reader that never read, killed", wait_status(c), "killed by SIGKILL");

	/* A watched directory removed under a reader. */
	int fd = inotify_init1(IN_NONBLOCK);
	mkdir("h/gone", 0755);
	int d = inotify_add_watch(fd, "h/gone", IN_ALL_EVENTS);
	nwds = 0;
	name_wd(d, "gone");
	rmdir("h/gone");
	EXPECT_STR("rmdir of a watched directory", drain(fd), "gone:DELETE_SELF; gone:IGNORED");
	EXPECT_ERR("its wd afterwards", inotify_rm_watch(fd, d), EINVAL);
	EXPECT_ERR("a watch of a bad fd number", inotify_add_watch(-1, "h", IN_OPEN), EBADF);
	EXPECT_ERR("a huge wd", inotify_rm_watch(fd, 0x7fffffff), EINVAL);
	int dupd = dup(fd);
	close(fd);
	d = inotify_add_watch(dupd, "h", IN_CREATE);
	touch("h/after");
	EXPECT_TRUE("a duplicate descriptor keeps the instance", events_pending(dupd) == POLLIN);
	close(dupd);
	fd = inotify_init1(0);
	EXPECT_TRUE("instances still work", fd >= 0 && inotify_add_watch(fd, "h", IN_CREATE) >= 1);
	close(fd);
}

int main(void)
{
	abi_init();
	instances();
	watches();
	events();
	limits();
	hostile();
	return abi_done();
}
