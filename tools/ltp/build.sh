#!/usr/bin/env bash
# Builds the Linux Test Project's system-call tests as static musl programs
# (the recipe of ../shared/ltp/README.md) into build/ltp/, once: a directory
# already built is skipped, so an interrupted build resumes where it stopped.
# None of LTP enters the repository.
#
#   tools/ltp/build.sh                 every directory of testcases/kernel/syscalls
#   LTP_DIRS="getpid read" tools/ltp/build.sh     only these
#   LTP_TARBALL=path tools/ltp/build.sh           another source snapshot
#
# Output: build/ltp/install/testcases/bin (the test programs and their data
# files), build/ltp/logs/<dir>.log per directory, build/ltp/build-status.txt
# (directory, status, seconds) and build/ltp/build-time.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
out="$root/build/ltp"
say() { echo "ltp-build: $*" >&2; }

# The snapshot lives in the shared/ folder beside the project. A linked
# worktree sits elsewhere; its main checkout's folder is then the one beside.
find_tarball() {
    if [ -n "${LTP_TARBALL:-}" ]; then echo "$LTP_TARBALL"; return; fi
    local common
    common=$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    for dir in "$root/../shared/ltp" ${common:+"$common/../../shared/ltp"}; do
        local t
        t=$(ls "$dir"/ltp-*.tar.gz 2>/dev/null | tail -1)
        if [ -n "$t" ]; then echo "$t"; return; fi
    done
}
tarball=$(find_tarball)
if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
    say "no LTP source snapshot (../shared/ltp/ltp-*.tar.gz beside the project); set LTP_TARBALL"
    exit 1
fi
bash tools/setup.sh ltp || exit 1

mkdir -p "$out/logs"
src="$out/src"
stamp="$out/src.stamp"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$(basename "$tarball")" ]; then
    say "unpacking $(basename "$tarball")"
    rm -rf "$src" "$out/install" "$out/build-status.txt" "$out/configured"
    mkdir -p "$src"
    tar xzf "$tarball" -C "$src" --strip-components=1 || exit 1
    basename "$tarball" >"$stamp"
fi

# Debian's musl-gcc sees no kernel headers; these three links are all the
# tests need from them.
kh="$out/kheaders"
mkdir -p "$kh"
ln -sfn /usr/include/linux "$kh/linux"
ln -sfn /usr/include/asm-generic "$kh/asm-generic"
ln -sfn /usr/include/x86_64-linux-gnu/asm "$kh/asm"

t0=$(date +%s)
cd "$src" || exit 1
if [ ! -f "$out/configured" ]; then
    say "autotools and configure"
    { make autotools &&
      ./configure CC=musl-gcc CFLAGS="-static -O2 -isystem $kh" LDFLAGS=-static \
          --prefix="$out/install" --without-numa --without-tirpc; } >"$out/logs/configure.log" 2>&1 ||
        { say "configure failed, see build/ltp/logs/configure.log"; exit 1; }
    touch "$out/configured"
fi
if [ ! -f "$out/lib.done" ]; then
    say "building lib"
    make -C lib -j2 >"$out/logs/lib.log" 2>&1 || { say "lib failed, see build/ltp/logs/lib.log"; exit 1; }
    touch "$out/lib.done"
fi

status="$out/build-status.txt"
touch "$status"
if [ -n "${LTP_DIRS:-}" ]; then
    dirs=$LTP_DIRS
else
    dirs=$(cd testcases/kernel/syscalls && ls -d */ | tr -d /)
fi
built=0 failed=0 skipped=0
for d in $dirs; do
    path="testcases/kernel/syscalls/$d"
    if [ ! -d "$path" ]; then say "no directory $path"; failed=$((failed + 1)); continue; fi
    if grep -q "^$d ok " "$status"; then skipped=$((skipped + 1)); continue; fi
    s=$(date +%s)
    # -k: one program musl cannot build must not cost the rest of its directory.
    if make -C "$path" -k -j2 >"$out/logs/$d.log" 2>&1; then r=ok; else r=partial; fi
    make -C "$path" -k install >>"$out/logs/$d.log" 2>&1 || r=partial
    sed -i "/^$d /d" "$status"
    echo "$d $r $(($(date +%s) - s))" >>"$status"
    if [ "$r" = ok ]; then built=$((built + 1)); else failed=$((failed + 1)); fi
done
secs=$(($(date +%s) - t0))
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $secs s, $built directories built, $failed with errors, $skipped already built ($(nproc) host cores)" >>"$out/build-time.txt"
say "done in $secs s: $built directories built, $failed with errors (see build/ltp/logs), $skipped already built"
say "$(ls "$out/install/testcases/bin" 2>/dev/null | wc -l) files in build/ltp/install/testcases/bin"
