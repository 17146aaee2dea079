#!/usr/bin/env bash
# Installs whatever building, running and testing Tessera needs and is not
# there yet. Every make target that needs tools runs this first, so it must be
# idempotent, quiet and fast when all is present, and non-interactive (CI runs
# it with no stdin).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "setup: $*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

# Root runs apt-get itself; anyone else needs sudo.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif have sudo; then
        sudo "$@"
    else
        say "need root or sudo to run: $*"
        exit 1
    fi
}

# --- Debian packages -------------------------------------------------------
pkgs=()
have qemu-system-x86_64 || pkgs+=(qemu-system-x86)
have addr2line || pkgs+=(binutils)          # symbolizes kernel backtraces
have musl-gcc || pkgs+=(musl-tools)         # static C programs for the guest
# Debian's static busybox: the guest userland, and a real program the OFF2F
# converter's tests convert.
[ -x /bin/busybox ] || pkgs+=(busybox-static)
# ApacheBench: the web experiment's realism mode (make bench B=webab MODE=tcg).
have ab || pkgs+=(apache2-utils)
# rustc links host programs (xtask, unit tests) through cc.
have cc || pkgs+=(gcc libc6-dev)
# Tools only some targets need, named as arguments (`setup.sh gdb`).
for extra in "$@"; do
    case "$extra" in
        gdb) have gdb || pkgs+=(gdb) ;;  # make debug, make profile
        ltp)  # make ltp-build: the Linux Test Project's autotools build
            have autoconf || pkgs+=(autoconf)
            have automake || pkgs+=(automake)
            have pkg-config || pkgs+=(pkg-config)
            have make || pkgs+=(make)
            ;;
        *) say "unknown extra: $extra"; exit 1 ;;
    esac
done
# mke2fs lives in /sbin, which is not in a normal user's PATH.
if ! have mke2fs && [ ! -x /sbin/mke2fs ] && [ ! -x /usr/sbin/mke2fs ]; then
    pkgs+=(e2fsprogs)
fi
# The benchmark harness makes a virtual environment; Debian ships ensurepip
# (which venv needs) only in python3-venv.
if ! have python3; then
    pkgs+=(python3 python3-venv)
elif ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    pkgs+=(python3-venv)
fi
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if ! have rustup && [ -x "$cargo_bin/rustup" ]; then
    export PATH="$cargo_bin:$PATH"
fi
if ! have rustup; then
    have curl || pkgs+=(curl)
    [ -e /etc/ssl/certs/ca-certificates.crt ] || pkgs+=(ca-certificates)
fi

if [ "${#pkgs[@]}" -gt 0 ]; then
    if ! have apt-get; then
        say "missing: ${pkgs[*]} (Debian package names); install them and retry"
        exit 1
    fi
    say "installing ${pkgs[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${pkgs[@]}" </dev/null
fi

# --- Rust ------------------------------------------------------------------
if ! have rustup; then
    say "installing rustup into ${CARGO_HOME:-$HOME/.cargo}"
    # No default toolchain: the pinned one is installed below.
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs \
        | sh -s -- -y -q --profile minimal --default-toolchain none --no-modify-path </dev/null
    export PATH="$cargo_bin:$PATH"
fi

toolchain=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
if [ -z "$toolchain" ]; then
    say "no channel in rust-toolchain.toml"
    exit 1
fi
# Listings go through variables: with pipefail, `rustup ... | grep -q` could
# fail when grep stops reading early.
toolchains=$(rustup toolchain list)
if ! grep -q "^$toolchain-" <<<"$toolchains"; then
    say "installing Rust $toolchain"
    rustup toolchain install "$toolchain" --profile minimal \
        --component rustfmt --component clippy </dev/null
fi
components=$(rustup component list --installed --toolchain "$toolchain")
for component in rustfmt clippy; do
    if ! grep -q "^$component" <<<"$components"; then
        say "adding $component to Rust $toolchain"
        rustup component add --toolchain "$toolchain" "$component" </dev/null
    fi
done
# The kernel's target, and the static Linux target the benchmark programs use.
targets=$(rustup target list --installed --toolchain "$toolchain")
for target in x86_64-unknown-none x86_64-unknown-linux-musl; do
    if ! grep -qx "$target" <<<"$targets"; then
        say "adding target $target to Rust $toolchain"
        rustup target add --toolchain "$toolchain" "$target" </dev/null
    fi
done
