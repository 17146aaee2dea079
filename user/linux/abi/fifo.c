/*
 * mknod and mknodat: FIFOs, sockets, regular and device files by name,
 * with their types and the errors (an existing name, a bad type, a
 * device file made by a user other than root, a bad pointer).
 *
 * Then their opens (fifo(7)): a reader waits for a writer and a writer
 * for a reader, O_NONBLOCK and O_RDWR never wait (a writer with no reader:
 * ENXIO), one pipe for every open of the inode, empty again once all are
 * closed; two processes through one, end of file and SIGPIPE/EPIPE when
 * the other side goes, poll/select/epoll, signals and SIGKILL in a
 * waiting open; device files opened as the device their numbers name.
 */
#include "abi.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sysmacros.h>
#include <sys/time.h>

#define BAD ((void *)16)

static const char *type_of(const char *path)
{
	struct stat st;
	if (stat(path, &st) == -1)
		return errname(errno);
	switch (st.st_mode & S_IFMT) {
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFREG:
		return "regular";
	case S_IFCHR:
		return "char device";
	case S_IFBLK:
		return "block device";
	default:
		return "other";
	}
}

static short revents(int fd, short events)
{
	struct pollfd p = {fd, events, 0};
	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

static void fifo_opens(void)
{
	section("FIFO opens");
	SETUP(mkfifo("p", 0600));
	int r = open("p", O_RDONLY | O_NONBLOCK);
	EXPECT_TRUE("O_RDONLY|O_NONBLOCK with no writer: opens", r >= 0);
	char buf[16];
	EXPECT_EQ("a read with no writer ever: end of file", read(r, buf, sizeof buf), 0);
	EXPECT_EQ("poll: no POLLHUP before any writer", revents(r, POLLIN), 0);
	int w = open("p", O_WRONLY | O_NONBLOCK);
	EXPECT_TRUE("O_WRONLY|O_NONBLOCK with a reader: opens", w >= 0);
	EXPECT_EQ("poll of the writer", revents(w, POLLOUT), POLLOUT);
	EXPECT_EQ("write", write(w, "hello", 5), 5);
	EXPECT_EQ("poll of the reader", revents(r, POLLIN), POLLIN);
	int n = -1;
	EXPECT_OK("FIONREAD", ioctl(r, FIONREAD, &n));
	EXPECT_EQ("bytes held", n, 5);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("read", read(r, buf, sizeof buf), 5);
	EXPECT_STR("what was written", buf, "hello");
	EXPECT_ERR("a read of nothing, the writer open", read(r, buf, sizeof buf), EAGAIN);
	EXPECT_ERR("lseek", lseek(r, 0, SEEK_SET), ESPIPE);
	EXPECT_ERR("lseek of the writer", lseek(w, 0, SEEK_CUR), ESPIPE);
	EXPECT_ERR("pread", pread(r, buf, 1, 0), ESPIPE);
	struct stat a, b;
	SETUP(stat("p", &a));
	EXPECT_OK("fstat", fstat(r, &b));
	EXPECT_TRUE("a FIFO", S_ISFIFO(b.st_mode));
	EXPECT_TRUE("the inode of its name", a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	EXPECT_EQ("its permissions", b.st_mode & 07777, 0600);
	EXPECT_EQ("F_GETFL of the reader", fcntl(r, F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDONLY | O_NONBLOCK);
	EXPECT_EQ("F_GETPIPE_SZ", fcntl(w, F_GETPIPE_SZ), 65536);
	int w2 = open("p", O_WRONLY);
	EXPECT_TRUE("a blocking writer with a reader: opens", w2 >= 0);
	EXPECT_EQ("its write reaches the same pipe", write(w2, "x", 1), 1);
	EXPECT_EQ("read it", read(r, buf, sizeof buf), 1);
	close(w2);
	close(w);
	EXPECT_EQ("the writers closed: POLLHUP", revents(r, POLLIN) & POLLHUP, POLLHUP);
	EXPECT_EQ("and end of file", read(r, buf, sizeof buf), 0);
	close(r);
	EXPECT_ERR("O_WRONLY|O_NONBLOCK with no reader", open("p", O_WRONLY | O_NONBLOCK), ENXIO);
	int rw = open("p", O_RDWR);
	EXPECT_TRUE("O_RDWR with nobody: opens at once", rw >= 0);
	EXPECT_EQ("write to itself", write(rw, "abc", 3), 3);
	EXPECT_EQ("poll: both ways", revents(rw, POLLIN | POLLOUT), POLLIN | POLLOUT);
	w = open("p", O_WRONLY | O_NONBLOCK);
	EXPECT_TRUE("O_RDWR is a reader: a writer opens", w >= 0);
	EXPECT_EQ("read back", read(rw, buf, sizeof buf), 3);
	EXPECT_EQ("write left in it", write(rw, "zz", 2), 2);
	close(w);
	close(rw);
	rw = open("p", O_RDWR | O_NONBLOCK);
	EXPECT_ERR("all closed: it starts empty", read(rw, buf, sizeof buf), EAGAIN);
	close(rw);
}

static void fifo_processes(void)
{
	section("FIFO between processes");
	char buf[64], c;
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("p", O_WRONLY);
		if (fd < 0)
			_exit(1);
		if (write(fd, "from the child", 14) != 14)
			_exit(2);
		_exit(0);
	}
	int r = open("p", O_RDONLY);
	EXPECT_TRUE("a reader waits for the child's writer", r >= 0);
	int got = 0, n;
	while ((n = read(r, buf + got, sizeof buf - 1 - got)) > 0)
		got += n;
	buf[got] = 0;
	EXPECT_STR("what the child wrote, then end of file", buf, "from the child");
	EXPECT_STATUS("the child", wait_status(pid), "exited 0");
	close(r);

	pid = fork();
	if (pid == 0) {
		int fd = open("p", O_RDONLY);
		_exit(fd >= 0 && read(fd, &c, 1) == 1 && c == 'a' ? 0 : 1);
	}
	int w = open("p", O_WRONLY);
	EXPECT_TRUE("a writer waits for the child's reader", w >= 0);
	EXPECT_EQ("write", write(w, "a", 1), 1);
	EXPECT_STATUS("the child read it", wait_status(pid), "exited 0");
	signal(SIGPIPE, SIG_IGN);
	EXPECT_ERR("the reader gone: EPIPE", write(w, "b", 1), EPIPE);
	signal(SIGPIPE, SIG_DFL);
	EXPECT_EQ("POLLERR", revents(w, POLLOUT) & POLLERR, POLLERR);
	close(w);

	int sync[2];
	SETUP(pipe(sync));
	pid = fork();
	if (pid == 0) {
		close(sync[1]);
		int fd = open("p", O_WRONLY);
		if (fd < 0 || write(fd, "x", 1) != 1 || read(sync[0], &c, 1) != 0)
			_exit(1);
		write(fd, "y", 1);
		_exit(3);
	}
	close(sync[0]);
	r = open("p", O_RDONLY);
	EXPECT_EQ("read the child's byte", read(r, buf, 1), 1);
	close(r);
	close(sync[1]);
	EXPECT_STATUS("the child writes once the reader is gone", wait_status(pid), "killed by SIGPIPE");

	/*
	 * Ten readers and ten writers of one FIFO, each its own process, each
	 * open until all have told (a writer's open may not outlive every
	 * reader's); ten seconds at most.
	 */
	int told[2], hold[2];
	SETUP(pipe(told));
	SETUP(pipe(hold));
	pid_t kids[20];
	for (int i = 0; i < 20; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			close(told[0]);
			close(hold[1]);
			int fd = open("p", i % 2 ? O_WRONLY : O_RDONLY);
			write(told[1], "o", 1);
			read(hold[0], &c, 1);
			_exit(fd >= 0 ? 0 : 1);
		}
	}
	close(told[1]);
	close(hold[0]);
	int opened = 0;
	struct pollfd pf = {told[0], POLLIN, 0};
	while (opened < 20 && poll(&pf, 1, 10000) == 1 && read(told[0], &c, 1) == 1)
		opened++;
	EXPECT_EQ("ten readers and ten writers all opened", opened, 20);
	close(hold[1]);
	close(told[0]);
	int ok = 0;
	for (int i = 0; i < 20; i++) {
		if (opened < 20)
			kill(kids[i], SIGKILL);
		ok += wait_status(kids[i]) == 0;
	}
	EXPECT_EQ("and exited", ok, 20);
}

static void fifo_signals(void)
{
	section("FIFO opens and signals");
	abi_alarms = 0;
	abi_alarm_in(100, 0);
	EXPECT_ERR("a waiting reader, a signal: EINTR", open("p", O_RDONLY), EINTR);
	EXPECT_EQ("its handler ran", abi_alarms, 1);
	EXPECT_ERR("the reader is gone", open("p", O_WRONLY | O_NONBLOCK), ENXIO);
	abi_alarm_in(100, 0);
	EXPECT_ERR("a waiting writer, a signal: EINTR", open("p", O_WRONLY), EINTR);
	int r = open("p", O_RDONLY | O_NONBLOCK);
	char c;
	EXPECT_EQ("the writer is gone: end of file", read(r, &c, 1), 0);
	EXPECT_EQ("and no POLLHUP (no writer opened since)", revents(r, POLLIN), 0);
	close(r);

	abi_alarms = 0;
	abi_alarm_in(50, 1);
	pid_t pid = fork();
	if (pid == 0) {
		usleep(300000);
		int fd = open("p", O_WRONLY);
		_exit(fd >= 0 && write(fd, "r", 1) == 1 ? 0 : 1);
	}
	r = open("p", O_RDONLY);
	EXPECT_TRUE("under SA_RESTART the open goes on", r >= 0);
	EXPECT_EQ("after the handler", abi_alarms, 1);
	EXPECT_EQ("and reads the writer's byte", read(r, &c, 1), 1);
	EXPECT_STATUS("the writer", wait_status(pid), "exited 0");
	close(r);
	signal(SIGALRM, SIG_DFL);

	pid = fork();
	if (pid == 0) {
		open("p", O_RDONLY);
		_exit(1);
	}
	usleep(100000);
	kill(pid, SIGKILL);
	EXPECT_STATUS("a waiting reader killed", wait_status(pid), "killed by SIGKILL");
	EXPECT_ERR("no reader left", open("p", O_WRONLY | O_NONBLOCK), ENXIO);
	pid = fork();
	if (pid == 0) {
		open("p", O_WRONLY);
		_exit(1);
	}
	usleep(100000);
	kill(pid, SIGKILL);
	EXPECT_STATUS("a waiting writer killed", wait_status(pid), "killed by SIGKILL");
	r = open("p", O_RDONLY | O_NONBLOCK);
	EXPECT_EQ("no POLLHUP for a reader after it", revents(r, POLLIN), 0);
	close(r);
}

static void fifo_poll(void)
{
	section("FIFO poll, select, epoll");
	int r = open("p", O_RDONLY | O_NONBLOCK);
	int w = open("p", O_WRONLY);
	fd_set set;
	FD_ZERO(&set);
	FD_SET(r, &set);
	struct timeval tv = {0, 0};
	EXPECT_EQ("select: nothing to read", select(r + 1, &set, NULL, NULL, &tv), 0);
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = r};
	EXPECT_OK("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev));
	pid_t pid = fork();
	if (pid == 0) {
		usleep(100000);
		_exit(write(w, "q", 1) == 1 ? 0 : 1);
	}
	struct epoll_event out;
	EXPECT_EQ("epoll_wait wakes when another process writes", epoll_wait(ep, &out, 1, 5000), 1);
	EXPECT_TRUE("EPOLLIN", out.events & EPOLLIN);
	FD_ZERO(&set);
	FD_SET(r, &set);
	tv.tv_sec = 5;
	EXPECT_EQ("select: readable", select(r + 1, &set, NULL, NULL, &tv), 1);
	EXPECT_STATUS("the writer", wait_status(pid), "exited 0");
	close(w);
	EXPECT_EQ("the writer closed: EPOLLHUP", epoll_wait(ep, &out, 1, 0) == 1 && (out.events & EPOLLHUP) != 0, 1);
	close(ep);
	close(r);
}

static void fifo_hostile(void)
{
	section("FIFO hostile opens");
	EXPECT_ERR("O_CREAT|O_EXCL of a FIFO", open("p", O_CREAT | O_EXCL | O_RDWR, 0600), EEXIST);
	EXPECT_ERR("O_DIRECTORY", open("p", O_RDONLY | O_DIRECTORY), ENOTDIR);
	int fd = open("p", O_RDWR | O_CREAT | O_TRUNC, 0600);
	EXPECT_TRUE("O_CREAT|O_TRUNC of an existing FIFO: opens", fd >= 0);
	close(fd);
	fd = open("p", O_PATH);
	EXPECT_TRUE("O_PATH: opens at once", fd >= 0);
	char c;
	EXPECT_ERR("and reads nothing", read(fd, &c, 1), EBADF);
	close(fd);
	SETUP(symlink("p", "lp"));
	fd = open("lp", O_RDWR);
	EXPECT_TRUE("through a symbolic link", fd >= 0);
	close(fd);
	EXPECT_ERR("O_NOFOLLOW of the link", open("lp", O_RDWR | O_NOFOLLOW), ELOOP);
	fd = open("p", O_RDWR);
	EXPECT_OK("unlink while open", unlink("p"));
	EXPECT_EQ("still a pipe", write(fd, "u", 1), 1);
	EXPECT_EQ("read", read(fd, &c, 1), 1);
	struct stat st;
	EXPECT_OK("fstat", fstat(fd, &st));
	EXPECT_TRUE("a FIFO with no name", S_ISFIFO(st.st_mode) && st.st_nlink == 0);
	close(fd);
	SETUP(mkfifo("q", 0600));
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) == -1 || setuid(65534) == -1)
			_exit(9);
		_exit(open("q", O_RDONLY | O_NONBLOCK) == -1 && errno == EACCES ? 0 : 1);
	}
	EXPECT_STATUS("another user's FIFO of mode 0600: EACCES", wait_status(pid), "exited 0");
	EXPECT_ERR("a socket's file", open("s", O_RDWR), ENXIO);
	EXPECT_ERR("a bad pointer", open((char *)16, O_RDONLY | O_NONBLOCK), EFAULT);
	int many = 0;
	for (int i = 0; i < 200; i++) {
		int f = open("q", O_RDONLY | O_NONBLOCK);
		many += f >= 0;
		close(f);
	}
	EXPECT_EQ("200 opens and closes", many, 200);
	struct rlimit old, lim;
	SETUP(getrlimit(RLIMIT_NOFILE, &old));
	lim = old;
	lim.rlim_cur = 16;
	SETUP(setrlimit(RLIMIT_NOFILE, &lim));
	int fds[64], k = 0;
	while (k < 64 && (fds[k] = open("q", O_RDONLY | O_NONBLOCK)) >= 0)
		k++;
	EXPECT_ERR("readers until no number is free", open("q", O_RDONLY | O_NONBLOCK), EMFILE);
	EXPECT_ERR("a writer then too", open("q", O_WRONLY | O_NONBLOCK), EMFILE);
	while (k > 0)
		close(fds[--k]);
	SETUP(setrlimit(RLIMIT_NOFILE, &old));
	EXPECT_ERR("none left open behind", open("q", O_WRONLY | O_NONBLOCK), ENXIO);
}

