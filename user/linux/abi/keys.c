/*
 * The kernel key retention service: add_key, request_key and keyctl on
 * "user", "logon" and "keyring" keys and the special keyrings, with the
 * errors: bad pointers, bad and stale serials, revoked, expired and
 * invalidated keys, another user's keys, cycles of keyrings, huge
 * payloads, a user's quota filled, and processes that end (or are killed)
 * holding keys.
 *
 * Serials are never printed (they are random on Linux); descriptions of
 * keys are (type, owner, permissions, name).  A key whose last holder
 * went is freed by Linux's collector a moment later, so such checks wait
 * for it a while.
 */
#include "abi.h"

#include <pthread.h>
#include <time.h>

#define SPEC_THREAD -1
#define SPEC_PROCESS -2
#define SPEC_SESSION -3
#define SPEC_USER -4
#define SPEC_USER_SESSION -5

#define K_GET_KEYRING_ID 0
#define K_JOIN 1
#define K_UPDATE 2
#define K_REVOKE 3
#define K_CHOWN 4
#define K_SETPERM 5
#define K_DESCRIBE 6
#define K_CLEAR 7
#define K_LINK 8
#define K_UNLINK 9
#define K_SEARCH 10
#define K_READ 11
#define K_SET_REQKEY 14
#define K_SET_TIMEOUT 15
#define K_INVALIDATE 21

#define BAD ((void *)16)
#define USER 1000

static long add_key(const char *type, const char *desc, const void *p, size_t n, long ring)
{
	return syscall(SYS_add_key, type, desc, p, n, ring);
}

static long keyctl(long op, long a, long b, long c, long d)
{
	return syscall(SYS_keyctl, op, a, b, c, d);
}

static long request_key(const char *type, const char *desc, const char *callout, long ring)
{
	return syscall(SYS_request_key, type, desc, callout, ring);
}

/* The description keyctl gives, or its error's name. */
static const char *describe(long id)
{
	static char buf[256];
	long n = keyctl(K_DESCRIBE, id, (long)buf, sizeof buf, 0);
	if (n < 0)
		return errname(errno);
	return buf;
}

