/*
 * File mappings against their files: the most a mapping may be opened to
 * (mprotect of a shared mapping of a file opened read-only, of a sealed
 * memfd; across munmap, mremap, fork, and a range over several mappings),
 * mmap's EACCES and EPERM, and SIGBUS past the file's end (private and
 * shared mappings, the end moved by ftruncate, a file cut to 0).
 */
#define _GNU_SOURCE
#include "abi.h"
#include <sys/mman.h>

#define PAGE 4096L

static void read_byte(void *p)
{
	(void)*(volatile char *)p;
}

static void write_byte(void *p)
{
	*(volatile char *)p = 1;
}

/* The result of a call as words: "ok" or its errno's name. */
static const char *res(long r)
{
	return r == -1 ? errname(errno) : "ok";
}

static const char *map_res(void *p)
{
	return p == MAP_FAILED ? errname(errno) : "ok";
}

static char *ro_map;

static int child_opens_it(void *arg)
{
	(void)arg;
	if (mprotect(ro_map, PAGE, PROT_READ | PROT_WRITE) == 0)
		return 1;
	return errno == EACCES ? 0 : 2;
}

static char *bus_map;

static int child_touches_past_end(void *arg)
{
	(void)arg;
	siginfo_t si;
	int sig = catch_fault(read_byte, bus_map + 2 * PAGE, &si);
	return sig == SIGBUS && si.si_code == BUS_ADRERR ? 0 : 1;
}

static int child_dies_past_end(void *arg)
{
	(void)arg;
	read_byte(bus_map + 2 * PAGE);
	return 0;
}

static int grow_fd;

/* Grows the file its parent mapped by a write, then touches the page that
 * is now the file's: the child's copy of the mapping follows its writes. */
static int child_grows_then_touches(void *arg)
{
	(void)arg;
	if (pwrite(grow_fd, "x", 1, 2 * PAGE - 1) != 1)
		return 2;
	siginfo_t si;
	return catch_fault(read_byte, bus_map + PAGE, &si) == 0 ? 0 : 1;
}

static volatile sig_atomic_t bus_seen;
static sigjmp_buf bus_again;

static void on_bus(int sig)
{
	(void)sig;
	bus_seen = 1;
	siglongjmp(bus_again, 1);
}

/* Faults past the end for ever, until it is killed. */
static int child_faults_on(void *arg)
{
	int *ready = arg;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_bus;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);
	sigsetjmp(bus_again, 1);
	if (bus_seen)
		__atomic_store_n(ready, 1, __ATOMIC_SEQ_CST);
	for (;;)
		read_byte(bus_map + 2 * PAGE);
	return 0;
}

static void make_file(const char *name, long bytes)
{
	int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	static char buf[PAGE];
	memset(buf, 'f', sizeof buf);
	for (long at = 0; at < bytes; at += PAGE)
		SETUP(write(fd, buf, bytes - at < PAGE ? bytes - at : PAGE));
	close(fd);
}

