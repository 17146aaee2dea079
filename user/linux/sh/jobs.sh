# busybox sh: background jobs, wait, and signals between processes.
mkdir -p /tmp/sh-jobs && cd /tmp/sh-jobs
echo "== background and wait"
sleep 0 &
wait $! && echo "waited for the background job: $?"
(exit 7) &
wait $!; echo "its status: $?"
echo "== signals"
sleep 5 &
p=$!
kill -TERM $p
wait $p; echo "killed by SIGTERM: $?"
trap 'echo "caught USR1"' USR1
kill -USR1 $$
echo "== a pipeline in the background"
(seq 3 | tr '\n' ,; echo) > out &
wait
cat out
