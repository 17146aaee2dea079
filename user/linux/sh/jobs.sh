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
# The kill is a job of its own: busybox's shell reaps, without a word,
# a child that ended before the command that ended it is over (when the
# SIGCHLD comes that soon, on Linux too); one that ends while `wait`
# waits for it, it reports ("Terminated").
kill -TERM $p &
wait $p; echo "killed by SIGTERM: $?"
trap 'echo "caught USR1"' USR1
kill -USR1 $$
echo "== a pipeline in the background"
(seq 3 | tr '\n' ,; echo) > out &
wait
cat out
