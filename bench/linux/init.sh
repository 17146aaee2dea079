#!/bin/busybox sh
# /init of Tessera's Linux reference VM (an initramfs: busybox-static, the
# benchmark programs in /bench and, for the runs that need them, the
# Linux-ABI test programs in /abi and the storage modules in /lib/modules).
# Kernel command line:
#   bench=<experiment>[,<experiment>...] | bench=all   what to run (default all)
#   bench_short                                       smoke-test iteration counts
#   disk          load virtio-blk and ext4, mount /dev/vda (ext2) on /mnt
#   abi=all|<name>[,<name>...]     run Linux-ABI test programs (needs disk)
#   ltp=<first>:<count>            run entries of /mnt/ltp/runtest (needs disk)
#   web_serve     serve web.sh's root at port 80 of eth0 (virtio-net, QEMU's
#                 user network: 10.0.2.15/24) until stopped (needs disk)
# Output goes to the serial console, ending with BENCH-DONE, ABI-DONE or
# LTP-DONE; then the VM powers off (QEMU exits).
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox --install -s /bin
export PATH=/bin

sel=all
short=
disk=
abi=
ltp=
web_serve=
for word in $(cat /proc/cmdline); do
	case "$word" in
	bench=*) sel="${word#bench=}" ;;
	bench_short) short=--short ;;
	disk) disk=1 ;;
	abi=*) abi="${word#abi=}" ;;
	ltp=*) ltp="${word#ltp=}" ;;
	web_serve) web_serve=1 ;;
	esac
done

