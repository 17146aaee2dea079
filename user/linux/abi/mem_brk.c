/*
 * The program break: brk(0), growing and shrinking, what the memory holds,
 * and the requests Linux refuses (it answers them with the old break, never
 * with an error number).
 */
#include "abi.h"

#define PAGE 4096UL
#define ALIGN_UP(x) (((x) + PAGE - 1) & ~(PAGE - 1))

static void write_byte(void *p)
{
	*(volatile char *)p = 1;
}

int main(void)
{
	abi_init();
	/* No libc call below allocates: malloc could move the break itself. */
	unsigned long start = syscall(SYS_brk, 0);
	EXPECT_TRUE("brk(0) returns the current break", start != 0);
	EXPECT_TRUE("brk(0) again returns the same", (unsigned long)syscall(SYS_brk, 0) == start);
	unsigned long base = ALIGN_UP(start);

	section("growing");
	unsigned long top = base + 3 * PAGE + 100;
	EXPECT_TRUE("brk(base + 3 pages + 100) returns exactly that", (unsigned long)syscall(SYS_brk, top) == top);
	EXPECT_TRUE("brk(0) reports the unrounded value", (unsigned long)syscall(SYS_brk, 0) == top);
	char *mem = (char *)start;
	int zero = 1;
	for (unsigned long a = start; a < top; a++)
		zero &= mem[a - start] == 0;
	EXPECT_TRUE("the new memory reads zero", zero);
	EXPECT_EQ("writable up to the page end past the break",
		  catch_fault(write_byte, (void *)(ALIGN_UP(top) - 1), NULL), 0);
	siginfo_t si;
	EXPECT_STR("the page after it", signame(catch_fault(write_byte, (void *)ALIGN_UP(top), &si)), "SIGSEGV");
	EXPECT_EQ("si_code (SEGV_MAPERR)", si.si_code, SEGV_MAPERR);

	section("shrinking");
	char *p1 = (char *)(base + PAGE), *p2 = (char *)(base + 2 * PAGE);
	p1[2000] = 'k';
	p2[100] = 'g';
	unsigned long low = base + PAGE + 10;
	EXPECT_TRUE("brk(base + 1 page + 10) lowers it", (unsigned long)syscall(SYS_brk, low) == low);
	EXPECT_STR("the page past the new break's page", signame(catch_fault(write_byte, p2, &si)), "SIGSEGV");
	EXPECT_TRUE("si_addr is the address touched", si.si_addr == p2);
	EXPECT_TRUE("grow again", (unsigned long)syscall(SYS_brk, top) == top);
	/* The page holding the break is kept whole, so its tail keeps its bytes. */
	EXPECT_EQ("a byte past the lowered break, in its page, is kept", p1[2000], 'k');
	EXPECT_EQ("a byte in a page given back reads zero", p2[100], 0);

	section("refused requests");
	EXPECT_TRUE("brk below the program's data: the old break", (unsigned long)syscall(SYS_brk, 4096) == top);
	EXPECT_TRUE("brk far beyond memory: the old break",
		    (unsigned long)syscall(SYS_brk, top + (1UL << 46)) == top);
	void *wall = mmap((void *)(base + 8 * PAGE), PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			  -1, 0);
	EXPECT_TRUE("a mapping 8 pages above the heap", wall == (void *)(base + 8 * PAGE));
	EXPECT_TRUE("brk into it: the old break", (unsigned long)syscall(SYS_brk, base + 10 * PAGE) == top);
	/* The break must stay a page below the next mapping. */
	EXPECT_TRUE("brk up to it: the old break", (unsigned long)syscall(SYS_brk, base + 8 * PAGE) == top);
	EXPECT_TRUE("brk to a page below it: granted",
		    (unsigned long)syscall(SYS_brk, base + 7 * PAGE) == base + 7 * PAGE);
	EXPECT_TRUE("back to the start", (unsigned long)syscall(SYS_brk, start) == start);
	return abi_done();
}
