/*
 * The system's level: the counts of what a load may leak, taken before
 * and after it and compared (web_hostile, stress). On Tessera: the TCP/IP
 * server's sockets and clients, the kernel's live resources and the free
 * memory (/proc/tessera/net, /proc/tessera/res, /proc/meminfo, with what
 * the resource pool keeps counted as free). Linux, the reference, has no
 * such files: there the comparison is skipped and passes.
 */
#ifndef TESSERA_LEVELS_H
#define TESSERA_LEVELS_H

#include "abi.h"

#include <dirent.h>
#include <time.h>

ABI_FN long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

ABI_FN void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&t, NULL);
}

#define LEVELS 64

struct level {
	int n;
	char name[LEVELS][48];
	long value[LEVELS];
};

/* Adds the "name value" lines of `path` whose names `keep` lists, as "prefix.name". */
ABI_FN void read_level(struct level *l, const char *path, const char *prefix, const char *const *keep)
{
	static char text[16384];
	if (read_text(path, text, sizeof text) != 0)
		return;
	for (char *line = strtok(text, "\n"); line && l->n < LEVELS; line = strtok(NULL, "\n")) {
		char name[40];
		long v;
		if (sscanf(line, "%39[^: ]%*[: ]%ld", name, &v) != 2)
			continue;
		for (const char *const *k = keep; *k; k++)
			if (strcmp(name, *k) == 0) {
				snprintf(l->name[l->n], sizeof l->name[0], "%s.%s", prefix, name);
				l->value[l->n++] = v;
			}
	}
}

/* Appends the counter `name` = `v` to `l`. */
ABI_FN void add_level(struct level *l, const char *name, long v)
{
	if (l->n >= LEVELS)
		return;
	snprintf(l->name[l->n], sizeof l->name[0], "%s", name);
	l->value[l->n++] = v;
}

/*
 * The personality's supervisors (processes named "linux") and the regions
 * their spaces hold: an idle supervisor kept after a burst is a process,
 * a space and its regions, none of them lost (IDLE_SUPERVISORS_MAX).
 */
ABI_FN void take_supervisors(struct level *l)
{
	static char text[65536];
	static char spaces[64][32];
	int n = 0;
	long regions = 0, kib = 0;
	/* Counted 0 where unreadable: both levels need the same counters. */
	if (read_text("/proc/tessera/res/processes", text, sizeof text) != 0)
		text[0] = 0;
	for (char *line = strtok(text, "\n"); line && n < 64; line = strtok(NULL, "\n")) {
		char name[48], space[32];
		if (sscanf(line, "%*s %*s %47s pid %*s program %*s space %31s", name, space) == 2 &&
		    strcmp(name, "linux") == 0)
			snprintf(spaces[n++], sizeof spaces[0], "%s", space);
	}
	if (read_text("/proc/tessera/res/spaces", text, sizeof text) != 0)
		text[0] = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char id[32];
		long attached, held = 0;
		if (sscanf(line, "%31s %*s %ld regions attached, %ld KiB", id, &attached, &held) < 2)
			continue;
		for (int k = 0; k < n; k++)
			if (strcmp(id, spaces[k]) == 0) {
				regions += attached;
				kib += held;
			}
	}
	add_level(l, "sup.supervisors", n);
	add_level(l, "sup.regions", regions);
	add_level(l, "sup.kib", kib);
}

