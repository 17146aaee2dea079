/*
 * Descriptors: dup, dup2, dup3 (shared offsets, close-on-exec not shared),
 * fcntl (F_DUPFD, F_GETFD/F_SETFD, F_GETFL/F_SETFL with the flags Linux
 * reports, F_GETPIPE_SZ, record locks between processes, leases within
 * one process), flock (a lock of the open file description: shared by
 * dup and fork, gone with its last descriptor or a killed holder), and pipes:
 * pipe2 flags, capacity, EAGAIN, atomic writes of PIPE_BUF, EOF.
 */
#include "abi.h"

#include <limits.h>
#include <sys/file.h>

static int child_lock(void *arg)
{
	int fd = open("locked", O_RDWR);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
	int how = (int)(long)arg;
	if (how == 0) {
		EXPECT_ERR("F_SETLK of a locked range from another process", fcntl(fd, F_SETLK, &fl), EAGAIN);
		fl.l_start = 10;
		EXPECT_OK("F_SETLK of the range after it", fcntl(fd, F_SETLK, &fl));
		fl.l_start = 0;
		fl.l_len = 10;
		EXPECT_OK("F_GETLK of the locked range", fcntl(fd, F_GETLK, &fl));
		EXPECT_TRUE("reports the write lock and its owner", fl.l_type == F_WRLCK && fl.l_pid == getppid() &&
									    fl.l_start == 0 && fl.l_len == 10);
		fl.l_type = F_RDLCK;
		fl.l_start = 0;
		EXPECT_ERR("a read lock there too", fcntl(fd, F_SETLK, &fl), EAGAIN);
	}
	return 0;
}

static void leases(void)
{
	section("leases");
	int fd = open("leased", O_RDONLY | O_CREAT, 0644);
	EXPECT_EQ("F_GETLEASE with none", fcntl(fd, F_GETLEASE), F_UNLCK);
	EXPECT_OK("F_SETLEASE F_RDLCK", fcntl(fd, F_SETLEASE, F_RDLCK));
	EXPECT_EQ("F_GETLEASE", fcntl(fd, F_GETLEASE), F_RDLCK);
	EXPECT_OK("F_SETLEASE F_UNLCK", fcntl(fd, F_SETLEASE, F_UNLCK));
	EXPECT_EQ("F_GETLEASE after it", fcntl(fd, F_GETLEASE), F_UNLCK);
	EXPECT_ERR("F_UNLCK with no lease", fcntl(fd, F_SETLEASE, F_UNLCK), EAGAIN);
	EXPECT_OK("F_WRLCK on a read-only description, the only one", fcntl(fd, F_SETLEASE, F_WRLCK));
	EXPECT_EQ("F_GETLEASE", fcntl(fd, F_GETLEASE), F_WRLCK);
	EXPECT_OK("back to F_RDLCK", fcntl(fd, F_SETLEASE, F_RDLCK));
	EXPECT_EQ("F_GETLEASE", fcntl(fd, F_GETLEASE), F_RDLCK);
	fcntl(fd, F_SETLEASE, F_UNLCK);
	int two = open("leased", O_RDONLY);
	EXPECT_ERR("F_WRLCK while another description reads", fcntl(fd, F_SETLEASE, F_WRLCK), EAGAIN);
	EXPECT_OK("F_RDLCK then", fcntl(fd, F_SETLEASE, F_RDLCK));
	EXPECT_OK("and on the other one too", fcntl(two, F_SETLEASE, F_RDLCK));
	fcntl(two, F_SETLEASE, F_UNLCK);
	fcntl(fd, F_SETLEASE, F_UNLCK);
	close(two);
	int rw = open("leased", O_RDWR);
	EXPECT_ERR("F_RDLCK on a writable description", fcntl(rw, F_SETLEASE, F_RDLCK), EAGAIN);
	EXPECT_ERR("F_RDLCK while another description writes", fcntl(fd, F_SETLEASE, F_RDLCK), EAGAIN);
	close(rw);
	EXPECT_ERR("an unknown lease type", fcntl(fd, F_SETLEASE, 5), EINVAL);
	pid_t c = fork();
	if (c == 0) {
		setuid(1000);
		_exit(fcntl(fd, F_SETLEASE, F_RDLCK) == -1 && errno == EACCES ? 0 : 1);
	}
	EXPECT_STATUS("another user's file (EACCES)", wait_status(c), "exited 0");
	int p[2];
	pipe(p);
	EXPECT_ERR("on a pipe", fcntl(p[0], F_SETLEASE, F_RDLCK), EINVAL);
	close(p[0]);
	close(p[1]);
	int dir = open(".", O_RDONLY | O_DIRECTORY);
	EXPECT_ERR("on a directory", fcntl(dir, F_SETLEASE, F_RDLCK), EINVAL);
	close(dir);
	EXPECT_ERR("on a closed descriptor", fcntl(999, F_SETLEASE, F_RDLCK), EBADF);
	close(fd);
}

