/*
 * Terminal ioctls on the console (/dev/console, QEMU's serial port): the
 * termios a console starts with and its round trip, window size and
 * SIGWINCH, TCFLSH, FIONREAD; then, in a session of its own, the console
 * as controlling terminal (TIOCSCTTY, /dev/tty, TIOCGSID), foreground
 * process groups (tcsetpgrp, SIGTTIN and SIGTTOU for the background, EIO
 * when they are ignored) and TIOCNOTTY.  Nothing is written to the
 * terminal: only its settings are read and changed, and restored.
 */
#include "abi.h"

#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <termios.h>

static struct termios orig;
static struct winsize orig_ws;
static volatile int winch;

static void on_winch(int s)
{
	(void)s;
	winch++;
}

static void flag(const char *name, tcflag_t field, tcflag_t bit)
{
	say("%s: %s", name, (field & bit) ? "on" : "off");
}

static int background_read(void *arg)
{
	int fd = (int)(long)arg;
	char c;
	return read(fd, &c, 1) == -1 && errno == EIO ? 0 : 1;
}

static int background_write(void *arg)
{
	int fd = (int)(long)arg;
	/* Stopped before a byte is written (TOSTOP): nothing reaches the console. */
	return write(fd, "x", 1) == 1 ? 0 : 1;
}

/* A grandchild in a background group of this session; its wait status. */
static int in_background(int (*fn)(void *), int fd, int ignore)
{
	pid_t g = fork();
	if (g == 0) {
		setpgid(0, 0);
		if (ignore)
			signal(ignore, SIG_IGN);
		_exit(fn((void *)(long)fd));
	}
	setpgid(g, g);
	int st;
	waitpid(g, &st, WUNTRACED);
	if (WIFSTOPPED(st)) {
		kill(g, SIGKILL);
		waitpid(g, NULL, 0);
	}
	return st;
}

