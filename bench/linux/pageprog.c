/*
 * The page access program of Tender (seed 000, table 2): a small static
 * program whose BSS holds PAGES pages, each touched once, then exit.
 * Built four times, with PAGES = 0, 200, 400, 800.
 *
 * A write (not a read) touches each page: a read of untouched anonymous
 * memory maps the shared zero page, which is not what the paper measures
 * (real memory allocated at the first access).
 *
 * Run as a CGI program (the web experiment's page access CGI, seed 000
 * figs. 8-9: GATEWAY_INTERFACE is set) it answers with a small page after
 * the touches.
 *
 * With the argument --stat it prints the fault count the kernel keeps for
 * this process (field 10 of /proc/self/stat, minflt) after the touches,
 * so the harness can show it beside the parent's getrusage() figure.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PAGES
#error "build with -DPAGES=N"
#endif
#define PAGE 4096

#if PAGES > 0
static char bss[PAGES * PAGE];
#endif

static long stat_minflt(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* Field 2 (comm) may contain spaces: count fields after its ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	long v = -1;
	/* After ')' come fields 3 (state) ... 10 (minflt). */
	int field = 2;
	for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
		if (++field == 10) {
			sscanf(tok, "%ld", &v);
			break;
		}
	}
	return v;
}

int main(int argc, char **argv)
{
#if PAGES > 0
	for (long i = 0; i < PAGES; i++)
		((volatile char *)bss)[i * PAGE] = 1;
#endif
	if (getenv("GATEWAY_INTERFACE")) {
		/* One write: the answer's size is fixed, what the load generator checks. */
		static const char page[] = "Content-Type: text/plain\r\n\r\npage access program\n";
		if (write(1, page, sizeof page - 1) != (ssize_t)(sizeof page - 1))
			return 1;
	}
	if (argc > 1 && strcmp(argv[1], "--stat") == 0)
		printf("%ld\n", stat_minflt());
	return 0;
}
