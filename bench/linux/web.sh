#!/bin/sh
# The web-server experiment (seed 000, figs. 5-10, tables 4-5), the same
# script on Linux and on Tessera: busybox httpd serves a document root on
# the ext2 disk, and webload (beside this script) makes its requests over
# the loopback: a static page, a shell CGI and the page access program as
# a C CGI with 0, 200, 400 and 800 BSS pages, 100 requests (10 with
# --short) with 1 and with 10 clients at once.
#
#   web.sh DOCROOT [PREFIX] [--short]
#   web.sh DOCROOT serve
#   web.sh DOCROOT PREFIX --split
#
# PREFIX names the configuration in the metrics (Tessera's pool setting:
# "reuse_"); Linux gives none.  Where /proc/tessera/pool exists (Tessera),
# a last burst of each CGI at 10 clients samples the pool's memory.
# "serve" (the realism mode, tools/bench/webab.py): the same root served
# at port 80 of every address, for a client outside the machine (ApacheBench
# through QEMU's forwarded port); prints WEB-SERVING and serves until the
# machine is stopped.
# "--split" (Tessera, tools/bench/websplit.py): only the static page, the
# shell CGI and the 0-page CGI at one client, each burst with webload -s:
# the CPU time by process, the kernel's resource operations and the TCP/IP
# server's counters before and after it.
set -e
root=$1
prefix=${2:-}
short=
serve=
split=
[ "${3:-}" = --short ] && short=--short
[ "${3:-}" = --split ] && split=1
[ "$prefix" = --short ] && prefix= && short=--short
[ "$prefix" = serve ] && prefix= && serve=1
[ -n "$root" ] || {
	echo "BENCH-ERROR,web,usage: web.sh DOCROOT [PREFIX] [--short]"
	exit 2
}
bin=$(cd "$(dirname "$0")" && pwd)
port=8090
n=100
[ -n "$short" ] && n=10

# Linux's loopback starts down in a bare boot.
ifconfig lo up 2>/dev/null || true

rm -rf "$root"
mkdir -p "$root/cgi-bin"
i=0
while [ $i -lt 16 ]; do
	# 16 lines of 64 bytes: a 1 KiB page.
	echo "<p>Tessera's web experiment: a static page of sixteen lines.</p>"
	i=$((i + 1))
done >"$root/index.html"
cat >"$root/cgi-bin/sh.cgi" <<'END'
#!/bin/sh
echo "Content-Type: text/plain"
echo
echo "shell CGI"
END
chmod 755 "$root/cgi-bin/sh.cgi"
# Links to the page access programs: every run execs the same files (on
# Tessera, the same plates, which the pool's add settings name).
for p in 0 200 400 800; do
	ln -s "$bin/pageprog$p" "$root/cgi-bin/pa$p"
done
static_len=$(wc -c <"$root/index.html")

if [ -n "$serve" ]; then
	port=80
	httpd -f -p "$port" -h "$root" &
else
	httpd -f -p "127.0.0.1:$port" -h "$root" &
fi
server=$!
i=0
until "$bin/webload" -n 1 -p $port /index.html >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -ge 50 ]; then
		echo "BENCH-ERROR,web,httpd does not answer"
		kill $server
		exit 1
	fi
	sleep 0.2
done

load() {
	"$bin/webload" -n $n -p $port -x "$prefix" -f $server "$@" || echo "BENCH-ERROR,web,webload $* failed"
}
warm() {
	"$bin/webload" -n 3 -p $port "$@" >/dev/null || echo "BENCH-ERROR,web,warm-up $* failed"
}

# Every program and file once before the figures: a cold first request
# would measure the disk and the page cache, not the server.
warm -e "$static_len" /index.html
warm -e 10 /cgi-bin/sh.cgi
for p in 0 200 400 800; do
	warm -e 20 "/cgi-bin/pa$p"
done
# What the setup and the warm-up wrote (the root, the last run's removal,
# the files' access times) goes to the disk now, not during a burst:
# Tessera's block cache writes dirty pages back every 5 s and serves no
# read meanwhile, and under icount that write-back and the device's flush
# last as long as the host's own write and fsync of the disk image take,
# up to seconds inside one request.
sync

if [ -n "$serve" ]; then
	echo "WEB-SERVING static $static_len"
	wait $server
	exit 0
fi

if [ -n "$split" ]; then
	s="-s /proc/tessera/cpu -s /proc/tessera/counters -s /proc/tessera/net"
	load -c 1 -l static -e "$static_len" $s /index.html
	load -c 1 -l shcgi -e 10 $s /cgi-bin/sh.cgi
	load -c 1 -l pagecgi -P 0 -e 20 $s /cgi-bin/pa0
	kill $server
	wait $server 2>/dev/null || true
	rm -rf "$root"
	exit 0
fi

for c in 1 10; do
	load -c $c -l static -e "$static_len" /index.html
	load -c $c -l shcgi -e 10 /cgi-bin/sh.cgi
	for p in 0 200 400 800; do
		load -c $c -l pagecgi -P $p -e 20 "/cgi-bin/pa$p"
	done
done

if [ -r /proc/tessera/pool ]; then
	load -c 10 -l shcgi -e 10 -m /proc/tessera/pool /cgi-bin/sh.cgi
	load -c 10 -l pagecgi800 -e 20 -m /proc/tessera/pool /cgi-bin/pa800
fi

kill $server
wait $server 2>/dev/null || true
rm -rf "$root"
