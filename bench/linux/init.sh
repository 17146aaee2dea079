#!/bin/busybox sh
# /init of Tessera's Linux reference VM (an initramfs: busybox-static and the
# benchmark programs in /bench).  Kernel command line:
#   bench=<experiment>[,<experiment>...] | bench=all   what to run (default all)
#   bench_short                                       smoke-test iteration counts
# Output is the programs' BENCH lines on the serial console, then BENCH-DONE;
# then the VM powers off (QEMU exits).
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox --install -s /bin
export PATH=/bin

sel=all
short=
for word in $(cat /proc/cmdline); do
	case "$word" in
	bench=*) sel="${word#bench=}" ;;
	bench_short) short=--short ;;
	esac
done

# Facts the harness records next to the figures (not figures themselves).
echo "BENCH-INFO,kernel,$(uname -r)"
echo "BENCH-INFO,clocksource,$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
echo "BENCH-INFO,cpu,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "BENCH-INFO,cpu_mhz,$(grep -m1 'cpu MHz' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "BENCH-INFO,memtotal,$(grep -m1 MemTotal /proc/meminfo | tr -s ' ' | cut -d' ' -f2-)"

for b in syscall spawn pageaccess pagefault ipc transfer; do
	case ",$sel," in
	*,all,* | *,"$b",*)
		/bench/"$b" $short || echo "BENCH-ERROR,$b,exit status $?"
		;;
	esac
done
echo BENCH-DONE
# -f: no init system to ask; QEMU runs with -no-reboot, so reboot also exits.
poweroff -f || reboot -f
