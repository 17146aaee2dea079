#!/usr/bin/env bash
# The long fuzz run (kernel/src/fuzzrun.rs): `make fuzz CALLS=1000000
# SEED=1 SMP=4`. Boots Tessera with `fuzz=<calls> fuzz_seed=<seed>`, keeps
# the console in build/fuzz/, and writes the outcome to
# docs/results/fuzz.csv (one row per metric; the seed and CPUs in `param`).
set -euo pipefail
calls=${1:-1000000}
seed=${2:-1}
smp=${SMP:-4}
limit=${FUZZ_TIMEOUT:-7200}
mkdir -p build/fuzz docs/results
log=build/fuzz/fuzz-seed$seed-smp$smp.log
echo "fuzz: $calls calls, seed $seed, $smp CPUs (TCG; at most $limit s); console in $log"
status=0
SMP=$smp DISK=off CMDLINE="fuzz=$calls fuzz_seed=$seed" \
    timeout "$limit" cargo xtask run </dev/null >"$log" 2>&1 || status=$?
grep -E "FUZZ-(BEGIN|ERROR|DONE)|LEAK|panic" "$log" || true
done_line=$(grep -a "FUZZ-DONE" "$log" | tail -1 | tr -d "\r" || true)
if [ -z "$done_line" ]; then
    echo "fuzz: no FUZZ-DONE (exit status $status): the kernel died or hung; see $log" >&2
    exit 1
fi
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$done_line"; }
rounds=$(field rounds); asked=$(field calls); seconds=$(field seconds); ok=$(field ok)
leaks=$(grep -ac "LEAK" "$log" || true)
leaks=${leaks:-0}
param="seed$seed-smp$smp"
{
    echo "system,experiment,metric,param,unit,value,runs,min,max,q1,q3"
    for row in "calls_asked,calls,$asked" "rounds,rounds,$rounds" "rounds_leaking,rounds,$leaks" \
               "guest_seconds,s,$seconds" "passed,bool,$([ "$ok" = true ] && echo 1 || echo 0)"; do
        IFS=, read -r metric unit value <<<"$row"
        echo "tessera,fuzz,$metric,$param,$unit,$value,1,$value,$value,$value,$value"
    done
} >docs/results/fuzz.csv
echo "fuzz: $done_line -> docs/results/fuzz.csv"
[ "$ok" = true ]
