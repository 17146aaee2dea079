#!/bin/sh
# The workload of the process-network experiment (`procnet`, seed 003,
# which ran a C compiler and an editor on UNIX V6): ordinary commands of
# busybox over a few files, joined by pipes, in a fresh folder of /tmp.
# The same script runs on Tessera's personality and on the reference VM
# (bench/linux/init.sh); what is measured is how long it takes and what
# it costs the system. Its output is the same on both.
set -e
w=/tmp/procnet
rm -rf "$w"
mkdir -p "$w"
# The input: this script, numbers and busybox's own list of applets (the
# same files on every system that has this busybox).
{
	cat "$0"
	seq 1 2500
	busybox --help
} >"$w/text"
cd "$w"
busybox --list >applets
i=0
while [ $i -lt 4 ]; do
	sort text applets | uniq -c | sort -rn >counts
	sed -e 's/[aeiou]/_/g' text | tr a-z A-Z >upper
	grep -c e text applets >hits || true
	awk '{ n += NF } END { print n }' text upper >words
	tar cf bundle.tar text applets counts upper
	gzip -c bundle.tar >bundle.tgz
	gunzip -c bundle.tgz | md5sum >sum
	cp text copy
	cmp text copy
	rm copy
	ls -l /bin | wc -l >listing
	head -n 20 counts | cut -c1-30 >top
	i=$((i + 1))
done
cat words
cd /
rm -rf "$w"
