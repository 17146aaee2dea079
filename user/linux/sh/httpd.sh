# busybox httpd over the loopback, fetched by busybox wget and nc: a static
# page, a shell CGI (httpd forks, execs the script with its pipes), a
# missing file, a POST to the CGI, several requests at once, and a client
# that connects and goes away. Runs in a fresh folder under /tmp.
set -e
mkdir -p /tmp/sh-httpd/www/cgi-bin && cd /tmp/sh-httpd
# A machine whose loopback starts down (Linux's, booted bare) brings it up.
ifconfig lo up 2>/dev/null || true
echo "a static page" > www/index.html
cat > www/cgi-bin/hello.cgi <<'END'
#!/bin/sh
echo "Content-Type: text/plain"
echo
echo "method $REQUEST_METHOD query $QUERY_STRING"
if [ "$REQUEST_METHOD" = POST ]; then
	echo "body $(head -c "$CONTENT_LENGTH")"
fi
END
chmod +x www/cgi-bin/hello.cgi
httpd -f -p 127.0.0.1:8088 -h /tmp/sh-httpd/www &
server=$!
up=no
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	if wget -q -O /dev/null http://127.0.0.1:8088/ 2>/dev/null; then
		up=yes
		break
	fi
	sleep 0.2
done
echo "== the server is up: $up"
echo "== a static file"
wget -q -O - http://127.0.0.1:8088/index.html
echo "== a shell CGI"
wget -q -O - "http://127.0.0.1:8088/cgi-bin/hello.cgi?a=1&b=two"
echo "== a POST to it"
wget -q -O - --post-data "x=42" http://127.0.0.1:8088/cgi-bin/hello.cgi
echo "== a missing file"
wget -q -O - http://127.0.0.1:8088/missing 2>&1 || echo "wget failed: $?"
echo "== by hand, with nc"
printf 'GET /index.html HTTP/1.0\r\n\r\n' | nc 127.0.0.1 8088 | tr -d '\r' | grep -E '^HTTP|^Content-Length|page'
echo "== a client that connects and goes away"
nc 127.0.0.1 8088 </dev/null >/dev/null 2>&1 || true
wget -q -O - http://127.0.0.1:8088/index.html
echo "== five at once"
pids=
for i in 1 2 3 4 5; do
	wget -q -O "got$i" "http://127.0.0.1:8088/cgi-bin/hello.cgi?n=$i" &
	pids="$pids $!"
done
wait $pids
cat got1 got2 got3 got4 got5 | sort
kill $server
wait $server 2>/dev/null || true
echo "== done"
