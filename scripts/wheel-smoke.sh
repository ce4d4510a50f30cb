#!/usr/bin/env bash
# The wheel without Rust: installs a built wheel (the one scripts/test.sh left in dist/, or one
# built here) into a fresh virtual environment whose PATH has no cargo or rustc, and runs
# scripts/wheel_smoke.py there: a benchmark experiment, a Python agent, a replay evaluation, a
# value-error reference computation and the gymnasium environments.
#   bash scripts/wheel-smoke.sh [WHEEL]
# BBRL_SMOKE_EXTRAS (default "gym"): the extras installed with the wheel ("" for none).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
venv=${BBRL_SMOKE_VENV:-.venv-smoke}
extras=${BBRL_SMOKE_EXTRAS-gym}

wheel=${1:-}
if [ -z "$wheel" ]; then
    wheel=$(ls dist/bbrl_bench-*.whl 2>/dev/null | head -n 1 || true)
fi
if [ -z "$wheel" ]; then
    echo "== no wheel in dist/: building one (needs Rust; the smoke test itself does not)"
    rm -rf .venv-build
    "$python" -m venv .venv-build
    .venv-build/bin/python -m pip install --quiet "maturin>=1.5,<2"
    .venv-build/bin/maturin build --release --out dist --quiet
    wheel=$(ls dist/bbrl_bench-*.whl | head -n 1)
fi
wheel=$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")
smoke=$(pwd)/scripts/wheel_smoke.py
echo "== the wheel without Rust: $(basename "$wheel")"
# One wheel for every CPython >= 3.10 (the stable ABI), for any Linux whose glibc its tag names.
case $(basename "$wheel") in
    *-cp310-abi3-*manylinux*.whl) ;;
    *)
        echo "not an abi3 (cp310) manylinux wheel: $(basename "$wheel")" >&2
        exit 1
        ;;
esac

# The interpreter itself (not a shim that needs the current PATH), then a PATH without any folder
# that holds cargo or rustc.
base=$("$python" -c 'import sys; print(sys.executable)')
path=""
IFS=: read -r -a dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
    [ -n "$dir" ] || continue
    if [ -e "$dir/cargo" ] || [ -e "$dir/rustc" ]; then
        continue
    fi
    path=${path:+$path:}$dir
done

started=$(date +%s)
rm -rf "$venv"
"$base" -m venv "$venv"
venv=$(cd "$venv" && pwd)
spec=$wheel
[ -z "$extras" ] || spec="${wheel}[${extras}]"
(
    export PATH="$venv/bin:$path"
    unset CARGO_HOME RUSTUP_HOME CARGO_TARGET_DIR
    if command -v cargo >/dev/null || command -v rustc >/dev/null; then
        echo "cargo or rustc is still on the PATH: $(command -v cargo rustc)" >&2
        exit 1
    fi
    echo "== no cargo or rustc on the PATH"
    # Wheels only: nothing may be compiled on the way (--no-compile: no byte-code written ahead).
    python -m pip install --quiet --disable-pip-version-check --no-compile --only-binary=:all: "$spec"
    echo "== installed in $(($(date +%s) - started)) s"
    away=$(mktemp -d)  # away from the checkout: bbrl can only come from the installed wheel
    trap 'rm -rf "$away"' EXIT
    cd "$away"
    python "$smoke"
    bbrl --help >/dev/null
    # The platform tag checked by auditwheel (PyPI), independently of the tool that built the wheel:
    # the wheel may claim no older glibc than its symbols need.
    python -m pip install --quiet --disable-pip-version-check --no-compile --only-binary=:all: auditwheel
    claimed=$(basename "$wheel" | sed -nE 's/^.*-abi3-.*manylinux_2_([0-9]+)_.*$/\1/p')
    report=$(python -m auditwheel show "$wheel" | tr '\n' ' ')
    needed=$(echo "$report" | sed -nE 's/.*consistent with the following platform tag: "manylinux_2_([0-9]+)_[^"]*".*/\1/p')
    if [ -z "$claimed" ] || [ -z "$needed" ] || [ "$needed" -gt "$claimed" ]; then
        echo "auditwheel does not confirm the wheel's tag (glibc 2.${claimed:-?} claimed): $report" >&2
        exit 1
    fi
    echo "== auditwheel: glibc 2.$needed needed, 2.$claimed claimed"
)
echo "== the wheel smoke test took $(($(date +%s) - started)) s (fresh environment, install and checks)"
