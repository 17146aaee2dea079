/*
 * First-touch fault on anonymous memory: map N fresh pages, write one byte
 * to each, unmap; the time per page is the cost of one demand-paging fault
 * (trap, allocate and zero a frame, map it, return) plus a store.
 *
 * Transparent huge pages are refused with madvise so that every touch is a
 * 4 KiB fault, the case the papers discuss; minflt_per_page shows it (1.00).
 */
#include "bench.h"
#include <sys/mman.h>

#define PAGE 4096

int main(int argc, char **argv)
{
	/* ITERATIONS here = pages per mapping; 4 rounds of fresh mappings. */
	struct bench_args a = parse_args(argc, argv, 4096, 16);
	const int rounds = a.short_mode ? 1 : 4;
	size_t len = (size_t)a.iters * PAGE;
	uint64_t total = 0;
	long flt = 0;

	for (int r = -1; r < rounds; r++) { /* round -1 is a warm-up */
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
		madvise(p, len, MADV_NOHUGEPAGE);
		long f0 = minflt_self();
		uint64_t t0 = now_ns();
		for (long i = 0; i < a.iters; i++)
			((volatile char *)p)[i * PAGE] = 1;
		uint64_t t1 = now_ns();
		long f1 = minflt_self();
		if (r >= 0) {
			total += t1 - t0;
			flt += f1 - f0;
		}
		munmap(p, len);
	}
	double pages = (double)a.iters * rounds;
	report("pagefault", "anon_first_touch", "", (double)total / pages, "ns");
	report_count("pagefault", "minflt_per_page", "", (double)flt / pages);
	return 0;
}
