# busybox sh: many short children and signal handlers in a row. Each fork
# and each handler's return has the supervisor read the shell's registers
# the moment its call arrives; at several CPUs the shell may not be asleep
# in the call yet (tests the supervisor's patience with a busy frame).
set -e
mkdir -p /tmp/sh-churn && cd /tmp/sh-churn
echo "== forks"
i=0; s=0
while [ $i -lt 150 ]; do
	v=$(echo $i)
	s=$((s + v))
	i=$((i + 1))
done
echo "sum of what 150 sub-shells printed: $s"
echo "== pipelines"
n=0
for w in a b c d e f g h i j k l m n o p q r s t; do
	n=$((n + $(echo $w | wc -c)))
done
echo "bytes through 20 pipelines: $n"
echo "== handlers"
t=0
trap 't=$((t + 1))' USR1
i=0
while [ $i -lt 150 ]; do
	kill -USR1 $$
	i=$((i + 1))
done
echo "handlers run: $t"
