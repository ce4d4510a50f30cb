#!/usr/bin/env bash
# The Rust unit and property tests built for aarch64 and run under user-mode emulation (qemu),
# where the solvers take the NEON path: the property tests check its values bit for bit against
# the row-at-a-time reference loops, and the NEON test, run again by name, fails if the path was not taken. Sets up
# what it needs when it can (the Rust target through rustup, a cross linker and qemu from Debian's
# packages, as root); when it cannot, it says why and stops without failing, unless
# BBRL_REQUIRE_AARCH64=1 (CI sets it), which makes every skip a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

target=aarch64-unknown-linux-gnu
skip() {
    echo "aarch64 check skipped: $1"
    if [ "${BBRL_REQUIRE_AARCH64:-0}" = "1" ]; then exit 1; fi
    exit 0
}

if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    rustup target add "$target" >/dev/null 2>&1 || skip "the Rust target $target is not installed and cannot be added"
fi
if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
        apt-get update -q >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
            >/dev/null 2>&1 || skip "qemu-user and the aarch64 cross compiler could not be installed"
    else
        skip "qemu-aarch64 or aarch64-linux-gnu-gcc is missing (install qemu-user and gcc-aarch64-linux-gnu)"
    fi
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
echo "== Rust unit and property tests on $target (emulated)"
cargo test --release --target "$target" -p bbrl-core --lib --quiet
# A filter that matches no test passes silently: check that the NEON test ran and passed.
neon_test=solve::tests::aarch64_takes_the_neon_path
out=$(cargo test --release --target "$target" -p bbrl-core --lib --quiet -- --exact "$neon_test" 2>&1) || {
    echo "$out"
    exit 1
}
if ! grep -q "test result: ok. 1 passed" <<<"$out"; then
    echo "$out"
    echo "aarch64 check failed: $neon_test did not run"
    exit 1
fi
echo "NEON path taken and bit-identical to the row-at-a-time loops ($neon_test)"