/* Tessera's counters of what the load may leak; none on Linux. */
ABI_FN void take_level(struct level *l)
{
	/*
	 * Not "clients": the server keeps a record per live client process, and
	 * the personality's pooled supervisors live on; their count is below.
	 */
	static const char *const net[] = { "sockets",	  "held_now", "orphans", "buffer_bytes",
					   "buffer_peak", "watches",  NULL };
	static const char *const res[] = { "Process", "VirtualSpace", "VirtualRegion", "VirtualUserSpace",
					   "Container", "Ica", "Endpoint", NULL };
	static const char *const mem[] = { "MemFree", NULL };
	l->n = 0;
	if (access("/proc/tessera/net", R_OK) != 0)
		return;
	read_level(l, "/proc/tessera/net", "net", net);
	read_level(l, "/proc/tessera/res", "res", res);
	read_level(l, "/proc/meminfo", "mem", mem);
	take_supervisors(l);
	/*
	 * The resource pool's own (seed 000): what it keeps for the next
	 * process is not lost, and by the paper's rules spaces and small
	 * regions stay there (their number follows the most processes at
	 * once, not the requests). Counted as free again.
	 */
	static const struct {
		const char *line, *level;
		int sign;
	} pooled[] = {
		{ "virtual space", "res.VirtualSpace", -1 },
		{ "virtual space with all regions attached", "res.VirtualSpace", -1 },
		{ "virtual region (by size)", "res.VirtualRegion", -1 },
		{ "text region with content", "res.VirtualRegion", -1 },
		/*
		 * A work area (a kernel space over a page's region) carries a new
		 * process's arguments until it first runs; the pool keeps every
		 * one it made (always usable, never reduced), as many as
		 * processes were ever being started at once: at 4 CPUs a burst
		 * may start one more than any before it.
		 */
		{ "work area (virtual kernel space)", "res.VirtualRegion", -1 },
		{ "pool memory:", "mem.MemFree", 1 },
	};
	static char text[8192];
	int fd = open("/proc/tessera/pool", O_RDONLY);
	if (fd < 0)
		return;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	text[n > 0 ? n : 0] = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		for (size_t k = 0; k < sizeof pooled / sizeof pooled[0]; k++) {
			size_t len = strlen(pooled[k].line);
			/* The name, then the count after blanks (not a longer name). */
			if (strncmp(line, pooled[k].line, len) != 0 || (line[len] != ' ' && pooled[k].sign < 0) ||
			    (pooled[k].sign < 0 && line[len + 1] != ' '))
				continue;
			long v = strtol(line + len, NULL, 10);
			for (int i = 0; i < l->n; i++)
				if (strcmp(l->name[i], pooled[k].level) == 0)
					l->value[i] += pooled[k].sign * v;
		}
}

/*
 * Whether `now` is back at its level. The TCP/IP server's counts must be
 * no more than `base`'s, the processes no more than the supervisors are
 * above theirs (the personality's pool of idle supervisors, at most
 * IDLE_SUPERVISORS_MAX, follows the last burst; a leaked process comes
 * with its supervisor, two processes for one supervisor more). Memory, spaces and regions are judged
 * against `peak`, the level after a first round of the same abuse: heaps
 * and caches keep what their peak took (a server's heap does not shrink),
 * so a leak is what a second, identical round takes on top: regions no
 * more, free memory no less than SLACK_KB below, or 1/16 of what the first
 * round took if more. The TCP/IP server's heap keeps the pages of the
 * most socket buffers it ever held at once (`buffer_peak`), and how many
 * sockets are still closing when the next ones open is a matter of timing:
 * a second round may go deeper than the first (seen: 884 KiB less free
 * memory, the peak 864 KiB, 9 sockets, higher). What its peak grew by
 * is memory the server holds, not lost, and is added back; the peak
 * itself is no count that comes back. Without `peak`, only the exact
 * counts.
 */
#define SLACK_KB 2048
/* The shared server's POOL_MAX. */
#define IDLE_SUPERVISORS_MAX 16
ABI_FN int exact(const char *name)
{
	return strncmp(name, "net.", 4) == 0 || strcmp(name, "res.Process") == 0;
}

/* The counter `name` of `l`, 0 where there is none (Linux). */
ABI_FN long value_of(const struct level *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (strcmp(l->name[i], name) == 0)
			return l->value[i];
	return 0;
}