static void device_files(void)
{
	section("device files");
	char buf[8];
	SETUP(mknod("dnull", S_IFCHR | 0666, makedev(1, 3)));
	int fd = open("dnull", O_RDWR);
	EXPECT_TRUE("1, 3 opens", fd >= 0);
	EXPECT_EQ("as /dev/null: a write", write(fd, "abc", 3), 3);
	EXPECT_EQ("a read", read(fd, buf, sizeof buf), 0);
	struct stat a, b;
	SETUP(stat("dnull", &a));
	EXPECT_OK("fstat", fstat(fd, &b));
	EXPECT_TRUE("its own inode and numbers", a.st_ino == b.st_ino && S_ISCHR(b.st_mode) &&
							 major(b.st_rdev) == 1 && minor(b.st_rdev) == 3);
	close(fd);
	SETUP(mknod("dzero", S_IFCHR | 0600, makedev(1, 5)));
	fd = open("dzero", O_RDONLY);
	memset(buf, 1, sizeof buf);
	EXPECT_EQ("1, 5: zeros", read(fd, buf, sizeof buf) == 8 && buf[0] == 0 && buf[7] == 0, 1);
	close(fd);
	SETUP(mknod("dfull", S_IFCHR | 0600, makedev(1, 7)));
	fd = open("dfull", O_WRONLY);
	EXPECT_ERR("1, 7: full", write(fd, "x", 1), ENOSPC);
	close(fd);
	SETUP(mknod("durandom", S_IFCHR | 0600, makedev(1, 9)));
	fd = open("durandom", O_RDONLY);
	EXPECT_EQ("1, 9: random bytes", read(fd, buf, sizeof buf), 8);
	close(fd);
	SETUP(mknod("dnone", S_IFCHR | 0600, makedev(240, 0)));
	EXPECT_ERR("a character device with no driver", open("dnone", O_RDWR), ENXIO);
	SETUP(mknod("bnone", S_IFBLK | 0600, makedev(240, 0)));
	EXPECT_ERR("a block device with no driver", open("bnone", O_RDONLY), ENXIO);
	fd = open("dnone", O_PATH);
	EXPECT_TRUE("O_PATH of it", fd >= 0);
	close(fd);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) == -1 || setuid(65534) == -1)
			_exit(9);
		_exit(open("dzero", O_RDONLY) == -1 && errno == EACCES ? 0 : 1);
	}
	EXPECT_STATUS("another user, mode 0600: EACCES", wait_status(pid), "exited 0");
}

