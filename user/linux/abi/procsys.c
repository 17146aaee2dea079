/*
 * The settings of /proc/sys that a write changes: kernel/pid_max (the
 * pids fork gives), fs/pipe-max-size (what a process without
 * CAP_SYS_RESOURCE may ask of F_SETPIPE_SZ and gets in a new pipe),
 * kernel/domainname and hostname (uname's names); Linux's rounding, its
 * errors for bad text and out-of-range numbers, and the files' modes.
 * Every setting is put back as it was. Then /proc/<pid>/ns: the links,
 * the namespaces' inodes, and the NS_GET_* ioctls on one namespace of
 * each kind (the initial ones, on Linux).
 */
#include "abi.h"

#include <dirent.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>

#define NS_GET_USERNS 0xb701
#define NS_GET_PARENT 0xb702
#define NS_GET_NSTYPE 0xb703
#define NS_GET_OWNER_UID 0xb704

static char text[256];

static long read_number(const char *path)
{
	if (read_text(path, text, sizeof text) < 0)
		return -1;
	return strtol(text, NULL, 10);
}

/* write(2) of `s` to a fresh description of `path`: its result, errno
 * kept. */
static long write_text(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	long r = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

static int unprivileged_pipes(void *arg)
{
	(void)arg;
	if (setgid(65534) || setuid(65534))
		return 99;
	int p[2];
	SETUP(pipe(p));
	EXPECT_EQ("a new pipe holds pipe-max-size", fcntl(p[0], F_GETPIPE_SZ), 4096);
	EXPECT_ERR("F_SETPIPE_SZ beyond it", fcntl(p[0], F_SETPIPE_SZ, 8192), EPERM);
	EXPECT_EQ("F_SETPIPE_SZ to it", fcntl(p[0], F_SETPIPE_SZ, 4096), 4096);
	EXPECT_ERR("pipe-max-size opened for writing", open("/proc/sys/fs/pipe-max-size", O_WRONLY), EACCES);
	EXPECT_ERR("pid_max opened for writing", open("/proc/sys/kernel/pid_max", O_WRONLY), EACCES);
	EXPECT_ERR("domainname opened for writing", open("/proc/sys/kernel/domainname", O_WRONLY), EACCES);
	return 0;
}

int main(void)
{
	abi_init();
	struct stat st;

	section("kernel/pid_max");
	const char *pm = "/proc/sys/kernel/pid_max";
	long pid_max = read_number(pm);
	EXPECT_TRUE("a number above 300", pid_max > 300);
	EXPECT_OK("stat", stat(pm, &st));
	EXPECT_EQ("mode 0644", st.st_mode & 07777, 0644);
	EXPECT_EQ("write 32768", write_text(pm, "32768\n"), 6);
	EXPECT_EQ("read back", read_number(pm), 32768);
	int below = 1;
	for (int i = 0; i < 20; i++) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		below &= c > 0 && c < 32768;
		wait_status(c);
	}
	EXPECT_TRUE("forked pids stay below it", below);
	EXPECT_ERR("300 (the reserved pids)", write_text(pm, "300"), EINVAL);
	EXPECT_ERR("beyond PID_MAX_LIMIT", write_text(pm, "4194305"), EINVAL);
	EXPECT_ERR("not a number", write_text(pm, "many"), EINVAL);
	EXPECT_ERR("negative", write_text(pm, "-5"), EINVAL);
	EXPECT_EQ("unchanged by them", read_number(pm), 32768);
	snprintf(text, sizeof text, "%ld", pid_max);
	EXPECT_TRUE("put back", write_text(pm, text) > 0 && read_number(pm) == pid_max);

	section("fs/pipe-max-size");
	const char *pms = "/proc/sys/fs/pipe-max-size";
	long pipe_max = read_number(pms);
	EXPECT_TRUE("at least a pipe's 64 KiB", pipe_max >= 65536);
	EXPECT_OK("stat", stat(pms, &st));
	EXPECT_EQ("mode 0644", st.st_mode & 07777, 0644);
	EXPECT_EQ("write 5000", write_text(pms, "5000"), 4);
	EXPECT_EQ("rounded to a power of two pages", read_number(pms), 8192);
	EXPECT_EQ("write 0", write_text(pms, "0"), 1);
	EXPECT_EQ("a page", read_number(pms), 4096);
	EXPECT_ERR("beyond 2^31", write_text(pms, "2147483649"), EINVAL);
	EXPECT_ERR("not a number", write_text(pms, "big"), EINVAL);
	EXPECT_EQ("unchanged by them", read_number(pms), 4096);
	EXPECT_STATUS("a user without privilege", in_child(unprivileged_pipes, NULL), "exited 0");
	int p[2];
	SETUP(pipe(p));
	EXPECT_EQ("root's new pipe: 64 KiB", fcntl(p[0], F_GETPIPE_SZ), 65536);
	EXPECT_EQ("root's F_SETPIPE_SZ beyond it", fcntl(p[0], F_SETPIPE_SZ, 131072), 131072);
	close(p[0]);
	close(p[1]);
	snprintf(text, sizeof text, "%ld\n", pipe_max);
	EXPECT_TRUE("put back", write_text(pms, text) > 0 && read_number(pms) == pipe_max);

	section("kernel/domainname and hostname");
	struct utsname u;
	SETUP(uname(&u));
	char domain[65], host[65];
	strcpy(domain, u.domainname);
	strcpy(host, u.nodename);
	const char *dn = "/proc/sys/kernel/domainname", *hn = "/proc/sys/kernel/hostname";
	EXPECT_OK("stat", stat(dn, &st));
	EXPECT_EQ("mode 0644", st.st_mode & 07777, 0644);
	EXPECT_EQ("write a name and a newline", write_text(dn, "abi.example\n"), 12);
	SETUP(uname(&u));
	EXPECT_STR("uname's domainname", u.domainname, "abi.example");
	read_text(dn, text, sizeof text);
	EXPECT_STR("the file", text, "abi.example\n");
	SETUP(setdomainname("other", 5));
	read_text(dn, text, sizeof text);
	EXPECT_STR("after setdomainname", text, "other\n");
	EXPECT_EQ("hostname: write", write_text(hn, "abi-host"), 8);
	SETUP(uname(&u));
	EXPECT_STR("uname's nodename", u.nodename, "abi-host");
	SETUP(setdomainname(domain, strlen(domain)));
	SETUP(sethostname(host, strlen(host)));

	section("/proc/self/ns");
	static const char *kinds[] = { "ipc", "mnt", "net", "pid", "user", "uts" };
	DIR *d = opendir("/proc/self/ns");
	EXPECT_TRUE("a directory", d != NULL);
	int found = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		for (unsigned i = 0; i < 6; i++)
			found += strcmp(e->d_name, kinds[i]) == 0;
	if (d)
		closedir(d);
	EXPECT_EQ("ipc mnt net pid user uts listed", found, 6);
	char link[64], theirs[64], path[64];
	ssize_t n = readlink("/proc/self/ns/uts", link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	EXPECT_TRUE("uts links to uts:[inode]", strncmp(link, "uts:[", 5) == 0 && link[strlen(link) - 1] == ']');
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	snprintf(path, sizeof path, "/proc/%d/ns/uts", c);
	n = readlink(path, theirs, sizeof theirs - 1);
	theirs[n > 0 ? n : 0] = 0;
	EXPECT_TRUE("a child's is the same", strcmp(theirs, link) == 0);
	kill(c, SIGKILL);
	wait_status(c);
	EXPECT_OK("lstat", lstat("/proc/self/ns/uts", &st));
	EXPECT_TRUE("a link", S_ISLNK(st.st_mode));
	EXPECT_OK("stat", stat("/proc/self/ns/uts", &st));
	EXPECT_TRUE("the inode is the link's number", (unsigned long)st.st_ino == strtoul(link + 5, NULL, 10));
	struct stat user_st;
	SETUP(stat("/proc/self/ns/user", &user_st));
	EXPECT_TRUE("namespaces of two kinds differ", user_st.st_ino != st.st_ino);
	int uts = open("/proc/self/ns/uts", O_RDONLY);
	int user = open("/proc/self/ns/user", O_RDONLY);
	int pid = open("/proc/self/ns/pid", O_RDONLY);
	EXPECT_TRUE("opened", uts >= 0 && user >= 0 && pid >= 0);
	char b;
	EXPECT_ERR("read", read(uts, &b, 1), EINVAL);
	EXPECT_EQ("NS_GET_NSTYPE of uts", ioctl(uts, NS_GET_NSTYPE), CLONE_NEWUTS);
	EXPECT_EQ("NS_GET_NSTYPE of user", ioctl(user, NS_GET_NSTYPE), CLONE_NEWUSER);
	EXPECT_EQ("NS_GET_NSTYPE of pid", ioctl(pid, NS_GET_NSTYPE), CLONE_NEWPID);
	EXPECT_ERR("NS_GET_PARENT of uts (not nested)", ioctl(uts, NS_GET_PARENT), EINVAL);
	EXPECT_ERR("NS_GET_PARENT of the pid namespace", ioctl(pid, NS_GET_PARENT), EPERM);
	EXPECT_ERR("NS_GET_PARENT of the user namespace", ioctl(user, NS_GET_PARENT), EPERM);
	EXPECT_ERR("NS_GET_USERNS of the user namespace", ioctl(user, NS_GET_USERNS), EPERM);
	int owner = ioctl(uts, NS_GET_USERNS);
	EXPECT_TRUE("NS_GET_USERNS of uts: a descriptor", owner >= 0);
	struct stat owner_st;
	EXPECT_TRUE("of the user namespace", fstat(owner, &owner_st) == 0 && owner_st.st_ino == user_st.st_ino);
	EXPECT_EQ("close-on-exec", fcntl(owner, F_GETFD), FD_CLOEXEC);
	close(owner);
	uid_t uid = 77;
	EXPECT_OK("NS_GET_OWNER_UID of the user namespace", ioctl(user, NS_GET_OWNER_UID, &uid));
	EXPECT_EQ("root", uid, 0);
	EXPECT_ERR("to a bad pointer", ioctl(user, NS_GET_OWNER_UID, (void *)8), EFAULT);
	EXPECT_ERR("NS_GET_OWNER_UID of uts", ioctl(uts, NS_GET_OWNER_UID, &uid), EINVAL);
	EXPECT_ERR("an unknown request", ioctl(uts, 0xb7f0), ENOTTY);
	close(uts);
	close(user);
	close(pid);
	return abi_done();
}
