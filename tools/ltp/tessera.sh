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
[ -f /ltp/kconfig ] && export KCONFIG_PATH=/ltp/kconfig
mkdir -p "$TMPDIR"
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