int main(void)
{
	abi_init();

	section("a file opened read-only, mapped shared");
	make_file("f", 3 * PAGE);
	int ro = open("f", O_RDONLY);
	SETUP(ro);
	char *p = mmap(NULL, 3 * PAGE, PROT_READ, MAP_SHARED, ro, 0);
	EXPECT_STR("mmap PROT_READ", map_res(p), "ok");
	EXPECT_ERR("mprotect PROT_READ|PROT_WRITE", mprotect(p, 3 * PAGE, PROT_READ | PROT_WRITE), EACCES);
	EXPECT_ERR("mprotect PROT_WRITE of one page", mprotect(p + PAGE, PAGE, PROT_WRITE), EACCES);
	EXPECT_STR("writing it", fault_words(write_byte, p), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_OK("mprotect PROT_READ|PROT_EXEC", mprotect(p, 3 * PAGE, PROT_READ | PROT_EXEC));
	EXPECT_OK("mprotect PROT_NONE", mprotect(p, 3 * PAGE, PROT_NONE));
	EXPECT_ERR("then PROT_WRITE", mprotect(p, 3 * PAGE, PROT_READ | PROT_WRITE), EACCES);
	EXPECT_OK("then PROT_READ", mprotect(p, 3 * PAGE, PROT_READ));
	EXPECT_EQ("its bytes", p[PAGE], 'f');
	EXPECT_OK("munmap its middle page", munmap(p + PAGE, PAGE));
	EXPECT_ERR("the first part, PROT_WRITE", mprotect(p, PAGE, PROT_READ | PROT_WRITE), EACCES);
	EXPECT_ERR("the last part, PROT_WRITE", mprotect(p + 2 * PAGE, PAGE, PROT_READ | PROT_WRITE), EACCES);
	ro_map = p;
	EXPECT_STATUS("a forked child's mprotect PROT_WRITE is EACCES", in_child(child_opens_it, NULL), "exited 0");
	char *s = mremap(p + 2 * PAGE, PAGE, PAGE, 0);
	EXPECT_TRUE("mremap in place", s == p + 2 * PAGE);
	EXPECT_ERR("after mremap, PROT_WRITE", mprotect(s, PAGE, PROT_READ | PROT_WRITE), EACCES);
	munmap(p, 3 * PAGE);

	/* At a fixed address, moved by mremap. */
	char *r = mmap(NULL, 4 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = mmap(r, PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, ro, 0);
	EXPECT_TRUE("MAP_FIXED at a reserved address", p == r);
	EXPECT_ERR("mprotect PROT_WRITE", mprotect(p, PAGE, PROT_READ | PROT_WRITE), EACCES);
	s = mremap(p, PAGE, 2 * PAGE, MREMAP_MAYMOVE);
	EXPECT_TRUE("mremap grows or moves it", s != MAP_FAILED);
	EXPECT_ERR("after mremap, PROT_WRITE", mprotect(s, PAGE, PROT_READ | PROT_WRITE), EACCES);
	munmap(s, 2 * PAGE);
	munmap(r, 4 * PAGE);

	/* Three mappings in a row, the middle one never writable. */
	r = mmap(NULL, 3 * PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = mmap(r + PAGE, PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, ro, 0);
	SETUP(p == MAP_FAILED ? -1 : 0);
	EXPECT_ERR("mprotect PROT_WRITE over three mappings", mprotect(r, 3 * PAGE, PROT_READ | PROT_WRITE), EACCES);
	EXPECT_STR("the one before it", fault_words(write_byte, r), "no fault");
	EXPECT_STR("the refusing one", fault_words(write_byte, r + PAGE), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_STR("the one after it", fault_words(write_byte, r + 2 * PAGE), "SIGSEGV SEGV_ACCERR at the address");
	EXPECT_ERR("starting at the refusing one", mprotect(r + PAGE, 2 * PAGE, PROT_READ | PROT_WRITE), EACCES);
	EXPECT_STR("the one after it still", fault_words(write_byte, r + 2 * PAGE), "SIGSEGV SEGV_ACCERR at the address");
	munmap(r, 3 * PAGE);
	r = mmap(NULL, 3 * PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = mmap(r, PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, ro, 0);
	munmap(r + PAGE, PAGE);
	EXPECT_ERR("a hole after the refusing one", mprotect(r, 3 * PAGE, PROT_READ | PROT_WRITE), EACCES);
	p = mmap(r + 2 * PAGE, PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, ro, 0);
	EXPECT_ERR("a hole before the refusing one", mprotect(r + PAGE, 2 * PAGE, PROT_READ | PROT_WRITE), ENOMEM);
	munmap(r, 3 * PAGE);

	section("other descriptors");
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0);
	EXPECT_STR("MAP_PRIVATE writable of the read-only one", map_res(p), "ok");
	munmap(p, PAGE);
	p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, ro, 0);
	EXPECT_OK("MAP_PRIVATE: mprotect PROT_WRITE", mprotect(p, PAGE, PROT_READ | PROT_WRITE));
	EXPECT_STR("writing it", fault_words(write_byte, p), "no fault");
	munmap(p, PAGE);
	EXPECT_STR("MAP_SHARED writable of the read-only one",
		   map_res(mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0)), "EACCES");
	EXPECT_STR("MAP_SHARED write-only of the read-only one",
		   map_res(mmap(NULL, PAGE, PROT_WRITE, MAP_SHARED, ro, 0)), "EACCES");
	close(ro);
	int wo = open("f", O_WRONLY);
	EXPECT_STR("a write-only descriptor, MAP_SHARED", map_res(mmap(NULL, PAGE, PROT_WRITE, MAP_SHARED, wo, 0)),
		   "EACCES");
	EXPECT_STR("a write-only descriptor, PROT_NONE", map_res(mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE, wo, 0)),
		   "EACCES");
	close(wo);
	int ap = open("f", O_RDWR | O_APPEND);
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ap, 0);
	EXPECT_STR("an O_APPEND descriptor, MAP_SHARED writable", map_res(p), "ok");
	if (p != MAP_FAILED)
		munmap(p, PAGE);
	close(ap);
	int z = open("/dev/zero", O_RDONLY);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, z, 0);
	EXPECT_ERR("/dev/zero read-only, MAP_SHARED: mprotect PROT_WRITE", mprotect(p, PAGE, PROT_READ | PROT_WRITE),
		   EACCES);
	munmap(p, PAGE);
	p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, z, 0);
	EXPECT_OK("MAP_PRIVATE: mprotect PROT_WRITE", mprotect(p, PAGE, PROT_READ | PROT_WRITE));
	munmap(p, PAGE);
	close(z);
	int rw = open("f", O_RDWR);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, rw, 0);
	EXPECT_OK("a read-write one, mprotect PROT_WRITE", mprotect(p, PAGE, PROT_READ | PROT_WRITE));
	munmap(p, PAGE);
	close(rw);

	section("sealed memfds");
	int m = memfd_create("sealed", MFD_ALLOW_SEALING);
	SETUP(m);
	SETUP(ftruncate(m, 2 * PAGE));
	SETUP(fcntl(m, F_ADD_SEALS, F_SEAL_FUTURE_WRITE));
	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, m, 0);
	EXPECT_STR("F_SEAL_FUTURE_WRITE: MAP_SHARED PROT_READ", map_res(p), "ok");
	EXPECT_ERR("its mprotect PROT_WRITE", mprotect(p, 2 * PAGE, PROT_READ | PROT_WRITE), EACCES);
	munmap(p, 2 * PAGE);
	EXPECT_STR("MAP_SHARED PROT_WRITE", map_res(mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0)), "EPERM");
	p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, m, 0);
	EXPECT_OK("MAP_PRIVATE: mprotect PROT_WRITE", mprotect(p, PAGE, PROT_READ | PROT_WRITE));
	munmap(p, PAGE);
	close(m);
	m = memfd_create("sealed", MFD_ALLOW_SEALING);
	SETUP(ftruncate(m, 2 * PAGE));
	SETUP(fcntl(m, F_ADD_SEALS, F_SEAL_WRITE));
	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, m, 0);
	EXPECT_STR("F_SEAL_WRITE: MAP_SHARED PROT_READ", map_res(p), "ok");
	if (p != MAP_FAILED) {
		EXPECT_STR("its mprotect PROT_WRITE", res(mprotect(p, 2 * PAGE, PROT_READ | PROT_WRITE)), "EACCES");
		munmap(p, 2 * PAGE);
	}
	EXPECT_STR("MAP_SHARED PROT_WRITE", map_res(mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0)), "EPERM");
	close(m);

	section("past the file's end");
	make_file("g", 5000);
	int fd = open("g", O_RDWR);
	SETUP(fd);
	p = mmap(NULL, 4 * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_STR("private: the last page with bytes, past them", fault_words(read_byte, p + 6000), "no fault");
	EXPECT_STR("private: the page wholly past the end", fault_words(read_byte, p + 2 * PAGE), "SIGBUS BUS_ADRERR at the address");
	EXPECT_STR("private: its last byte", fault_words(read_byte, p + 4 * PAGE - 1), "SIGBUS BUS_ADRERR at the address");
	EXPECT_STR("private: a write there", fault_words(write_byte, p + 3 * PAGE), "SIGSEGV SEGV_ACCERR at the address");
	char buf[8];
	int probe = open("g", O_RDONLY);
	EXPECT_ERR("read(2) into it", read(probe, p + 3 * PAGE, 1), EFAULT);
	close(probe);
	munmap(p, 4 * PAGE);
	p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_STR("shared: the page wholly past the end", fault_words(read_byte, p + 2 * PAGE), "SIGBUS BUS_ADRERR at the address");
	EXPECT_STR("shared: a write there", fault_words(write_byte, p + 3 * PAGE), "SIGBUS BUS_ADRERR at the address");
	EXPECT_STR("shared: the last page with bytes", fault_words(write_byte, p + PAGE + 10), "no fault");
	bus_map = p;
	EXPECT_STATUS("a forked child's touch there is SIGBUS", in_child(child_touches_past_end, NULL), "exited 0");
	EXPECT_STATUS("unhandled, it kills", in_child(child_dies_past_end, NULL), "killed by SIGBUS");
	int *ready = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t looping = spawn_fn(child_faults_on, ready);
	for (int i = 0; i < 2000 && !__atomic_load_n(ready, __ATOMIC_SEQ_CST); i++)
		usleep(5000);
	EXPECT_TRUE("a child faulting there again and again", __atomic_load_n(ready, __ATOMIC_SEQ_CST));
	kill(looping, SIGKILL);
	EXPECT_STATUS("killed meanwhile", wait_status(looping), "killed by SIGKILL");
	munmap(ready, PAGE);
	SETUP(ftruncate(fd, 3 * PAGE));
	EXPECT_STR("shared: grown by ftruncate, the new page", fault_words(read_byte, p + 2 * PAGE), "no fault");
	EXPECT_EQ("it reads zero", p[2 * PAGE + 100], 0);
	EXPECT_STR("shared: the page still past the end", fault_words(read_byte, p + 3 * PAGE), "SIGBUS BUS_ADRERR at the address");
	SETUP(ftruncate(fd, 0));
	EXPECT_STR("shared: cut to 0, its first page", fault_words(read_byte, p), "SIGBUS BUS_ADRERR at the address");
	SETUP(ftruncate(fd, 2 * PAGE));
	EXPECT_STR("shared: grown again", fault_words(read_byte, p), "no fault");
	EXPECT_TRUE("its bytes read zero, not what was cut", p[0] == 0 && p[PAGE + 10] == 0);
	munmap(p, 4 * PAGE);
	SETUP(ftruncate(fd, 2 * PAGE));
	p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	p[0] = 'w';
	EXPECT_STR("private: written", fault_words(read_byte, p), "no fault");
	SETUP(ftruncate(fd, 0));
	EXPECT_STR("private: cut to 0, the written page", fault_words(read_byte, p), "SIGBUS BUS_ADRERR at the address");
	EXPECT_STR("private: cut to 0, a page never touched", fault_words(read_byte, p + PAGE), "SIGBUS BUS_ADRERR at the address");
	SETUP(ftruncate(fd, PAGE));
	EXPECT_STR("private: grown again", fault_words(read_byte, p), "no fault");
	EXPECT_EQ("its byte is the file's", p[0], 0);
	char *q = mremap(p, 3 * PAGE, 4 * PAGE, MREMAP_MAYMOVE);
	EXPECT_STR("after mremap, the page past the end", fault_words(read_byte, q + PAGE), "SIGBUS BUS_ADRERR at the address");
	EXPECT_STR("after mremap, the first page", fault_words(read_byte, q), "no fault");
	munmap(q, 4 * PAGE);
	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_PRIVATE, fd, PAGE);
	EXPECT_STR("at an offset past the end", fault_words(read_byte, p), "SIGBUS BUS_ADRERR at the address");
	munmap(p, 2 * PAGE);
	SETUP(ftruncate(fd, PAGE));
	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_STR("private: one page, the second past the end", fault_words(read_byte, p + PAGE), "SIGBUS BUS_ADRERR at the address");
	bus_map = p;
	grow_fd = fd;
	EXPECT_STATUS("a forked child's write grows it, its touch there", in_child(child_grows_then_touches, NULL), "exited 0");
	munmap(p, 2 * PAGE);
	(void)buf;
	close(fd);
	return abi_done();
}