# Facts the harness records next to the figures (not figures themselves).
echo "BENCH-INFO,kernel,$(uname -r)"
echo "BENCH-INFO,clocksource,$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
echo "BENCH-INFO,cpu,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "BENCH-INFO,cpu_mhz,$(grep -m1 'cpu MHz' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "BENCH-INFO,memtotal,$(grep -m1 MemTotal /proc/meminfo | tr -s ' ' | cut -d' ' -f2-)"

finish() {
	echo "$1"
	# -f: no init system to ask; QEMU runs with -no-reboot, so reboot also exits.
	poweroff -f || reboot -f
}

mounted=
if [ -n "$disk" ]; then
	for m in $(cat /lib/modules/load.list); do
		insmod "/lib/modules/$m" || echo "BENCH-ERROR,disk,insmod $m failed"
	done
	# devtmpfs gives /dev/vda, and the device files the programs use
	# (/dev/zero, /dev/urandom, /dev/tty, /dev/full).
	mount -t devtmpfs devtmpfs /dev
	mkdir -p /dev/shm /dev/pts
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	mount -t devpts -o mode=620,ptmxmode=666 devpts /dev/pts
	i=0
	while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	mkdir -p /mnt
	if mount -t ext2 /dev/vda /mnt; then
		mounted=1
		echo "BENCH-INFO,disk,$(grep ' /mnt ' /proc/mounts | cut -d' ' -f1-4)"
	else
		echo "BENCH-ERROR,disk,mount -t ext2 /dev/vda failed"
	fi
fi

unmount() {
	cd /
	sync
	[ -n "$mounted" ] || return
	# A watcher of the last program may take a second to notice its end.
	for i in 1 2 3 4 5; do
		umount /mnt 2>/dev/null && return
		sleep 1
	done
	echo "BENCH-ERROR,disk,umount failed"
}

# Runs "$@" in the background with stdin from /dev/null and kills it after
# $1 seconds; sets $status (137 when killed).  No timeout(1): busybox's
# leaves a watcher process as the program's own child, which a program that
# waits for "any child" would see.  The watcher here is init's child and
# looks once a second, so nothing of it outlives the program by more.
run_limited() {
	limit=$1
	shift
	"$@" </dev/null &
	pid=$!
	# Out of the program's folder and files: nothing of the watcher may keep
	# the disk busy at umount.
	(
		cd /
		i=0
		while [ $i -lt "$limit" ]; do
			sleep 1
			kill -0 "$pid" 2>/dev/null || exit 0
			i=$((i + 1))
		done
		echo "killed after $limit s"
		kill -KILL "$pid"
	) </dev/null >/dev/console 2>&1 &
	watcher=$!
	wait "$pid"
	status=$?
	kill "$watcher" 2>/dev/null
}

if [ -n "$abi" ]; then
	[ -n "$mounted" ] || finish ABI-DONE
	mkdir -p /mnt/out /mnt/work
	for path in /abi/*; do
		p=${path#/abi/}
		case ",$abi," in
		*,all,* | *,"$p",*) ;;
		*) continue ;;
		esac
		mkdir -p "/mnt/work/$p"
		cd "/mnt/work/$p"
		# A fixed environment: the transcripts may show it.
		run_limited 300 env -i PATH=/bin HOME=/ TERM=linux "$path" \
			>"/mnt/out/$p.out" 2>"/mnt/out/$p.err"
		cd /
		echo "ABI-RESULT,$p,$status"
		# The console copy is for the log; the harness reads the files.
		sed "s/^/ABI-OUT,$p,/" "/mnt/out/$p.out"
		sed "s/^/ABI-ERR,$p,/" "/mnt/out/$p.err"
	done
	unmount
	finish ABI-DONE
fi

if [ -n "$web_serve" ]; then
	[ -n "$mounted" ] || finish BENCH-DONE
	ip link set lo up
	ip link set eth0 up
	ip addr add 10.0.2.15/24 dev eth0
	ip route add default via 10.0.2.2
	/bin/sh /bench/web.sh /mnt/www serve || echo "BENCH-ERROR,webab,exit status $?"
	unmount
	finish BENCH-DONE
fi

if [ -n "$ltp" ]; then
	[ -n "$mounted" ] || finish LTP-DONE
	first=${ltp%%:*}
	count=${ltp#*:}
	export LTPROOT=/mnt/ltp TMPDIR=/mnt/tmp PATH="/mnt/ltp/testcases/bin:/bin"
	# Test timeouts are stated for real hardware; this machine emulates.
	# The race tests that run for a set time (bind06: 300 s) get a tenth
	# of it, never less than their own minimum.
	export LTP_TIMEOUT_MUL=${LTP_TIMEOUT_MUL:-4} LTP_RUNTIME_MUL=${LTP_RUNTIME_MUL:-0.1} LTP_COLORIZE_OUTPUT=0
	[ -f /mnt/ltp/kconfig ] && export KCONFIG_PATH=/mnt/ltp/kconfig
	# The socket tests talk over the loopback interface.
	ip link set lo up
	# Tests on a loop device make their file system with mkfs.<type>:
	# busybox makes ext2.  LTP passes "-b 1024" as one word, which
	# e2fsprogs reads and busybox does not: the words are split again.
	printf '#!/bin/sh\nexec /bin/busybox mke2fs $*\n' >/bin/mkfs.ext2
	chmod 755 /bin/mkfs.ext2
	# World-writable like /tmp: some tests make their folder after giving up root.
	mkdir -p "$TMPDIR" /etc
	chmod 1777 "$TMPDIR"
	# Users and groups some tests look up by name.
	cat >/etc/passwd <<-EOF
		root:x:0:0:root:/root:/bin/sh
		bin:x:1:1:bin:/bin:/bin/false
		daemon:x:2:2:daemon:/:/bin/false
		nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	EOF
	cat >/etc/group <<-EOF
		root:x:0:
		bin:x:1:
		daemon:x:2:
		users:x:100:
		nogroup:x:65534:
	EOF
	n=0
	# runtest: one test a line, "<name> <command...>", comments removed.
	while read -r name cmd; do
		n=$((n + 1))
		[ "$n" -le "$first" ] && continue
		[ "$n" -gt $((first + count)) ] && break
		echo "LTP-START,$n,$name"
		cd "$TMPDIR"
		t0=$(cut -d' ' -f1 /proc/uptime)
		run_limited 900 sh -c "$cmd"
		t1=$(cut -d' ' -f1 /proc/uptime)
		cd /
		echo "LTP-RESULT,$n,$name,$status,$t0,$t1"
		sync
	done </mnt/ltp/runtest
	unmount
	finish LTP-DONE
fi

for b in syscall spawn pageaccess pagefault ipc transfer; do
	case ",$sel," in
	*,all,* | *,"$b",*)
		/bench/"$b" $short || echo "BENCH-ERROR,$b,exit status $?"
		;;
	esac
done
# The process network's workload (procnet.sh; Tessera runs the same
# script): its elapsed time by /proc/uptime, and the time the CPU was not
# idle by /proc/stat's idle and iowait ticks, around it (both in hundredths
# of a second: busybox's date has no nanoseconds).
case ",$sel," in
*,all,* | *,procnet,*)
	ticks() {
		read -r up _ </proc/uptime
		set -- $(grep '^cpu ' /proc/stat)
		echo "$(echo "$up" | tr -d .) $(($5 + $6))"
	}
	set -- $(ticks)
	u0=$1 i0=$2
	/bin/sh /bench/procnet.sh >/dev/null || echo "BENCH-ERROR,procnet,exit status $?"
	set -- $(ticks)
	echo "BENCH,procnet,elapsed,0,$((($1 - u0) * 10000000)),ns"
	echo "BENCH,procnet,busy,0,$((($1 - u0 - ($2 - i0)) * 10000000)),ns"
	;;
esac
# Storage: on the ext2 disk (see fsbench.c), only when one is mounted.
case ",$sel," in
*,fs,*)
	if [ -n "$mounted" ]; then
		mkdir -p /mnt/fsbench
		/bench/fs $short --drop-caches /mnt/fsbench || echo "BENCH-ERROR,fs,exit status $?"
	else
		echo "BENCH-ERROR,fs,no disk mounted"
	fi
	;;
esac
# The web server (web.sh: busybox httpd, its document root on the disk,
# loaded by webload over the loopback), only with a disk.
case ",$sel," in
*,web,*)
	if [ -n "$mounted" ]; then
		/bin/sh /bench/web.sh /mnt/www $short || echo "BENCH-ERROR,web,exit status $?"
	else
		echo "BENCH-ERROR,web,no disk mounted"
	fi
	;;
esac
unmount
finish BENCH-DONE
