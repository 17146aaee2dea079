#!/bin/sh
# LTP's system-call tests on Tessera's Linux personality: busybox's shell
# runs entries FIRST+1 .. FIRST+COUNT of /ltp/runtest, each in TMPDIR under
# a watchdog, and reports them as the Linux reference VM's /init does
# (bench/linux/init.sh): LTP-START, LTP-RESULT, LTP-DONE, which
# tools/bench/ltp.py reads from the console.
#   /ltp/run.sh FIRST COUNT LIMIT      (LIMIT: seconds a test may take)
first=$1
count=$2
limit=${3:-300}
export LTPROOT=/ltp TMPDIR=/tmp/ltp PATH=/ltp/testcases/bin:/bin
# The same settings as on Linux: timeouts for an emulated machine, tests
# that run for a set time run a tenth of it.
export LTP_TIMEOUT_MUL=4 LTP_RUNTIME_MUL=0.1 LTP_COLORIZE_OUTPUT=0
# Linux's configuration, less what Tessera has otherwise: its loop
# driver is built in, not a module.
if [ -f /ltp/kconfig ]; then
	sed 's/^CONFIG_BLK_DEV_LOOP=m$/CONFIG_BLK_DEV_LOOP=y/' /ltp/kconfig >/ltp/kconfig.tessera
	export KCONFIG_PATH=/ltp/kconfig.tessera
fi
mkdir -p "$TMPDIR"
# Tests on a loop device make their file system with mkfs.<type>, as on
# Linux's VM (bench/linux/init.sh). The loop driver is part of the
# personality: built in, as LTP reads it from modules.builtin.
# Unquoted, as there: LTP passes an option and its value as one word.
printf '#!/bin/sh\nexec /bin/busybox mke2fs $*\n' >/bin/mkfs.ext2
chmod 755 /bin/mkfs.ext2
modules=/lib/modules/$(uname -r)
mkdir -p "$modules"
: >"$modules/modules.dep"
echo kernel/drivers/block/loop.ko >"$modules/modules.builtin"
chmod 1777 "$TMPDIR"
# A test under a watchdog: killed after `limit` seconds (status 137, as on
# Linux's /init). busybox's `timeout` needs a vfork that shares memory,
# which the personality does not give yet.
run_limited() {
	"$@" </dev/null &
	pid=$!
	(
		i=0
		while [ $i -lt "$limit" ]; do
			sleep 1
			kill -0 "$pid" 2>/dev/null || exit 0
			i=$((i + 1))
		done
		echo "killed after $limit s"
		kill -KILL "$pid"
	) </dev/null &
	watcher=$!
	wait "$pid"
	status=$?
	kill "$watcher" 2>/dev/null
}

n=0
while read -r name cmd; do
	n=$((n + 1))
	[ "$n" -le "$first" ] && continue
	[ "$n" -gt $((first + count)) ] && break
	echo "LTP-START,$n,$name"
	cd "$TMPDIR"
	t0=$(date +%s)
	run_limited sh -c "$cmd"
	t1=$(date +%s)
	cd /
	echo "LTP-RESULT,$n,$name,$status,$t0,$t1"
	sync
done </ltp/runtest
echo LTP-DONE
