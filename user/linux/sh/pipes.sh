# busybox sh: pipelines, redirections, here-documents, substitutions and
# the applets a script leans on. Runs in a fresh folder under /tmp.
set -e
mkdir -p /tmp/sh-pipes && cd /tmp/sh-pipes
echo "== pipelines"
echo "one two three" | wc -w
printf 'c\nb\na\nb\n' | sort | uniq -c | sed 's/^ *//'
seq 1 100 | grep 7 | tr '\n' ' '; echo
seq 5 | awk '{ s += $1 } END { print "sum", s }'
echo "== redirections"
echo first > f
echo second >> f
cat < f
wc -l < f
ls nothere 2> err || echo "ls failed: $?"
test -s err && echo "stderr went to the file"
cat f nothere > both 2>&1 || true
grep -c . both
echo "== here-documents and substitutions"
cat <<END
x is $(echo 42)
arith $((6 * 7))
END
n=0; for w in a b c; do n=$((n + 1)); done; echo "loop counted $n"
echo "== files"
mkdir d; touch d/a d/b; ln -s d/a l
ls d | tr '\n' ' '; echo
cp f d/c; mv d/c d/e; ls d | tr '\n' ' '; echo
rm d/a; rmdir d 2>/dev/null || echo "rmdir of a full folder fails"
head -c 5 f; echo; tail -n 1 f
echo hello | md5sum | cut -d' ' -f1
echo "== status"
false || echo "false: $?"
sh -c "exit 3" || echo "sub-shell: $?"