static void sleep_ms(int ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

/* Waits (at most 3 s) until reading `id` fails with ENOKEY: its error. */
static const char *gone(long id)
{
	char b[8];
	for (int i = 0; i < 150; i++) {
		if (keyctl(K_READ, id, (long)b, sizeof b, 0) == -1 && errno == ENOKEY)
			return "ENOKEY";
		sleep_ms(20);
	}
	return errname(errno);
}

static void add_tests(void)
{
	section("add_key");
	long k = add_key("user", "k1", "hello", 5, SPEC_PROCESS);
	EXPECT_TRUE("a user key in the process keyring", k > 0);
	char buf[64] = {0};
	EXPECT_EQ("read: its length", keyctl(K_READ, k, (long)buf, sizeof buf, 0), 5);
	EXPECT_STR("read: its payload", buf, "hello");
	EXPECT_STR("describe", describe(k), "user;0;0;3f010000;k1");
	EXPECT_TRUE("the same name again: the same key, updated",
		    add_key("user", "k1", "bye", 3, SPEC_PROCESS) == k);
	memset(buf, 0, sizeof buf);
	EXPECT_EQ("read after the update", keyctl(K_READ, k, (long)buf, sizeof buf, 0), 3);
	EXPECT_STR("the new payload", buf, "bye");
	EXPECT_EQ("read with no buffer: the length", keyctl(K_READ, k, 0, 0, 0), 3);
	static char list[65536];
	read_text("/proc/keys", list, sizeof list);
	EXPECT_TRUE("/proc/keys lists it with its length", strstr(list, " user      k1: 3\n") != NULL);
	EXPECT_ERR("read into a bad buffer", keyctl(K_READ, k, (long)BAD, 3, 0), EFAULT);

	EXPECT_ERR("user key with no payload", add_key("user", "k2", "", 0, SPEC_PROCESS), EINVAL);
	static char big[1 << 20];
	EXPECT_OK("user key of 32767 bytes", add_key("user", "k3", big, 32767, SPEC_PROCESS));
	EXPECT_ERR("user key of 32768 bytes", add_key("user", "k3", big, 32768, SPEC_PROCESS), EINVAL);
	EXPECT_ERR("a payload of 1 MiB - 1", add_key("user", "k3", big, (1 << 20) - 1, SPEC_PROCESS), EINVAL);
	EXPECT_ERR("a payload of 1 MiB", add_key("user", "k3", big, 1 << 20, SPEC_PROCESS), EINVAL);
	EXPECT_ERR("a keyring with a payload", add_key("keyring", "r", "x", 1, SPEC_PROCESS), EINVAL);
	EXPECT_ERR("an unknown type", add_key("nosuch", "d", "x", 1, SPEC_PROCESS), ENODEV);
	EXPECT_ERR("a type starting with '.'", add_key(".user", "d", "x", 1, SPEC_PROCESS), EPERM);
	EXPECT_ERR("a keyring named '.x'", add_key("keyring", ".x", NULL, 0, SPEC_PROCESS), EPERM);
	EXPECT_ERR("a null payload with a length", add_key("user", "d", NULL, 10, SPEC_PROCESS), EFAULT);
	EXPECT_ERR("a bad type pointer", add_key(BAD, "d", "x", 1, SPEC_PROCESS), EFAULT);
	EXPECT_ERR("a bad description pointer", add_key("user", BAD, "x", 1, SPEC_PROCESS), EFAULT);
	EXPECT_ERR("a bad payload pointer", add_key("user", "d", BAD, 1, SPEC_PROCESS), EFAULT);
	EXPECT_ERR("a logon name without a service", add_key("logon", "nocolon", "x", 1, SPEC_PROCESS), EINVAL);
	long lg = add_key("logon", "svc:name", "secret", 6, SPEC_PROCESS);
	EXPECT_TRUE("a logon key", lg > 0);
	EXPECT_ERR("a logon key cannot be read", keyctl(K_READ, lg, (long)buf, sizeof buf, 0), EOPNOTSUPP);
	EXPECT_STR("describe the logon key", describe(lg), "logon;0;0;3d010000;svc:name");
	EXPECT_ERR("into a user key", add_key("user", "d", "x", 1, k), ENOTDIR);
	EXPECT_ERR("into serial 0", add_key("user", "d", "x", 1, 0), EINVAL);
	EXPECT_ERR("into a serial that is no key", add_key("user", "d", "x", 1, 0x7fffffff), ENOKEY);
	EXPECT_ERR("into a special id that is none", add_key("user", "d", "x", 1, -20), EINVAL);
}

static void keyring_tests(void)
{
	section("keyrings");
	EXPECT_ERR("no thread keyring yet", keyctl(K_GET_KEYRING_ID, SPEC_THREAD, 0, 0, 0), ENOKEY);
	long t = keyctl(K_GET_KEYRING_ID, SPEC_THREAD, 1, 0, 0);
	EXPECT_TRUE("made on request", t > 0);
	EXPECT_TRUE("then found", keyctl(K_GET_KEYRING_ID, SPEC_THREAD, 0, 0, 0) == t);
	EXPECT_STR("the thread keyring", describe(SPEC_THREAD), "keyring;0;0;3f010000;_tid");
	EXPECT_STR("the process keyring", describe(SPEC_PROCESS), "keyring;0;0;3f010000;_pid");
	EXPECT_STR("the session keyring", describe(SPEC_SESSION), "keyring;0;0;3f030000;_ses");
	EXPECT_STR("the user keyring", describe(SPEC_USER), "keyring;0;65534;1f3f0000;_uid.0");
	EXPECT_STR("the user-session keyring", describe(SPEC_USER_SESSION), "keyring;0;65534;1f3f0000;_uid_ses.0");
	EXPECT_ERR("id 0", keyctl(K_GET_KEYRING_ID, 0, 0, 0, 0), EINVAL);
	EXPECT_ERR("an unknown special id", keyctl(K_GET_KEYRING_ID, -20, 0, 0, 0), EINVAL);
	EXPECT_ERR("a serial that is no key", keyctl(K_GET_KEYRING_ID, 0x7fffffff, 0, 0, 0), ENOKEY);
	EXPECT_ERR("an unknown operation", keyctl(999, 0, 0, 0, 0), EOPNOTSUPP);

	long a = add_key("keyring", "a", NULL, 0, SPEC_PROCESS);
	long b = add_key("keyring", "b", NULL, 0, a);
	long u = add_key("user", "inner", "x", 1, b);
	EXPECT_TRUE("nested keyrings and a key", a > 0 && b > 0 && u > 0);
	EXPECT_ERR("a keyring linked into itself", keyctl(K_LINK, a, a, 0, 0), EDEADLK);
	EXPECT_ERR("a cycle", keyctl(K_LINK, a, b, 0, 0), EDEADLK);
	EXPECT_ERR("link into a user key", keyctl(K_LINK, b, u, 0, 0), ENOTDIR);
	EXPECT_TRUE("search finds the nested key",
		    keyctl(K_SEARCH, SPEC_PROCESS, (long)"user", (long)"inner", 0) == u);
	EXPECT_ERR("search for a name not there", keyctl(K_SEARCH, SPEC_PROCESS, (long)"user", (long)"none", 0),
		   ENOKEY);
	EXPECT_ERR("search with a bad type pointer", keyctl(K_SEARCH, SPEC_PROCESS, (long)BAD, (long)"inner", 0),
		   EFAULT);
	EXPECT_TRUE("search linking into the thread keyring",
		    keyctl(K_SEARCH, SPEC_PROCESS, (long)"user", (long)"inner", SPEC_THREAD) == u);
	int ids[4] = {0, 0, 0, 0};
	EXPECT_EQ("the thread keyring lists it", keyctl(K_READ, SPEC_THREAD, (long)ids, sizeof ids, 0), 4);
	EXPECT_TRUE("by its serial", ids[0] == u);
	EXPECT_OK("unlink", keyctl(K_UNLINK, u, SPEC_THREAD, 0, 0));
	EXPECT_ERR("unlink again", keyctl(K_UNLINK, u, SPEC_THREAD, 0, 0), ENOENT);
	EXPECT_EQ("the thread keyring is empty", keyctl(K_READ, SPEC_THREAD, (long)ids, sizeof ids, 0), 0);
	EXPECT_ERR("a keyring read into a buffer of 2 bytes", keyctl(K_READ, a, (long)ids, 2, 0), EINVAL);
	long second = add_key("user", "second", "x", 1, a);
	SETUP(second);
	memset(ids, 0, sizeof ids);
	EXPECT_EQ("a keyring read into a short buffer: the whole length", keyctl(K_READ, a, (long)ids, 4, 0), 8);
	EXPECT_TRUE("and nothing is copied", ids[0] == 0 && ids[1] == 0);
	EXPECT_EQ("into a buffer that holds it", keyctl(K_READ, a, (long)ids, sizeof ids, 0), 8);
	EXPECT_TRUE("both serials", (ids[0] == b && ids[1] == second) || (ids[0] == second && ids[1] == b));
	EXPECT_OK("clear", keyctl(K_CLEAR, a, 0, 0, 0));
	EXPECT_STR("what only the cleared keyring held is gone", gone(u), "ENOKEY");
	EXPECT_ERR("clear a user key", keyctl(K_CLEAR, add_key("user", "c", "x", 1, SPEC_PROCESS), 0, 0, 0),
		   ENOTDIR);
	EXPECT_ERR("update a keyring", keyctl(K_UPDATE, a, (long)"x", 1, 0), EOPNOTSUPP);

	long s1 = keyctl(K_JOIN, (long)"named", 0, 0, 0);
	EXPECT_TRUE("join a named session keyring", s1 > 0);
	EXPECT_TRUE("it is the session keyring", keyctl(K_GET_KEYRING_ID, SPEC_SESSION, 0, 0, 0) == s1);
	EXPECT_STR("describe it", describe(s1), "keyring;0;0;3f130000;named");
	/* Not searchable by its owner unless possessed: not found by name. */
	long s2 = keyctl(K_JOIN, (long)"named", 0, 0, 0);
	EXPECT_TRUE("join the name again: another keyring", s2 > 0 && s2 != s1);
	EXPECT_OK("let the owner search it", keyctl(K_SETPERM, s2, 0x3f1b0000, 0, 0));
	EXPECT_EQ("join the name now: 0, it is the session keyring already", keyctl(K_JOIN, (long)"named", 0, 0, 0),
		  0);
	EXPECT_ERR("join .builtin_trusted_keys", keyctl(K_JOIN, (long)".builtin_trusted_keys", 0, 0, 0), EPERM);
	EXPECT_ERR("join with a bad name pointer", keyctl(K_JOIN, (long)BAD, 0, 0, 0), EFAULT);
	EXPECT_TRUE("join a new anonymous one", keyctl(K_JOIN, 0, 0, 0, 0) != s1);

	EXPECT_EQ("set-reqkey: the old default", keyctl(K_SET_REQKEY, 3, 0, 0, 0), 0);
	EXPECT_EQ("set-reqkey no-change", keyctl(K_SET_REQKEY, -1, 0, 0, 0), 3);
	EXPECT_ERR("set-reqkey to the group keyring", keyctl(K_SET_REQKEY, 6, 0, 0, 0), EINVAL);
	EXPECT_ERR("set-reqkey to 99", keyctl(K_SET_REQKEY, 99, 0, 0, 0), EINVAL);
	EXPECT_EQ("set-reqkey back", keyctl(K_SET_REQKEY, 0, 0, 0, 0), 3);
}

static void state_tests(void)
{
	section("revoked, expired, invalidated");
	long k = add_key("user", "r", "x", 1, SPEC_PROCESS);
	char buf[8];
	EXPECT_OK("revoke", keyctl(K_REVOKE, k, 0, 0, 0));
	EXPECT_ERR("read a revoked key", keyctl(K_READ, k, (long)buf, sizeof buf, 0), EKEYREVOKED);
	EXPECT_ERR("revoke again", keyctl(K_REVOKE, k, 0, 0, 0), EKEYREVOKED);
	EXPECT_ERR("update a revoked key", keyctl(K_UPDATE, k, (long)"y", 1, 0), EKEYREVOKED);
	EXPECT_ERR("set a timeout on it", keyctl(K_SET_TIMEOUT, k, 5, 0, 0), EKEYREVOKED);
	EXPECT_TRUE("add_key of its name makes a new key", add_key("user", "r", "z", 1, SPEC_PROCESS) != k);
	long ring = add_key("keyring", "rv", NULL, 0, SPEC_PROCESS);
	keyctl(K_REVOKE, ring, 0, 0, 0);
	EXPECT_ERR("add into a revoked keyring", add_key("user", "d", "x", 1, ring), EKEYREVOKED);
	EXPECT_ERR("request_key into a revoked keyring", request_key("user", "d", NULL, ring), EKEYREVOKED);

	long e = add_key("user", "e", "x", 1, SPEC_PROCESS);
	EXPECT_OK("set a timeout of 1 s", keyctl(K_SET_TIMEOUT, e, 1, 0, 0));
	EXPECT_EQ("readable before", keyctl(K_READ, e, (long)buf, sizeof buf, 0), 1);
	sleep_ms(1500);
	EXPECT_ERR("expired after", keyctl(K_READ, e, (long)buf, sizeof buf, 0), EKEYEXPIRED);
	EXPECT_ERR("request_key passes over it", request_key("user", "e", NULL, 0), ENOKEY);
	EXPECT_ERR("keyctl search finds it expired", keyctl(K_SEARCH, SPEC_PROCESS, (long)"user", (long)"e", 0),
		   EKEYEXPIRED);
	EXPECT_ERR("request_key into it", request_key("user", "x", NULL, e), EKEYEXPIRED);

	long v = add_key("user", "v", "x", 1, SPEC_PROCESS);
	EXPECT_OK("invalidate", keyctl(K_INVALIDATE, v, 0, 0, 0));
	EXPECT_STR("an invalidated key is gone", gone(v), "ENOKEY");

	long p = add_key("user", "p", "x", 1, SPEC_PROCESS);
	EXPECT_ERR("setperm with unknown bits", keyctl(K_SETPERM, p, 0x40000000, 0, 0), EINVAL);
	EXPECT_OK("setperm: the possessor may only view", keyctl(K_SETPERM, p, 0x01000000, 0, 0));
	EXPECT_STR("describe: it may not even be found", describe(p), "EACCES");
	EXPECT_ERR("no longer writable", keyctl(K_UPDATE, p, (long)"y", 1, 0), EACCES);
	EXPECT_ERR("nor revocable", keyctl(K_REVOKE, p, 0, 0, 0), EACCES);
	EXPECT_ERR("nor linkable", keyctl(K_LINK, p, SPEC_THREAD, 0, 0), EACCES);
	EXPECT_ERR("nor its attributes set", keyctl(K_SET_TIMEOUT, p, 5, 0, 0), EACCES);
	EXPECT_OK("but unlinked from a keyring it may write", keyctl(K_UNLINK, p, SPEC_PROCESS, 0, 0));
	EXPECT_ERR("update with no payload", keyctl(K_UPDATE, add_key("user", "q", "x", 1, SPEC_PROCESS), 0, 0, 0),
		   EINVAL);
	static char page[8192];
	EXPECT_ERR("update with more than a page",
		   keyctl(K_UPDATE, add_key("user", "q", "x", 1, SPEC_PROCESS), (long)page, 4097, 0), EINVAL);
}

static void request_tests(void)
{
	section("request_key");
	long k = add_key("user", "wanted", "x", 1, SPEC_PROCESS);
	EXPECT_TRUE("finds a key of the process keyring", request_key("user", "wanted", NULL, 0) == k);
	EXPECT_TRUE("and links it where asked", request_key("user", "wanted", NULL, SPEC_THREAD) == k);
	EXPECT_TRUE("search of the thread keyring shows it",
		    keyctl(K_SEARCH, SPEC_THREAD, (long)"user", (long)"wanted", 0) == k);
	EXPECT_ERR("a key not there, no callout", request_key("user", "absent", NULL, 0), ENOKEY);
	EXPECT_ERR("a keyring not there, with a callout", request_key("keyring", "absent", "info", 0), EPERM);
	EXPECT_ERR("an unknown type", request_key("dead", "abc", "abc", 0), ENOKEY);
	EXPECT_ERR("a type starting with '.'", request_key(".type", "d", NULL, SPEC_PROCESS), EPERM);
	EXPECT_ERR("a bad type pointer", request_key(BAD, "d", NULL, SPEC_PROCESS), EFAULT);
	EXPECT_ERR("a bad description pointer", request_key("user", BAD, NULL, SPEC_PROCESS), EFAULT);
	EXPECT_ERR("a bad callout pointer", request_key("user", "d", BAD, SPEC_PROCESS), EFAULT);
	EXPECT_ERR("an empty description", request_key("user", "", NULL, SPEC_PROCESS), ENOKEY);
	EXPECT_ERR("into a serial that is no key", request_key("user", "wanted", NULL, 0x7fffffff), ENOKEY);

	/* No request-key program: the key to make is not made. */
	long ring = add_key("keyring", "dest", NULL, 0, SPEC_PROCESS);
	EXPECT_ERR("a key to make, no program to make it", request_key("user", "made", "info", ring), ENOENT);
	EXPECT_ERR("asked again", request_key("user", "made", "info", ring), ENOKEY);
	EXPECT_ERR("asked again without a callout", request_key("user", "made", NULL, ring), ENOKEY);
	EXPECT_EQ("what the destination keyring holds", keyctl(K_READ, ring, 0, 0, 0), 4);

	/* A session keyring the process may not write: a key that would be
	 * made there is refused before anything is asked for. */
	keyctl(K_JOIN, 0, 0, 0, 0);
	EXPECT_OK("setperm: search, read, view", keyctl(K_SETPERM, SPEC_SESSION, 0x0b000000, 0, 0));
	EXPECT_OK("request keys into the session keyring", keyctl(K_SET_REQKEY, 3, 0, 0, 0));
	EXPECT_ERR("a key to make there", request_key("user", "made2", "info", 0), EACCES);
	int ids[2];
	EXPECT_EQ("nothing was added", keyctl(K_READ, SPEC_SESSION, (long)ids, sizeof ids, 0), 0);
	keyctl(K_SET_REQKEY, 0, 0, 0, 0);
	keyctl(K_JOIN, 0, 0, 0, 0);
}

/* ---- another user, quotas, processes that end */

static int foreign_fn(void *arg)
{
	long k = *(long *)arg;
	char buf[8];
	if (setgid(USER) || setuid(USER))
		return 2;
	EXPECT_ERR("another user reads it", keyctl(K_READ, k, (long)buf, sizeof buf, 0), EACCES);
	EXPECT_ERR("revokes it", keyctl(K_REVOKE, k, 0, 0, 0), EACCES);
	EXPECT_ERR("describes it", keyctl(K_DESCRIBE, k, (long)buf, sizeof buf, 0), EACCES);
	EXPECT_ERR("links it", keyctl(K_LINK, k, SPEC_PROCESS, 0, 0), EACCES);
	EXPECT_ERR("searches for it", keyctl(K_SEARCH, SPEC_PROCESS, (long)"user", (long)"mine", 0), ENOKEY);
	EXPECT_ERR("chowns it", keyctl(K_CHOWN, k, USER, USER, 0), EACCES);
	long own = add_key("user", "own", "x", 1, SPEC_PROCESS);
	EXPECT_TRUE("its own key", own > 0);
	EXPECT_ERR("gives its key away", keyctl(K_CHOWN, own, 0, -1, 0), EACCES);
	EXPECT_STR("its user keyring", describe(SPEC_USER), "keyring;1000;65534;1f3f0000;_uid.1000");
	static char payload[5000];
	long err = 0;
	int n;
	for (n = 0; n < 10; n++) {
		char d[16];
		snprintf(d, sizeof d, "q%d", n);
		if (add_key("user", d, payload, sizeof payload, SPEC_PROCESS) == -1) {
			err = errno;
			break;
		}
	}
	EXPECT_STR("5000-byte keys until the quota is full", errname(err), "EDQUOT");
	EXPECT_TRUE("after a few", n >= 2 && n < 5);
	static char large[32767];
	EXPECT_ERR("a key of 32767 bytes is over the quota", add_key("user", "big", large, sizeof large, SPEC_PROCESS),
		   EDQUOT);
	EXPECT_OK("clear", keyctl(K_CLEAR, SPEC_PROCESS, 0, 0, 0));
	long again = -1;
	for (int i = 0; i < 150 && again == -1; i++) {
		again = add_key("user", "again", payload, sizeof payload, SPEC_PROCESS);
		if (again == -1)
			sleep_ms(20);
	}
	EXPECT_TRUE("the cleared keys' quota is given back", again > 0);
	return 0;
}

static int holder_fn(void *arg)
{
	int fd = *(int *)arg;
	long k = add_key("user", "held", "x", 1, SPEC_PROCESS);
	long t = add_key("user", "held", "x", 1, SPEC_THREAD);
	long s[2] = {k, t};
	write(fd, s, sizeof s);
	if (getenv("ABI_KEYS_HANG"))
		pause();
	return 0;
}

/* In a thread: its thread keyring, a key there, its process keyring. */
static void *thread_fn(void *arg)
{
	long *out = arg;
	out[0] = keyctl(K_GET_KEYRING_ID, SPEC_THREAD, 1, 0, 0);
	out[1] = add_key("user", "in-thread", "x", 1, SPEC_THREAD);
	out[2] = keyctl(K_GET_KEYRING_ID, SPEC_PROCESS, 0, 0, 0);
	return NULL;
}

static void thread_tests(void)
{
	section("threads");
	long mine = keyctl(K_GET_KEYRING_ID, SPEC_THREAD, 1, 0, 0);
	long out[3] = {0, 0, 0};
	pthread_t t;
	EXPECT_EQ("a thread", pthread_create(&t, NULL, thread_fn, out), 0);
	pthread_join(t, NULL);
	EXPECT_TRUE("has a thread keyring of its own", out[0] > 0 && out[0] != mine);
	EXPECT_TRUE("keeps a key there", out[1] > 0);
	EXPECT_TRUE("shares the process keyring",
		    out[2] == keyctl(K_GET_KEYRING_ID, SPEC_PROCESS, 0, 0, 0));
	EXPECT_TRUE("the main thread does not see its key",
		    keyctl(K_SEARCH, SPEC_THREAD, (long)"user", (long)"in-thread", 0) == -1 && errno == ENOKEY);
	EXPECT_STR("its key goes when it ends", gone(out[1]), "ENOKEY");
}

static void process_tests(void)
{
	section("other users and ending processes");
	long k = add_key("user", "mine", "x", 1, SPEC_PROCESS);
	EXPECT_STATUS("another user's attempts", in_child(foreign_fn, &k), "exited 0");
	EXPECT_OK("chown as root", keyctl(K_CHOWN, k, USER, -1, 0));
	EXPECT_STR("its new owner", describe(k), "user;1000;0;3f010000;mine");

	int p[2];
	SETUP(pipe(p));
	EXPECT_STATUS("a process ends holding keys", in_child(holder_fn, &p[1]), "exited 0");
	long s[2];
	read(p[0], s, sizeof s);
	EXPECT_STR("its process keyring's key is freed", gone(s[0]), "ENOKEY");
	EXPECT_STR("its thread keyring's key is freed", gone(s[1]), "ENOKEY");

	setenv("ABI_KEYS_HANG", "1", 1);
	pid_t pid = spawn_fn(holder_fn, &p[1]);
	read(p[0], s, sizeof s);
	unsetenv("ABI_KEYS_HANG");
	char buf[8];
	EXPECT_ERR("while it lives the key is its own", keyctl(K_READ, s[0], (long)buf, sizeof buf, 0), EACCES);
	kill(pid, SIGKILL);
	EXPECT_STATUS("killed", wait_status(pid), "killed by SIGKILL");
	EXPECT_STR("a killed holder's key is freed", gone(s[0]), "ENOKEY");
	close(p[0]);
	close(p[1]);
}

static void settings_tests(void)
{
	section("/proc/sys/kernel/keys");
	char t[64];
	EXPECT_TRUE("maxkeys", read_text("/proc/sys/kernel/keys/maxkeys", t, sizeof t) == 0 && !strcmp(t, "200\n"));
	EXPECT_TRUE("maxbytes",
		    read_text("/proc/sys/kernel/keys/maxbytes", t, sizeof t) == 0 && !strcmp(t, "20000\n"));
	EXPECT_TRUE("root_maxkeys",
		    read_text("/proc/sys/kernel/keys/root_maxkeys", t, sizeof t) == 0 && !strcmp(t, "1000000\n"));
	EXPECT_TRUE("root_maxbytes", read_text("/proc/sys/kernel/keys/root_maxbytes", t, sizeof t) == 0 &&
					     !strcmp(t, "25000000\n"));
	int fd = open("/proc/sys/kernel/keys/maxkeys", O_WRONLY);
	EXPECT_TRUE("root writes maxkeys", fd >= 0 && write(fd, "3\n", 2) == 2);
	close(fd);
	EXPECT_TRUE("read back", read_text("/proc/sys/kernel/keys/maxkeys", t, sizeof t) == 0 && !strcmp(t, "3\n"));
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(USER) || setuid(USER))
			_exit(2);
		int n = 0;
		while (n < 10 && add_key("keyring", "x", NULL, 0, SPEC_PROCESS) > 0)
			n++;
		_exit(errno == EDQUOT && n < 3 ? 0 : 1);
	}
	EXPECT_STATUS("a user's keys stop at maxkeys: EDQUOT", wait_status(pid), "exited 0");
	fd = open("/proc/sys/kernel/keys/maxkeys", O_WRONLY);
	EXPECT_TRUE("put back", fd >= 0 && write(fd, "200\n", 4) == 4);
	close(fd);
}

int main(void)
{
	abi_init();
	/* A session keyring of its own, whatever the system started it with. */
	SETUP(keyctl(K_JOIN, 0, 0, 0, 0));
	add_tests();
	keyring_tests();
	state_tests();
	request_tests();
	thread_tests();
	process_tests();
	settings_tests();
	return abi_done();
}