int main(void)
{
	abi_init();
	section("mknod");
	EXPECT_OK("a FIFO", mknod("f", S_IFIFO | 0640, 0));
	EXPECT_STR("its type", type_of("f"), "fifo");
	struct stat st;
	EXPECT_OK("stat", stat("f", &st));
	EXPECT_EQ("its permissions (umask 022)", st.st_mode & 07777, 0640);
	EXPECT_EQ("size 0", st.st_size, 0);
	EXPECT_ERR("again", mknod("f", S_IFIFO | 0600, 0), EEXIST);
	EXPECT_OK("mkfifo", mkfifo("g", 0666));
	EXPECT_OK("stat", stat("g", &st));
	EXPECT_EQ("0666 less the umask", st.st_mode & 07777, 0644);
	EXPECT_OK("a socket", mknod("s", S_IFSOCK | 0600, 0));
	EXPECT_STR("its type", type_of("s"), "socket");
	EXPECT_OK("type 0: a regular file", mknod("r", 0600, 0));
	EXPECT_STR("its type", type_of("r"), "regular");
	EXPECT_OK("a character device (root)", mknod("c", S_IFCHR | 0600, makedev(1, 3)));
	EXPECT_OK("stat", stat("c", &st));
	EXPECT_STR("its type", type_of("c"), "char device");
	EXPECT_TRUE("its numbers 1, 3", major(st.st_rdev) == 1 && minor(st.st_rdev) == 3);
	EXPECT_OK("a block device (root)", mknod("b", S_IFBLK | 0600, makedev(7, 300)));
	EXPECT_OK("stat", stat("b", &st));
	EXPECT_TRUE("its numbers 7, 300", major(st.st_rdev) == 7 && minor(st.st_rdev) == 300);
	EXPECT_ERR("a directory type", mknod("d", S_IFDIR | 0700, 0), EPERM);
	EXPECT_ERR("an unknown type", mknod("x", 0170000 | 0600, 0), EINVAL);
	EXPECT_ERR("a missing folder", mknod("no/f", S_IFIFO | 0600, 0), ENOENT);
	EXPECT_ERR("under a file", mknod("r/f", S_IFIFO | 0600, 0), ENOTDIR);
	EXPECT_ERR("a bad pointer", mknod(BAD, S_IFIFO | 0600, 0), EFAULT);
	EXPECT_ERR("under /proc", mknod("/proc/f", S_IFIFO | 0600, 0), ENOENT);
	int dir = open(".", O_RDONLY | O_DIRECTORY);
	EXPECT_OK("mknodat", mknodat(dir, "fa", S_IFIFO | 0600, 0));
	EXPECT_STR("its type", type_of("fa"), "fifo");
	EXPECT_ERR("mknodat with a file as folder", mknodat(open("r", O_RDONLY), "x", S_IFIFO | 0600, 0),
		   ENOTDIR);
	EXPECT_ERR("mknodat with a bad descriptor", mknodat(99, "x", S_IFIFO | 0600, 0), EBADF);
	EXPECT_OK("unlink a FIFO", unlink("f"));
	EXPECT_STR("gone", type_of("f"), "ENOENT");

	section("another user");
	SETUP(mkdir("open", 0777));
	SETUP(chmod("open", 0777));
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) == -1 || setuid(65534) == -1)
			_exit(9);
		int bad = (mknod("open/c", S_IFCHR | 0600, makedev(1, 3)) != -1 || errno != EPERM);
		bad |= (mknod("open/f", S_IFIFO | 0600, 0) != 0) << 1;
		bad |= (mknod("nope", S_IFIFO | 0600, 0) != -1 || errno != EACCES) << 2;
		_exit(bad);
	}
	EXPECT_STATUS("a device: EPERM; a FIFO: made; in root's folder: EACCES", wait_status(pid), "exited 0");
	EXPECT_OK("stat", stat("open/f", &st));
	EXPECT_TRUE("owned by the user", st.st_uid == 65534);

	fifo_opens();
	fifo_processes();
	fifo_signals();
	fifo_poll();
	fifo_hostile();
	device_files();
	return abi_done();
}
