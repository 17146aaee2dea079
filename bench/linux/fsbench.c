/*
 * File system operations on the ext2 disk (issue 17's list), in the folder
 * given on the command line:
 *
 *   seq_write          write() a 64 MiB file in 1 MiB calls (into the page cache)
 *   seq_write_fsync    the fsync() after it (the data goes to the disk)
 *   seq_read_cold      read it back in 1 MiB calls after the caches were
 *                      dropped (only with --drop-caches: `sync`, then
 *                      `echo 3 > /proc/sys/vm/drop_caches`, which needs root)
 *   seq_read_cached    read it again, now from the page cache
 *   pread_4k_cached    one 4 KiB pread at a random 4 KiB-aligned offset of the
 *                      cached file (mean of 1,000)
 *   pread_1b_cached    the same offsets, 1 byte each (mean of 1,000)
 *   pread_at_eof       a 4 KiB pread at the file's end, which reads nothing
 *                      (mean of 1,000)
 *   create_write_close create + write 4 KiB + close of 1,000 new files (total)
 *   list_dir           open, getdents64 to the end, close of that folder of
 *                      1,000 entries, cached (mean of 10)
 *   fsync_4k           pwrite of 4 KiB then fsync (mean of 20)
 *
 * Param: bytes for the sequential figures, files for the folder figures.
 * Under icount a "ns" is a guest instruction while the guest runs; while it
 * waits for the disk it is idle and QEMU (sleep=off) moves its clock to the
 * next timer, so figures that wait for the device (fsync above all) measure
 * the guest's timers there; plain TCG gives their wall time.
 *
 *   fs [--short] [--drop-caches] DIR
 */
#include "bench.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define MiB (1024L * 1024)

static char chunk[MiB];

static void drop_caches(void)
{
	sync();
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0 || write(fd, "3", 1) != 1)
		die("echo 3 > /proc/sys/vm/drop_caches");
	close(fd);
}

static uint64_t read_all(const char *path, long size)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open for reading");
	uint64_t t0 = now_ns();
	long done = 0;
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		done += n;
	uint64_t t1 = now_ns();
	if (n < 0 || done != size)
		die("read");
	close(fd);
	return t1 - t0;
}

static uint64_t list_once(const char *path, int *entries)
{
	static char buf[32768];
	uint64_t t0 = now_ns();
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		die("open folder");
	long n;
	int count = 0;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
		for (long off = 0; off < n; off += ((struct dirent *)(buf + off))->d_reclen)
			count++;
	close(fd);
	uint64_t t1 = now_ns();
	if (n < 0)
		die("getdents64");
	*entries = count;
	return t1 - t0;
}

int main(int argc, char **argv)
{
	int short_mode = 0, drop = 0;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--short") == 0)
			short_mode = 1;
		else if (strcmp(argv[i], "--drop-caches") == 0)
			drop = 1;
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else {
			fprintf(stderr, "usage: %s [--short] [--drop-caches] DIR\n", argv[0]);
			return 2;
		}
	}
	if (!dir) {
		fprintf(stderr, "usage: %s [--short] [--drop-caches] DIR\n", argv[0]);
		return 2;
	}
	if (chdir(dir) != 0)
		die("chdir");
	const long size = short_mode ? 4 * MiB : 64 * MiB;
	const int files = short_mode ? 50 : 1000;
	const int preads = short_mode ? 50 : 1000;
	const int listings = short_mode ? 2 : 10;
	const int fsyncs = short_mode ? 3 : 20;
	char param[32];
	memset(chunk, 'd', sizeof chunk);

	/* Sequential write, then its fsync. */
	snprintf(param, sizeof param, "%ld", size);
	int fd = open("big", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("create big");
	uint64_t t0 = now_ns();
	for (long done = 0; done < size; done += MiB)
		if (write(fd, chunk, MiB) != MiB)
			die("write");
	uint64_t t1 = now_ns();
	if (fsync(fd) != 0)
		die("fsync");
	uint64_t t2 = now_ns();
	close(fd);
	report("fs", "seq_write", param, (double)(t1 - t0), "ns");
	report("fs", "seq_write_fsync", param, (double)(t2 - t1), "ns");

	/* Sequential read, cold and cached. */
	if (drop) {
		drop_caches();
		report("fs", "seq_read_cold", param, (double)read_all("big", size), "ns");
	} else {
		printf("BENCH-INFO,fs_cold,not measured (no --drop-caches)\n");
	}
	read_all("big", size); /* make sure every page is cached */
	report("fs", "seq_read_cached", param, (double)read_all("big", size), "ns");

	/* Cached 4 KiB preads at random aligned offsets (a fixed sequence). */
	fd = open("big", O_RDONLY);
	if (fd < 0)
		die("open big");
	uint64_t x = 12345, total = 0;
	long pages = size / 4096;
	for (int i = 0; i < preads; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		off_t off = (off_t)((x >> 33) % pages) * 4096;
		t0 = now_ns();
		if (pread(fd, chunk, 4096, off) != 4096)
			die("pread");
		total += now_ns() - t0;
	}
	report("fs", "pread_4k_cached", "", (double)total / preads, "ns");

	/* 1-byte preads at the same offsets, and preads at the file's end. */
	x = 12345;
	total = 0;
	for (int i = 0; i < preads; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		off_t off = (off_t)((x >> 33) % pages) * 4096;
		t0 = now_ns();
		if (pread(fd, chunk, 1, off) != 1)
			die("pread of 1 byte");
		total += now_ns() - t0;
	}
	report("fs", "pread_1b_cached", "", (double)total / preads, "ns");
	total = 0;
	for (int i = 0; i < preads; i++) {
		t0 = now_ns();
		if (pread(fd, chunk, 4096, size) != 0)
			die("pread at the end");
		total += now_ns() - t0;
	}
	report("fs", "pread_at_eof", "", (double)total / preads, "ns");
	close(fd);
	unlink("big");

	/* 1,000 files: create + write 4 KiB + close, then list the folder. */
	snprintf(param, sizeof param, "%d", files);
	if (mkdir("many", 0755) != 0)
		die("mkdir");
	char name[64];
	t0 = now_ns();
	for (int i = 0; i < files; i++) {
		snprintf(name, sizeof name, "many/f%04d", i);
		int f = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (f < 0 || write(f, chunk, 4096) != 4096)
			die("create and write");
		close(f);
	}
	t1 = now_ns();
	report("fs", "create_write_close", param, (double)(t1 - t0), "ns");
	int entries;
	list_once("many", &entries);
	total = 0;
	for (int i = 0; i < listings; i++)
		total += list_once("many", &entries);
	if (entries != files + 2) {
		errno = EINVAL;
		die("listing: wrong number of entries");
	}
	report("fs", "list_dir", param, (double)total / listings, "ns");
	for (int i = 0; i < files; i++) {
		snprintf(name, sizeof name, "many/f%04d", i);
		unlink(name);
	}
	rmdir("many");

	/* A 4 KiB write made durable. */
	fd = open("synced", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("create synced");
	pwrite(fd, chunk, 4096, 0);
	fsync(fd);
	total = 0;
	for (int i = 0; i < fsyncs; i++) {
		chunk[0] = (char)i;
		t0 = now_ns();
		if (pwrite(fd, chunk, 4096, 0) != 4096 || fsync(fd) != 0)
			die("pwrite + fsync");
		total += now_ns() - t0;
	}
	close(fd);
	unlink("synced");
	report("fs", "fsync_4k", "", (double)total / fsyncs, "ns");
	return 0;
}