static int child_flock(void *arg)
{
	int inherited = (int)(long)arg;
	EXPECT_OK("the inherited description's lock is the child's too", flock(inherited, LOCK_EX | LOCK_NB));
	int own = open("flocked", O_RDONLY);
	EXPECT_ERR("a description of its own waits (LOCK_NB)", flock(own, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	EXPECT_ERR("and cannot unlock the other's", flock(own, LOCK_UN) == 0 ? flock(own, LOCK_EX | LOCK_NB) : -1,
		   EWOULDBLOCK);
	return 0;
}

static void flocks(void)
{
	section("flock");
	int a = open("flocked", O_RDWR | O_CREAT, 0644);
	int b = open("flocked", O_RDONLY);
	EXPECT_OK("LOCK_SH", flock(a, LOCK_SH));
	EXPECT_OK("LOCK_SH by another description", flock(b, LOCK_SH | LOCK_NB));
	EXPECT_ERR("LOCK_EX while the other shares it", flock(a, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	EXPECT_OK("LOCK_UN of the other", flock(b, LOCK_UN));
	EXPECT_OK("now LOCK_EX (a conversion)", flock(a, LOCK_EX | LOCK_NB));
	EXPECT_ERR("LOCK_SH by another description", flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	int d = dup(a);
	EXPECT_OK("a duplicate holds the same lock", flock(d, LOCK_EX | LOCK_NB));
	EXPECT_STATUS("a child", in_child(child_flock, (void *)(long)a), "exited 0");
	close(a);
	EXPECT_ERR("one descriptor of it closed: still held", flock(b, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	close(d);
	EXPECT_OK("the last one closed: free", flock(b, LOCK_EX | LOCK_NB));
	EXPECT_OK("LOCK_UN", flock(b, LOCK_UN));
	EXPECT_OK("LOCK_UN of nothing held", flock(b, LOCK_UN));

	int sync[2];
	pipe(sync);
	pid_t pid = fork();
	if (pid == 0) {
		int own = open("flocked", O_RDONLY);
		flock(own, LOCK_EX);
		write(sync[1], "x", 1);
		for (;;)
			pause();
	}
	char c;
	read(sync[0], &c, 1);
	EXPECT_ERR("a child holds it", flock(b, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	kill(pid, SIGKILL);
	EXPECT_STATUS("the child killed", wait_status(pid), "killed by SIGKILL");
	EXPECT_OK("its lock went with it", flock(b, LOCK_EX | LOCK_NB));
	close(sync[0]);
	close(sync[1]);

	EXPECT_ERR("no operation", flock(b, 0), EINVAL);
	EXPECT_ERR("LOCK_SH | LOCK_EX", flock(b, LOCK_SH | LOCK_EX), EINVAL);
	EXPECT_ERR("an unknown operation", flock(b, 64), EINVAL);
	EXPECT_ERR("a bad descriptor", flock(-1, LOCK_SH), EBADF);
	EXPECT_ERR("a closed descriptor", flock(a, LOCK_SH), EBADF);
	int path = open("flocked", O_PATH);
	EXPECT_ERR("an O_PATH descriptor", flock(path, LOCK_SH), EBADF);
	close(path);
	close(b);
	unlink("flocked");
}

int main(void)
{
	abi_init();
	char buf[256];

	section("dup, dup2, dup3");
	int fd = open("file", O_RDWR | O_CREAT, 0644);
	write(fd, "0123456789", 10);
	int d = dup(fd);
	EXPECT_EQ("dup gives the lowest free number", d, fd + 1);
	lseek(fd, 3, SEEK_SET);
	EXPECT_EQ("the offset is shared", lseek(d, 0, SEEK_CUR), 3);
	EXPECT_EQ("dup2 to 10", dup2(fd, 10), 10);
	EXPECT_EQ("dup2 onto itself returns it", dup2(fd, fd), fd);
	EXPECT_ERR("dup2 of a closed descriptor onto itself", dup2(50, 50), EBADF);
	/* musl's dup3 falls back to dup2 for flags without O_CLOEXEC: raw calls. */
	EXPECT_ERR("dup3 onto itself", syscall(SYS_dup3, fd, fd, 0), EINVAL);
	EXPECT_ERR("dup3 with unknown flags", syscall(SYS_dup3, fd, 11, 1), EINVAL);
	EXPECT_EQ("dup3 O_CLOEXEC", dup3(fd, 11, O_CLOEXEC), 11);
	EXPECT_EQ("the copy has FD_CLOEXEC", fcntl(11, F_GETFD), FD_CLOEXEC);
	EXPECT_EQ("the original does not", fcntl(fd, F_GETFD), 0);
	EXPECT_EQ("dup2 over an open descriptor closes it first", dup2(d, 11), 11);
	EXPECT_EQ("and the flag is gone", fcntl(11, F_GETFD), 0);
	EXPECT_ERR("dup of a bad descriptor", dup(99), EBADF);
	EXPECT_ERR("dup2 to a negative number", dup2(fd, -1), EBADF);
	EXPECT_ERR("dup2 beyond RLIMIT_NOFILE", dup2(fd, 1 << 20), EBADF);
	close(d);
	close(10);
	close(11);

	section("fcntl");
	EXPECT_EQ("F_DUPFD from 20", fcntl(fd, F_DUPFD, 20), 20);
	EXPECT_EQ("F_DUPFD from 20 again: the next free", fcntl(fd, F_DUPFD, 20), 21);
	EXPECT_EQ("F_DUPFD_CLOEXEC", fcntl(fd, F_DUPFD_CLOEXEC, 0), fd + 1);
	EXPECT_EQ("its FD_CLOEXEC", fcntl(fd + 1, F_GETFD), FD_CLOEXEC);
	close(fd + 1);
	close(20);
	close(21);
	EXPECT_ERR("F_DUPFD from a negative number", fcntl(fd, F_DUPFD, -1), EINVAL);
	EXPECT_OK("F_SETFD FD_CLOEXEC", fcntl(fd, F_SETFD, FD_CLOEXEC));
	EXPECT_EQ("F_GETFD", fcntl(fd, F_GETFD), FD_CLOEXEC);
	EXPECT_OK("F_SETFD with other bits: only FD_CLOEXEC counts", fcntl(fd, F_SETFD, 0xfe));
	EXPECT_EQ("F_GETFD", fcntl(fd, F_GETFD), 0);
	/* A 64-bit kernel adds O_LARGEFILE (0100000) to every open file. */
	int ro = syscall(SYS_open, "file", O_RDONLY);
	say("F_GETFL of an O_RDONLY open: 0%o", (unsigned)fcntl(ro, F_GETFL));
	close(ro);
	int wa = open("file", O_WRONLY | O_APPEND | O_NONBLOCK);
	say("F_GETFL of O_WRONLY|O_APPEND|O_NONBLOCK: 0%o", (unsigned)fcntl(wa, F_GETFL));
	EXPECT_OK("F_SETFL 0 (clears O_APPEND and O_NONBLOCK)", fcntl(wa, F_SETFL, 0));
	say("F_GETFL after: 0%o", (unsigned)fcntl(wa, F_GETFL));
	EXPECT_OK("F_SETFL O_RDWR|O_APPEND (the access mode is ignored)", fcntl(wa, F_SETFL, O_RDWR | O_APPEND));
	say("F_GETFL after: 0%o", (unsigned)fcntl(wa, F_GETFL));
	close(wa);
	int dirfd = open(".", O_RDONLY | O_DIRECTORY);
	say("F_GETFL of a directory opened O_DIRECTORY: 0%o", (unsigned)fcntl(dirfd, F_GETFL));
	close(dirfd);
	EXPECT_ERR("an unknown command", fcntl(fd, 9999), EINVAL);
	EXPECT_ERR("F_GETFD of a bad descriptor", fcntl(99, F_GETFD), EBADF);

	section("record locks");
	int lf = open("locked", O_RDWR | O_CREAT, 0644);
	write(lf, "0123456789abcdefghij", 20);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
	EXPECT_OK("F_SETLK a write lock on bytes 0..9", fcntl(lf, F_SETLK, &fl));
	fl.l_type = F_RDLCK;
	EXPECT_OK("our own F_GETLK sees no conflict", fcntl(lf, F_GETLK, &fl));
	EXPECT_TRUE("l_type F_UNLCK", fl.l_type == F_UNLCK);
	EXPECT_STATUS("another process", in_child(child_lock, (void *)0), "exited 0");
	fl = (struct flock){ .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	EXPECT_OK("unlock all", fcntl(lf, F_SETLK, &fl));
	fl.l_type = 99;
	EXPECT_ERR("a bad lock type", fcntl(lf, F_SETLK, &fl), EINVAL);
	int rdonly = open("locked", O_RDONLY);
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	EXPECT_ERR("a write lock on a read-only descriptor", fcntl(rdonly, F_SETLK, &fl), EBADF);
	close(rdonly);
	close(lf);
	leases();
	flocks();

	section("pipes");
	int p[2];
	EXPECT_OK("pipe2(O_CLOEXEC | O_NONBLOCK)", pipe2(p, O_CLOEXEC | O_NONBLOCK));
	EXPECT_TRUE("both ends close-on-exec", fcntl(p[0], F_GETFD) == FD_CLOEXEC && fcntl(p[1], F_GETFD) == FD_CLOEXEC);
	say("F_GETFL of the read end: 0%o, write end: 0%o", (unsigned)fcntl(p[0], F_GETFL),
	    (unsigned)fcntl(p[1], F_GETFL));
	EXPECT_ERR("read of an empty non-blocking pipe", read(p[0], buf, 1), EAGAIN);
	EXPECT_EQ("F_GETPIPE_SZ", fcntl(p[0], F_GETPIPE_SZ), 65536);
	static char big[70000];
	long total = 0, n;
	while ((n = write(p[1], big, 4096)) > 0)
		total += n;
	int e = errno;
	EXPECT_STR("a full non-blocking pipe", n == -1 ? errname(e) : "no error", "EAGAIN");
	EXPECT_EQ("it took, in writes of 4096", total, 65536);
	while (read(p[0], big, sizeof big) > 0)
		;
	/* The pipe is 16 pages; a write goes into the last page only if it
	 * fits there whole, else it starts a new one. */
	total = 0;
	while ((n = write(p[1], big, 1000)) > 0)
		total += n;
	EXPECT_EQ("in writes of 1000 (4 to a page)", total, 64000);
	char one;
	read(p[0], &one, 1);
	EXPECT_ERR("one byte read: still no room for a PIPE_BUF write (atomic)", write(p[1], big, PIPE_BUF), EAGAIN);
	close(p[0]);
	close(p[1]);
	SETUP(pipe(p));
	EXPECT_EQ("pipe gives the two lowest free numbers", p[1], p[0] + 1);
	write(p[1], "abc", 3);
	close(p[1]);
	EXPECT_EQ("data left after the writer closed", read(p[0], buf, sizeof buf), 3);
	EXPECT_EQ("then end of file", read(p[0], buf, sizeof buf), 0);
	close(p[0]);
	EXPECT_ERR("pipe2 with unknown flags", pipe2(p, O_APPEND), EINVAL);
	EXPECT_ERR("pipe to a bad pointer", syscall(SYS_pipe, BAD_PTR), EFAULT);
	SETUP(pipe(p));
	EXPECT_ERR("write to the read end", write(p[0], "x", 1), EBADF);
	EXPECT_ERR("read from the write end", read(p[1], buf, 1), EBADF);
	EXPECT_OK("F_SETPIPE_SZ to 1 page", fcntl(p[1], F_SETPIPE_SZ, 4096));
	EXPECT_EQ("F_GETPIPE_SZ", fcntl(p[1], F_GETPIPE_SZ), 4096);
	close(p[0]);
	close(p[1]);
	close(fd);
	return abi_done();
}
