#!/bin/sh
# A shell CGI: busybox httpd runs it with the request in its environment.
echo "Content-Type: text/plain"
echo
echo "Hello from a shell CGI on Tessera."
echo "method: $REQUEST_METHOD"
echo "query: $QUERY_STRING"
echo "client: $REMOTE_ADDR"
echo "uname: $(uname -sr)"
