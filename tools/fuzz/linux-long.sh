#!/usr/bin/env bash
# The long runs of two Linux-ABI test programs that `make test` runs short:
#   make linux-fuzz CALLS=1000000 SEED=1 SMP=4   user/linux/abi/fuzz.c
#   make linux-stress ROUNDS=10000 SMP=4         user/linux/abi/stress.c
# Boots the Linux personality on a copy of the system disk, runs the
# program from busybox's shell as the tests do, keeps the console in
# build/fuzz/, and writes the outcome to docs/results/linux-NAME.csv.
# Usage: linux-long.sh fuzz CALLS SEED | linux-long.sh stress ROUNDS
set -euo pipefail
name=$1
shift
case $name in
fuzz) args="${1:-1000000} ${2:-1}"; param="calls${1:-1000000}-seed${2:-1}" ;;
stress) args="${1:-10000}"; param="rounds${1:-10000}" ;;
*) echo "linux-long: fuzz or stress, not '$name'" >&2; exit 2 ;;
esac
smp=${SMP:-4}
limit=${LONG_TIMEOUT:-10800}
param="$param-smp$smp"
mkdir -p build/fuzz docs/results
cargo xtask disk >/dev/null
disk=build/fuzz/linux-disk.img
cp --sparse=always build/images/system.img "$disk"
log=build/fuzz/linux-$name-$param.log
line="mkdir -p /tmp/$name && cd /tmp/$name && /linux/abi/$name $args </dev/null"
echo "linux-long: $name $args, $smp CPUs (TCG; at most $limit s); console in $log"
start=$(date +%s)
status=0
SMP=$smp DISK=$disk CMDLINE="servers=servers.linux.conf run=linux args=/bin/sh,-c,${line// /+}" \
    timeout "$limit" cargo xtask run </dev/null >"$log" 2>&1 || status=$?
seconds=$(($(date +%s) - start))
# The transcript (the console's lines end in CR LF): its lines, and the
# count line that ends it.
text=$(tr -d '\r' <"$log")
grep -a -E "^(==|[^|(].*: (yes|no|[0-9]+)( FAIL.*)?$|-- )" <<<"$text" || true
summary=$(grep -a -E "^-- [0-9]+ checks, [0-9]+ failed" <<<"$text" | tail -1)
made=$(sed -n "s/^calls made of [0-9]*: \([0-9]*\)$/\1/p" <<<"$text" | tail -1)
passed=0
[[ "$summary" == *", 0 failed" ]] && passed=1
{
    echo "system,experiment,metric,param,unit,value,runs,min,max,q1,q3"
    rows=("host_seconds,s,$seconds" "passed,bool,$passed")
    [ -n "$made" ] && rows+=("calls_made,calls,$made")
    for row in "${rows[@]}"; do
        IFS=, read -r metric unit value <<<"$row"
        echo "tessera,linux-$name,$metric,$param,$unit,$value,1,$value,$value,$value,$value"
    done
} >"docs/results/linux-$name.csv"
echo "linux-long: $name: ${summary:-no transcript} (exit status $status) -> docs/results/linux-$name.csv"
[ "$passed" = 1 ]
