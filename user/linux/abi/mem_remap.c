/*
 * mremap (shrink, grow in place, MREMAP_MAYMOVE, MREMAP_FIXED,
 * MREMAP_DONTUNMAP), mincore, madvise and the mlock family: contents that
 * move with the pages, what is present, what MADV_DONTNEED takes, VmLck in
 * /proc/self/status, RLIMIT_MEMLOCK, and Linux's error numbers for bad
 * addresses, lengths, flags and holes; other threads writing memory while
 * mappings move and pages go.
 */
#include "abi.h"
#include <pthread.h>
#include <sys/resource.h>

#define PAGE 4096L

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

static void read_byte(void *p)
{
	(void)*(volatile char *)p;
}

static const char *fault_at(void *p)
{
	siginfo_t si;
	int sig = catch_fault(read_byte, p, &si);
	if (!sig)
		return "no fault";
	if (sig == SIGSEGV && si.si_code == SEGV_MAPERR && si.si_addr == p)
		return "SIGSEGV SEGV_MAPERR at the address";
	return "another fault";
}

static int all(const char *p, long n, char c)
{
	for (long i = 0; i < n; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

static char *anon(long pages)
{
	char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		say("setup: mmap: %s", errname(errno));
		exit(2);
	}
	return p;
}

/* A free range of `pages` pages: mapped, then given back. */
static char *hole(long pages)
{
	char *p = anon(pages);
	munmap(p, pages * PAGE);
	return p;
}

/* mincore's answers for `pages` pages as a string of 0s and 1s. */
static const char *present(void *p, long pages)
{
	static char text[64];
	unsigned char vec[64];
	if (mincore(p, pages * PAGE, vec) != 0)
		return errname(errno);
	for (long i = 0; i < pages; i++)
		text[i] = '0' + (vec[i] & 1);
	text[pages] = 0;
	return text;
}

static long vm_lck(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	if (!f)
		return -2;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmLck: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * The permissions of the /proc/self/maps (or smaps) line for exactly
 * [start, end), "no line" if there is none, or with `field` the value of
 * that smaps field of the mapping (in kB, as text).
 */
static const char *map_line(const char *file, void *start, void *end, const char *field)
{
	static char found[32];
	char line[512];
	FILE *f = fopen(file, "r");
	int in = 0;
	if (!f)
		return errname(errno);
	snprintf(found, sizeof found, "no line");
	while (fgets(line, sizeof line, f)) {
		unsigned long s, e;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3) {
			in = s == (unsigned long)start && e == (unsigned long)end;
			if (in && !field) {
				snprintf(found, sizeof found, "%s", perms);
				break;
			}
			continue;
		}
		long kb;
		size_t n = strlen(field ? field : "");
		if (in && field && strncmp(line, field, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%ld", &kb) == 1) {
			snprintf(found, sizeof found, "%ld kB", kb);
			break;
		}
	}
	fclose(f);
	return found;
}

/* Whether the [stack] line holds the address of a local variable. */
static int stack_line_holds_locals(void)
{
	char line[512];
	int local = 0, holds = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long s, e;
		if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &s, &e) == 2)
			holds = (unsigned long)&local >= s && (unsigned long)&local < e;
	}
	fclose(f);
	return holds;
}

/* The child moves the break on from where the parent left it. */
static int child_grows_break(void *arg)
{
	(void)arg;
	char *cur = (char *)syscall(SYS_brk, 0);
	char *want = cur + 2 * PAGE;
	if ((char *)syscall(SYS_brk, want) != want)
		return 1;
	want[-1] = 1;
	return (char *)syscall(SYS_brk, cur) == cur ? 0 : 2;
}

static int child_reads_zero(void *arg)
{
	return ((char *)arg)[0] == 0 ? 0 : 1;
}

static int child_vm_lck(void *arg)
{
	(void)arg;
	return (int)vm_lck();
}

static int child_writes(void *arg)
{
	((char *)arg)[0] = 'c';
	return 0;
}