static int session(void *arg)
{
	(void)arg;
	EXPECT_TRUE("setsid", setsid() == getpid());
	int fd = open("/dev/console", O_RDWR | O_NOCTTY);
	EXPECT_ERR("TIOCGPGRP before it is our terminal", ioctl(fd, TIOCGPGRP, &(pid_t){ 0 }), ENOTTY);
	EXPECT_OK("TIOCSCTTY", ioctl(fd, TIOCSCTTY, 0));
	int tty = open("/dev/tty", O_RDWR);
	EXPECT_TRUE("/dev/tty opens now", tty >= 0);
	pid_t pg = 0, sid = 0;
	EXPECT_OK("TIOCGPGRP", ioctl(fd, TIOCGPGRP, &pg));
	EXPECT_TRUE("the foreground group is ours", pg == getpgrp());
	EXPECT_OK("TIOCGSID", ioctl(tty, TIOCGSID, &sid));
	EXPECT_TRUE("the terminal's session is ours", sid == getsid(0));
	EXPECT_OK("TIOCSCTTY again, same session", ioctl(fd, TIOCSCTTY, 0));

	section("job control");
	struct termios t = orig;
	EXPECT_STATUS("a background read", in_background(background_read, tty, 0), "stopped by SIGTTIN");
	EXPECT_STATUS("a background read, SIGTTIN ignored (EIO)", in_background(background_read, tty, SIGTTIN),
		      "exited 0");
	t.c_lflag |= TOSTOP;
	ioctl(fd, TCSETS, &t);
	EXPECT_STATUS("a background write with TOSTOP", in_background(background_write, tty, 0), "stopped by SIGTTOU");
	t.c_lflag &= ~TOSTOP;
	ioctl(fd, TCSETS, &t);
	EXPECT_ERR("tcsetpgrp to no group", tcsetpgrp(tty, 0x7ffffff0), ESRCH);
	/* Our group is orphaned (our parent is in another session): from the
	 * background, terminal changes fail at once instead of stopping us. */
	pid_t g = fork();
	if (g == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(g, g);
	EXPECT_OK("tcsetpgrp to a group of our session", tcsetpgrp(tty, g));
	EXPECT_TRUE("tcgetpgrp", tcgetpgrp(tty) == g);
	EXPECT_ERR("tcsetpgrp from the background, in an orphaned group", tcsetpgrp(tty, getpgrp()), ENOTTY);
	signal(SIGTTOU, SIG_IGN);
	EXPECT_OK("tcsetpgrp back, from the background, SIGTTOU ignored", tcsetpgrp(tty, getpgrp()));
	signal(SIGTTOU, SIG_DFL);
	kill(g, SIGKILL);
	waitpid(g, NULL, 0);

	section("SIGWINCH");
	signal(SIGWINCH, on_winch);
	struct winsize ws = { 40, 120, 0, 0 };
	winch = 0;
	EXPECT_OK("TIOCSWINSZ 40x120", ioctl(tty, TIOCSWINSZ, &ws));
	EXPECT_EQ("SIGWINCH to the foreground group", winch, 1);
	EXPECT_OK("the same size again", ioctl(tty, TIOCSWINSZ, &ws));
	EXPECT_EQ("no SIGWINCH for no change", winch, 1);
	ioctl(tty, TIOCSWINSZ, &orig_ws);

	section("TIOCNOTTY");
	signal(SIGHUP, SIG_IGN);
	signal(SIGCONT, SIG_IGN);
	EXPECT_OK("TIOCNOTTY", ioctl(tty, TIOCNOTTY));
	EXPECT_ERR("/dev/tty after it", open("/dev/tty", O_RDWR), ENXIO);
	EXPECT_ERR("TIOCGPGRP after it", ioctl(fd, TIOCGPGRP, &pg), ENOTTY);
	return 0;
}

int main(void)
{
	abi_init();
	struct utsname u;
	uname(&u);
	if (strcmp(u.nodename, "(none)") != 0) {
		/* Taking over a named machine's console is not a test. */
		say("not a test machine: console tests skipped");
		return abi_done();
	}

	section("not a terminal");
	int p[2];
	SETUP(pipe(p));
	struct termios t;
	EXPECT_ERR("TCGETS on a pipe", ioctl(p[0], TCGETS, &t), ENOTTY);
	EXPECT_ERR("TCGETS on standard input (/dev/null)", ioctl(0, TCGETS, &t), ENOTTY);
	EXPECT_ERR("TIOCGWINSZ on a pipe", ioctl(p[0], TIOCGWINSZ, &t), ENOTTY);
	close(p[0]);
	close(p[1]);

	section("termios of the console");
	int fd = open("/dev/console", O_RDWR | O_NOCTTY);
	EXPECT_TRUE("/dev/console opens", fd >= 0);
	EXPECT_OK("TCGETS", ioctl(fd, TCGETS, &orig));
	flag("ICANON", orig.c_lflag, ICANON);
	flag("ECHO", orig.c_lflag, ECHO);
	flag("ISIG", orig.c_lflag, ISIG);
	flag("IEXTEN", orig.c_lflag, IEXTEN);
	flag("TOSTOP", orig.c_lflag, TOSTOP);
	flag("OPOST", orig.c_oflag, OPOST);
	flag("ONLCR", orig.c_oflag, ONLCR);
	flag("ICRNL", orig.c_iflag, ICRNL);
	flag("IXON", orig.c_iflag, IXON);
	flag("CREAD", orig.c_cflag, CREAD);
	say("CSIZE: %s", (orig.c_cflag & CSIZE) == CS8 ? "CS8" : "other");
	say("c_cc: VINTR %d VQUIT %d VERASE %d VKILL %d VEOF %d VSUSP %d VMIN %d VTIME %d", orig.c_cc[VINTR],
	    orig.c_cc[VQUIT], orig.c_cc[VERASE], orig.c_cc[VKILL], orig.c_cc[VEOF], orig.c_cc[VSUSP], orig.c_cc[VMIN],
	    orig.c_cc[VTIME]);
	t = orig;
	t.c_lflag &= ~(ECHO | ICANON);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 5;
	EXPECT_OK("TCSETS without ECHO and ICANON, VMIN 0, VTIME 5", ioctl(fd, TCSETS, &t));
	struct termios back;
	ioctl(fd, TCGETS, &back);
	EXPECT_TRUE("TCGETS reads it back",
		    !(back.c_lflag & (ECHO | ICANON)) && back.c_cc[VMIN] == 0 && back.c_cc[VTIME] == 5);
	EXPECT_OK("TCSETSW (after output drains) restores", ioctl(fd, TCSETSW, &orig));
	ioctl(fd, TCGETS, &back);
	EXPECT_TRUE("restored", back.c_lflag == orig.c_lflag && back.c_cc[VMIN] == orig.c_cc[VMIN]);
	EXPECT_OK("TCSETSF (and flush input)", ioctl(fd, TCSETSF, &orig));
	EXPECT_ERR("TCSETS from a bad pointer", ioctl(fd, TCSETS, BAD_PTR), EFAULT);
	EXPECT_ERR("TCGETS to a bad pointer", ioctl(fd, TCGETS, BAD_PTR), EFAULT);

	section("other console ioctls");
	EXPECT_OK("TIOCGWINSZ", ioctl(fd, TIOCGWINSZ, &orig_ws));
	say("window size of a serial console: %d rows, %d columns", orig_ws.ws_row, orig_ws.ws_col);
	struct winsize ws = { 30, 100, 0, 0 }, wb;
	EXPECT_OK("TIOCSWINSZ 30x100", ioctl(fd, TIOCSWINSZ, &ws));
	ioctl(fd, TIOCGWINSZ, &wb);
	EXPECT_TRUE("reads back", wb.ws_row == 30 && wb.ws_col == 100);
	ioctl(fd, TIOCSWINSZ, &orig_ws);
	int avail = -1;
	EXPECT_OK("FIONREAD", ioctl(fd, FIONREAD, &avail));
	EXPECT_EQ("bytes waiting", avail, 0);
	EXPECT_OK("TCFLSH TCIFLUSH", ioctl(fd, TCFLSH, TCIFLUSH));
	EXPECT_ERR("TCFLSH 7", ioctl(fd, TCFLSH, 7), EINVAL);
	pid_t pg;
	EXPECT_ERR("TIOCGPGRP: not our controlling terminal", ioctl(fd, TIOCGPGRP, &pg), ENOTTY);
	EXPECT_ERR("an unknown terminal ioctl", ioctl(fd, 0x54ff, 0), ENOTTY);

	section("a controlling terminal");
	EXPECT_STATUS("the session", in_child(session, NULL), "exited 0");
	ioctl(fd, TCSETS, &orig);
	ioctl(fd, TIOCSWINSZ, &orig_ws);
	close(fd);
	return abi_done();
}