ABI_FN int at_level(const struct level *base, const struct level *peak, const struct level *now, char *why,
		    size_t max)
{
	if (base->n != now->n || (peak && peak->n != now->n)) {
		snprintf(why, max, "%d counters, then %d", base->n, now->n);
		return 0;
	}
	int same = 1;
	size_t at = 0;
	why[0] = 0;
	for (int i = 0; i < base->n; i++) {
		const char *name = base->name[i];
		if ((!peak && !exact(name)) || strcmp(name, "net.buffer_peak") == 0 || strncmp(name, "sup.", 4) == 0)
			continue;
		const struct level *wanted = exact(name) ? base : peak;
		long want = wanted->value[i];
		long d = now->value[i] - want;
		if (peak && strncmp(name, "mem.", 4) == 0)
			d += (value_of(now, "net.buffer_peak") - value_of(peak, "net.buffer_peak")) / 1024;
		/* A server's heap may come back fragmented: 1/16 of what the peak took. */
		long slack = SLACK_KB;
		if (peak && (base->value[i] - peak->value[i]) / 16 > slack)
			slack = (base->value[i] - peak->value[i]) / 16;
		/*
		 * The personality keeps up to 16 idle supervisors: a few more or
		 * less, and with each one more a process, its space, its regions
		 * and its memory (as much as a supervisor holds now, on average).
		 */
		long sups = value_of(now, "sup.supervisors");
		long extra = sups - value_of(wanted, "sup.supervisors");
		extra = extra < 0 ? 0 : extra > IDLE_SUPERVISORS_MAX ? IDLE_SUPERVISORS_MAX : extra;
		long more = strcmp(name, "res.Process") == 0 ? extra : 0;
		/* An idle supervisor more holds its memory too (its space's). */
		if (peak && sups > 0 && strncmp(name, "mem.", 4) == 0)
			slack += extra * (value_of(now, "sup.kib") / sups);
		if (strcmp(name, "res.VirtualSpace") == 0)
			more = extra;
		else if (sups > 0 && (strcmp(name, "res.VirtualRegion") == 0 || strcmp(name, "res.VirtualUserSpace") == 0))
			more = extra * ((value_of(now, "sup.regions") + sups - 1) / sups);
		int ok = strncmp(name, "mem.", 4) == 0 ? d >= -slack : d <= more;
		if (!ok) {
			same = 0;
			if (at < max)
				at += (size_t)snprintf(why + at, max - at, "%s%s %ld, was %ld", at ? "; " : "", name,
						       now->value[i], want);
		}
	}
	return same;
}

/* What a failed comparison shows of the system, a line at a time. */
ABI_FN void dump(const char *path)
{
	static char text[65536];
	if (read_text(path, text, sizeof text) != 0)
		return;
	say("| %s:", path);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		say("| %s", line);
}

/* The Linux processes there are, by their /proc/PID/stat. */
ABI_FN void dump_procs(void)
{
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[64], buf[256];
		if (snprintf(path, sizeof path, "/proc/%s/stat", e->d_name) >= (int)sizeof path)
			continue;
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		char *nl = strchr(buf, '\n');
		if (nl)
			*nl = 0;
		say("| proc %.80s", buf);
	}
	closedir(d);
}

/* Waits up to 15 s (connections closing, children reaped) for the level to come back. */
ABI_FN int settle(const struct level *base, const struct level *peak, char *why, size_t max)
{
	struct level now;
	long until = now_ms() + 15000;
	int back;
	do {
		take_level(&now);
		back = at_level(base, peak, &now, why, max);
		if (!back)
			sleep_ms(250);
	} while (!back && now_ms() < until);
	return back;
}

ABI_FN void expect_level(const char *name, const struct level *base, const struct level *peak)
{
	char why[400] = "";
	int back = settle(base, peak, why, sizeof why);
	if (!back) {
		say("(%s)", why);
		dump("/proc/tessera/pool");
		dump("/proc/tessera/res");
		dump("/proc/tessera/res/processes");
		dump("/proc/tessera/res/spaces");
		dump("/proc/tessera/net");
		dump("/proc/tessera/servers");
		dump_procs();
	}
	EXPECT_TRUE(name, back);
}

#endif
