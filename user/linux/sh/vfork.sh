# busybox sh: timeout, whose vfork child writes what its parent reads
# (the watcher's pid) before it goes on; the command killed by the signal
# asked, the command's own status, a command that is not there.
exec 2>&1
mkdir -p /tmp/sh-vfork && cd /tmp/sh-vfork
echo "== timeout"
timeout 1 sleep 5; echo "timeout 1 sleep 5: $?"
timeout 5 true; echo "timeout 5 true: $?"
timeout 5 sh -c 'exit 3'; echo "the command's own status: $?"
timeout -s KILL 1 sleep 5; echo "with SIGKILL: $?"
timeout 1 /nonexistent/program; echo "a command that is not there: $?"