/* Another thread writing its own mapping while this one's move and go. */
static volatile int stop;
static void *writer(void *arg)
{
	char *p = arg;
	long rounds = 0;
	while (!stop) {
		for (long i = 0; i < 4 * PAGE; i += PAGE)
			p[i] = (char)rounds;
		rounds++;
	}
	for (long i = 0; i < 4 * PAGE; i += PAGE)
		p[i] = 'w';
	return NULL;
}

int main(void)
{
	abi_init();

	section("mremap shrinks and grows");
	/* Three pages, two given back: room to grow into. */
	char *a = anon(3);
	munmap(a + PAGE, 2 * PAGE);
	memset(a, 'a', PAGE);
	char *r = mremap(a, PAGE, 3 * PAGE, 0);
	EXPECT_TRUE("grows in place into the free pages after it", r == a);
	if (r != a)
		return abi_done();
	EXPECT_TRUE("its bytes are kept", all(a, PAGE, 'a'));
	EXPECT_TRUE("the new pages read zero", all(a + PAGE, 2 * PAGE, 0));
	memset(a, 'b', 3 * PAGE);
	r = mremap(a, 3 * PAGE, PAGE + 1, 0);
	EXPECT_TRUE("shrinks in place (length rounded up)", r == a);
	EXPECT_TRUE("the kept pages' bytes", all(a, 2 * PAGE, 'b'));
	EXPECT_STR("the page given back", fault_at(a + 2 * PAGE), "SIGSEGV SEGV_MAPERR at the address");
	r = mremap(a + PAGE, PAGE, 2 * PAGE, 0);
	EXPECT_TRUE("the last page of a mapping grows alone", r == a + PAGE && all(a, 2 * PAGE, 'b'));
	munmap(a, 3 * PAGE);

	section("mremap moves");
	a = anon(2);
	char *b = a + PAGE;
	memset(a, 'm', PAGE);
	memset(b, 'n', PAGE);
	EXPECT_ERR("growing into the next mapping without MREMAP_MAYMOVE", mremap(a, PAGE, 2 * PAGE, 0), ENOMEM);
	munmap(b, PAGE);
	b = mmap(a + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	memset(b, 'n', PAGE);
	r = mremap(a, PAGE, 4 * PAGE, MREMAP_MAYMOVE);
	EXPECT_TRUE("MREMAP_MAYMOVE moves it", r != MAP_FAILED && r != a);
	EXPECT_TRUE("the bytes moved with it", r != MAP_FAILED && all(r, PAGE, 'm') && all(r + PAGE, 3 * PAGE, 0));
	EXPECT_STR("the old address", fault_at(a), "SIGSEGV SEGV_MAPERR at the address");
	EXPECT_TRUE("the next mapping is untouched", all(b, PAGE, 'n'));
	char *target = hole(4);
	char *moved = mremap(r, 4 * PAGE, 4 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, target);
	EXPECT_TRUE("MREMAP_FIXED puts it at new_address", moved == target && all(target, PAGE, 'm'));
	char *over = anon(2);
	memset(over, 'o', 2 * PAGE);
	moved = mremap(target, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, over + PAGE);
	EXPECT_TRUE("MREMAP_FIXED over a mapping replaces that page", moved == over + PAGE && all(over + PAGE, PAGE, 'm'));
	EXPECT_TRUE("the page before it stays", all(over, PAGE, 'o'));
	EXPECT_STR("the moved page's old address", fault_at(target), "SIGSEGV SEGV_MAPERR at the address");
	EXPECT_TRUE("the rest of the old mapping stays", all(target + PAGE, 3 * PAGE, 0));
	munmap(target, 4 * PAGE);
	munmap(over, 2 * PAGE);
	munmap(b, PAGE);

	/* A page from the middle of a mapping, moved and shrunk. */
	a = anon(4);
	for (int i = 0; i < 4; i++)
		memset(a + i * PAGE, '0' + i, PAGE);
	target = hole(1);
	moved = mremap(a + PAGE, 2 * PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, target);
	EXPECT_TRUE("two middle pages moved to one: the first", moved == target && all(target, PAGE, '1'));
	EXPECT_STR("both left the old mapping", fault_at(a + 2 * PAGE), "SIGSEGV SEGV_MAPERR at the address");
	EXPECT_TRUE("the pages around them stay", all(a, PAGE, '0') && all(a + 3 * PAGE, PAGE, '3'));
	munmap(a, 4 * PAGE);
	munmap(target, PAGE);

	section("mremap MREMAP_DONTUNMAP");
	a = anon(1);
	memset(a, 'd', PAGE);
	r = mremap(a, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
	EXPECT_TRUE("the pages move", r != MAP_FAILED && r != a && all(r, PAGE, 'd'));
	EXPECT_TRUE("the old range stays mapped, reading zero", all(a, PAGE, 0));
	EXPECT_ERR("with a new length", mremap(a, PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_DONTUNMAP), EINVAL);
	EXPECT_ERR("without MREMAP_MAYMOVE", mremap(a, PAGE, PAGE, MREMAP_DONTUNMAP), EINVAL);
	munmap(a, PAGE);
	munmap(r, PAGE);

	section("mremap of shared and file memory");
	char *s = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	s[0] = 's';
	char *s2 = mremap(s, PAGE, 64 * PAGE, MREMAP_MAYMOVE);
	EXPECT_TRUE("MAP_SHARED memory grows", s2 != MAP_FAILED && s2[0] == 's');
	EXPECT_STATUS("a child writes it", in_child(child_writes, s2), "exited 0");
	EXPECT_EQ("the parent sees it: still shared", s2[0], 'c');
	munmap(s2, 64 * PAGE);
	int fd = open("file", O_RDWR | O_CREAT | O_TRUNC, 0644);
	SETUP(fd);
	SETUP(write(fd, "file bytes", 10));
	char *f = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	char *f2 = mremap(f, PAGE, 2 * PAGE, MREMAP_MAYMOVE);
	EXPECT_TRUE("a file's private mapping keeps its bytes", f2 != MAP_FAILED && memcmp(f2, "file bytes", 10) == 0);
	munmap(f2, 2 * PAGE);

	section("mremap errors");
	a = anon(2);
	target = hole(2);
	EXPECT_ERR("MREMAP_FIXED without MREMAP_MAYMOVE", mremap(a, PAGE, PAGE, MREMAP_FIXED, target), EINVAL);
	EXPECT_ERR("an unknown flag", mremap(a, PAGE, PAGE, 8), EINVAL);
	EXPECT_ERR("an unaligned old address", mremap(a + 1, PAGE, PAGE, 0), EINVAL);
	EXPECT_ERR("an unaligned new address",
		   mremap(a, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, target + 1), EINVAL);
	EXPECT_ERR("new length 0", mremap(a, PAGE, 0, MREMAP_MAYMOVE), EINVAL);
	/* musl refuses such a length itself (ENOMEM): the kernel is asked. */
	EXPECT_ERR("a new length that rounds past the end", syscall(SYS_mremap, a, PAGE, -1L, MREMAP_MAYMOVE), EINVAL);
	EXPECT_ERR("old and new ranges overlap",
		   mremap(a, 2 * PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, a + PAGE), EINVAL);
	EXPECT_ERR("a new range past user space",
		   mremap(a, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)(1UL << 63)), EINVAL);
	EXPECT_ERR("an unmapped old address", mremap(target, PAGE, 2 * PAGE, MREMAP_MAYMOVE), EFAULT);
	EXPECT_ERR("shrinking at an unmapped address", mremap(target, 2 * PAGE, PAGE, 0), EFAULT);
	EXPECT_ERR("an old range longer than the mapping", mremap(a, 3 * PAGE, 4 * PAGE, MREMAP_MAYMOVE), EFAULT);
	EXPECT_ERR("old length 0 of private memory", mremap(a, 0, PAGE, MREMAP_MAYMOVE), EINVAL);
	EXPECT_ERR("a huge new length", mremap(a, PAGE, 1UL << 47, MREMAP_MAYMOVE), ENOMEM);
	EXPECT_TRUE("the mapping survived every error", all(a, 2 * PAGE, 0));
	munmap(a, 2 * PAGE);

	section("mremap while another thread writes");
	char *w = anon(4);
	pthread_t t;
	stop = 0;
	SETUP(pthread_create(&t, NULL, writer, w) == 0 ? 0 : -1);
	a = anon(1);
	memset(a, 'z', PAGE);
	int kept = 1;
	for (int i = 0; i < 200; i++) {
		char *n = mremap(a, PAGE, (i % 2 ? 1 : 3) * PAGE, MREMAP_MAYMOVE);
		if (n == MAP_FAILED || !all(n, PAGE, 'z')) {
			kept = 0;
			break;
		}
		a = n;
	}
	stop = 1;
	pthread_join(t, NULL);
	EXPECT_TRUE("200 moves keep the bytes", kept);
	EXPECT_TRUE("the other thread's mapping got all its writes",
		    w[0] == 'w' && w[PAGE] == 'w' && w[2 * PAGE] == 'w' && w[3 * PAGE] == 'w');
	munmap(w, 4 * PAGE);

	section("brk across fork");
	char *brk0 = (char *)syscall(SYS_brk, 0);
	EXPECT_TRUE("the parent grows its break", (char *)syscall(SYS_brk, brk0 + 3 * PAGE) == brk0 + 3 * PAGE);
	brk0[3 * PAGE - 1] = 1;
	EXPECT_STATUS("a child grows and shrinks it from there", in_child(child_grows_break, NULL), "exited 0");
	EXPECT_TRUE("the parent's is where it was", (char *)syscall(SYS_brk, 0) == brk0 + 3 * PAGE);
	syscall(SYS_brk, brk0);

	section("mincore");
	a = anon(4);
	EXPECT_STR("nothing touched", present(a, 4), "0000");
	a[0] = 1;
	read_byte(a + 2 * PAGE);
	EXPECT_STR("written and read pages are present", present(a, 4), "1010");
	unsigned char vec[8];
	EXPECT_OK("length 0", mincore(a, 0, vec));
	EXPECT_OK("a length not a page multiple", mincore(a, PAGE + 1, vec));
	EXPECT_ERR("an unaligned address", mincore(a + 1, PAGE, vec), EINVAL);
	EXPECT_ERR("a vector at a bad address", mincore(a, PAGE, BAD_PTR), EFAULT);
	EXPECT_ERR("a range past user space", mincore(a, 1UL << 62, vec), ENOMEM);
	munmap(a + PAGE, PAGE);
	memset(vec, 7, sizeof vec);
	EXPECT_ERR("a hole in the range", mincore(a, 4 * PAGE, vec), ENOMEM);
	EXPECT_EQ("the answer before the hole is written", vec[0] & 1, 1);
	EXPECT_ERR("an unmapped range", mincore(a + PAGE, PAGE, vec), ENOMEM);
	munmap(a, 4 * PAGE);

	section("madvise");
	a = anon(4);
	memset(a, 'q', 4 * PAGE);
	EXPECT_OK("MADV_DONTNEED on two pages", madvise(a + PAGE, 2 * PAGE, MADV_DONTNEED));
	EXPECT_TRUE("they read zero", all(a + PAGE, 2 * PAGE, 0));
	EXPECT_TRUE("the others keep their bytes", all(a, PAGE, 'q') && all(a + 3 * PAGE, PAGE, 'q'));
	memset(a, 'q', 4 * PAGE);
	EXPECT_OK("MADV_DONTNEED of a length not a page multiple", madvise(a, PAGE + 1, MADV_DONTNEED));
	EXPECT_STR("what is present after", present(a, 4), "0011");
	EXPECT_TRUE("takes both pages", all(a, 2 * PAGE, 0) && all(a + 2 * PAGE, 2 * PAGE, 'q'));
	EXPECT_OK("MADV_FREE", madvise(a, PAGE, MADV_FREE));
	EXPECT_OK("MADV_NORMAL", madvise(a, 4 * PAGE, MADV_NORMAL));
	EXPECT_OK("MADV_WILLNEED", madvise(a, 4 * PAGE, MADV_WILLNEED));
	EXPECT_OK("MADV_WIPEONFORK on private memory", madvise(a + 2 * PAGE, PAGE, MADV_WIPEONFORK));
	EXPECT_STATUS("a child reads zero there", in_child(child_reads_zero, a + 2 * PAGE), "exited 0");
	EXPECT_STATUS("and the bytes next to it", in_child(child_reads_zero, a + 3 * PAGE), "exited 1");
	EXPECT_EQ("the parent keeps its bytes", a[2 * PAGE], 'q');
	EXPECT_OK("MADV_KEEPONFORK", madvise(a + 2 * PAGE, PAGE, MADV_KEEPONFORK));
	EXPECT_STATUS("a child reads them again", in_child(child_reads_zero, a + 2 * PAGE), "exited 1");
	EXPECT_OK("length 0 at an unmapped address", madvise(hole(1), 0, MADV_DONTNEED));
	EXPECT_ERR("an unaligned address", madvise(a + 1, PAGE, MADV_NORMAL), EINVAL);
	EXPECT_ERR("unknown advice", madvise(a, PAGE, 1212), EINVAL);
	EXPECT_ERR("a length that rounds to 0", madvise(a, -1L, MADV_NORMAL), EINVAL);
	EXPECT_ERR("MADV_REMOVE on private memory", madvise(a, PAGE, MADV_REMOVE), EINVAL);
	munmap(a + PAGE, PAGE);
	memset(a, 'q', PAGE);
	memset(a + 2 * PAGE, 'q', 2 * PAGE);
	EXPECT_ERR("MADV_DONTNEED over a hole", madvise(a, 4 * PAGE, MADV_DONTNEED), ENOMEM);
	EXPECT_TRUE("the mapped pages were advised all the same", all(a, PAGE, 0) && all(a + 2 * PAGE, 2 * PAGE, 0));
	munmap(a, 4 * PAGE);
	EXPECT_ERR("an unmapped range", madvise(a, PAGE, MADV_NORMAL), ENOMEM);
	s = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	s[0] = 's';
	EXPECT_OK("MADV_DONTNEED on MAP_SHARED memory", madvise(s, PAGE, MADV_DONTNEED));
	EXPECT_EQ("its bytes stay (they are the shared object's)", s[0], 's');
	EXPECT_ERR("MADV_WIPEONFORK on MAP_SHARED memory", madvise(s, PAGE, MADV_WIPEONFORK), EINVAL);
	EXPECT_ERR("MADV_FREE on MAP_SHARED memory", madvise(s, PAGE, MADV_FREE), EINVAL);
	munmap(s, PAGE);
	fd = open("file", O_RDONLY);
	SETUP(fd);
	f = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	EXPECT_ERR("MADV_FREE on a file's mapping", madvise(f, PAGE, MADV_FREE), EINVAL);
	EXPECT_ERR("MADV_WIPEONFORK on a file's mapping", madvise(f, PAGE, MADV_WIPEONFORK), EINVAL);
	EXPECT_OK("MADV_DONTNEED on a file's mapping", madvise(f, PAGE, MADV_DONTNEED));
	EXPECT_TRUE("it reads the file's bytes again", memcmp(f, "file bytes", 10) == 0);
	munmap(f, PAGE);

	section("madvise while another thread writes");
	w = anon(4);
	stop = 0;
	SETUP(pthread_create(&t, NULL, writer, w) == 0 ? 0 : -1);
	for (int i = 0; i < 200; i++)
		madvise(w, 4 * PAGE, MADV_DONTNEED);
	stop = 1;
	pthread_join(t, NULL);
	EXPECT_TRUE("its last writes after the last MADV_DONTNEED are there",
		    w[0] == 'w' && w[PAGE] == 'w' && w[2 * PAGE] == 'w' && w[3 * PAGE] == 'w');
	munmap(w, 4 * PAGE);

	section("/proc/self/maps and smaps");
	/* A read-write middle between PROT_NONE pages: its own line on Linux. */
	char *g = mmap(NULL, 4 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(g == MAP_FAILED ? -1 : 0);
	SETUP(mprotect(g + PAGE, 2 * PAGE, PROT_READ | PROT_WRITE));
	EXPECT_STR("the read-write middle", map_line("/proc/self/maps", g + PAGE, g + 3 * PAGE, NULL), "rw-p");
	SETUP(mprotect(g + PAGE, PAGE, PROT_READ));
	EXPECT_STR("made read-only", map_line("/proc/self/maps", g + PAGE, g + 2 * PAGE, NULL), "r--p");
	EXPECT_STR("the rest stays", map_line("/proc/self/maps", g + 2 * PAGE, g + 3 * PAGE, NULL), "rw-p");
	g[2 * PAGE] = 1;
	EXPECT_STR("smaps Rss of a touched page", map_line("/proc/self/smaps", g + 2 * PAGE, g + 3 * PAGE, "Rss"), "4 kB");
	EXPECT_OK("mlock it", mlock(g + 2 * PAGE, PAGE));
	EXPECT_STR("smaps Locked", map_line("/proc/self/smaps", g + 2 * PAGE, g + 3 * PAGE, "Locked"), "4 kB");
	EXPECT_OK("munlock it", munlock(g + 2 * PAGE, PAGE));
	EXPECT_STR("smaps Locked after", map_line("/proc/self/smaps", g + 2 * PAGE, g + 3 * PAGE, "Locked"), "0 kB");
	SETUP(mprotect(g + PAGE, PAGE, PROT_WRITE));
	EXPECT_STR("write-only", map_line("/proc/self/maps", g + PAGE, g + 2 * PAGE, NULL), "-w-p");
	SETUP(mprotect(g + PAGE, PAGE, PROT_EXEC));
	EXPECT_STR("execute-only", map_line("/proc/self/maps", g + PAGE, g + 2 * PAGE, NULL), "--xp");
	char *wo = mmap(g + PAGE, PAGE, PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	EXPECT_STR("mmap write-only, shared, over it", map_line("/proc/self/maps", wo, wo + PAGE, NULL), "-w-s");
	SETUP(munmap(g + PAGE, PAGE));
	EXPECT_STR("an unmapped page has no line", map_line("/proc/self/maps", g + PAGE, g + 2 * PAGE, NULL), "no line");
	char *moved_g = mremap(g + 2 * PAGE, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, hole(1));
	EXPECT_STR("a moved page's line is at its new address",
		   map_line("/proc/self/maps", moved_g, moved_g + PAGE, NULL), "rw-p");
	munmap(moved_g, PAGE);
	munmap(g, 4 * PAGE);
	s = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	EXPECT_STR("MAP_SHARED memory", map_line("/proc/self/maps", s, s + PAGE, NULL), "rw-s");
	munmap(s, PAGE);
	EXPECT_TRUE("the [stack] line holds this function's locals", stack_line_holds_locals());

	section("mlock");
	EXPECT_EQ("VmLck at the start", vm_lck(), 0);
	a = anon(4);
	EXPECT_OK("mlock two pages", mlock(a + 1, PAGE));
	EXPECT_EQ("VmLck (the range widened to whole pages)", vm_lck(), 8);
	EXPECT_STR("locked pages are present", present(a, 4), "1100");
	EXPECT_ERR("MADV_DONTNEED on locked pages", madvise(a, PAGE, MADV_DONTNEED), EINVAL);
	EXPECT_OK("MADV_DONTNEED on the unlocked ones", madvise(a + 2 * PAGE, 2 * PAGE, MADV_DONTNEED));
	EXPECT_OK("mlock2 MLOCK_ONFAULT of the next two", syscall(SYS_mlock2, a + 2 * PAGE, 2 * PAGE, MLOCK_ONFAULT));
	EXPECT_STR("which stay absent", present(a, 4), "1100");
	EXPECT_OK("mlock of all four again", mlock(a, 4 * PAGE));
	EXPECT_EQ("VmLck counts each page once", vm_lck(), 16);
	EXPECT_OK("munlock one page", munlock(a + PAGE, PAGE));
	EXPECT_EQ("VmLck", vm_lck(), 12);
	EXPECT_OK("mlock of length 0", mlock(a, 0));
	EXPECT_ERR("mlock2 with an unknown flag", syscall(SYS_mlock2, a, PAGE, 2), EINVAL);
	munmap(a + 3 * PAGE, PAGE);
	EXPECT_ERR("mlock over a hole", mlock(a, 4 * PAGE), ENOMEM);
	EXPECT_ERR("munlock over a hole", munlock(a, 4 * PAGE), ENOMEM);
	EXPECT_ERR("mlock of an unmapped range", mlock(a + 3 * PAGE, PAGE), ENOMEM);
	EXPECT_OK("munlockall", munlockall());
	EXPECT_EQ("VmLck after munlockall", vm_lck(), 0);
	EXPECT_ERR("mlockall with no flag", mlockall(0), EINVAL);
	EXPECT_ERR("mlockall MCL_ONFAULT alone", mlockall(MCL_ONFAULT), EINVAL);
	EXPECT_ERR("mlockall with an unknown flag", mlockall(8), EINVAL);
	EXPECT_OK("mlockall MCL_CURRENT", mlockall(MCL_CURRENT));
	EXPECT_TRUE("VmLck is then above 0", vm_lck() > 0);
	EXPECT_OK("munlockall", munlockall());
	EXPECT_EQ("VmLck after munlockall", vm_lck(), 0);

	/* The hard limit stays: raising it back would need privilege. */
	struct rlimit old, rl;
	getrlimit(RLIMIT_MEMLOCK, &old);
	rl.rlim_cur = PAGE;
	rl.rlim_max = old.rlim_max;
	SETUP(setrlimit(RLIMIT_MEMLOCK, &rl));
	EXPECT_OK("as root, beyond RLIMIT_MEMLOCK", mlock(a, 2 * PAGE));
	munlock(a, 2 * PAGE);
	SETUP(seteuid(65534));
	EXPECT_OK("unprivileged, within it", mlock(a, PAGE));
	EXPECT_ERR("unprivileged, beyond it", mlock(a, 2 * PAGE), ENOMEM);
	EXPECT_ERR("unprivileged mlockall MCL_CURRENT beyond it", mlockall(MCL_CURRENT), ENOMEM);
	munlock(a, PAGE);
	SETUP(seteuid(0));
	rl.rlim_cur = 0;
	SETUP(setrlimit(RLIMIT_MEMLOCK, &rl));
	SETUP(seteuid(65534));
	EXPECT_ERR("unprivileged with RLIMIT_MEMLOCK 0", mlock(a, PAGE), EPERM);
	EXPECT_ERR("even over a hole", mlock(a + 3 * PAGE, PAGE), EPERM);
	EXPECT_ERR("mlockall too", mlockall(MCL_CURRENT), EPERM);
	EXPECT_OK("munlock needs no privilege", munlock(a, PAGE));
	SETUP(seteuid(0));
	SETUP(setrlimit(RLIMIT_MEMLOCK, &old));
	munmap(a, 3 * PAGE);
	EXPECT_EQ("VmLck at the end", vm_lck(), 0);
	char *l = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	EXPECT_TRUE("mmap MAP_LOCKED", l != MAP_FAILED);
	EXPECT_EQ("VmLck counts it", vm_lck(), 8);
	EXPECT_STATUS("a child's VmLck: locks are not inherited", in_child(child_vm_lck, NULL), "exited 0");
	EXPECT_STR("its pages are present", present(l, 2), "11");
	munmap(l + PAGE, PAGE);
	EXPECT_EQ("munmap unlocks what it takes", vm_lck(), 4);
	munmap(l, PAGE);
	return abi_done();
}
