#!/usr/bin/env bash
# The portable wheel: builds the abi3 wheel linked against glibc 2.17 (manylinux2014, the oldest
# glibc of any supported Linux), with zig (from PyPI) as the linker, into dist-manylinux/.
# scripts/wheel-smoke.sh then installs it without Rust and has auditwheel confirm that the symbols
# the library needs allow its tag. A wheel built by plain `maturin build` is tagged with this
# machine's glibc instead (manylinux_2_34 on Debian 12) and does not install on older clusters.
#   bash scripts/manylinux-wheel.sh      # then: bash scripts/wheel-smoke.sh dist-manylinux/*.whl
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
venv=${BBRL_MANYLINUX_VENV:-.venv-manylinux}
tag="manylinux_2_17_$(uname -m)"

echo "== building the manylinux2014 wheel with zig ($venv)"
rm -rf "$venv" dist-manylinux
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "maturin>=1.5,<2" "ziglang>=0.13"
# maturin finds zig through `python -m ziglang` of the first python on the PATH.
PATH="$(cd "$venv/bin" && pwd):$PATH" "$venv/bin/maturin" build --release --quiet --zig \
    --compatibility manylinux2014 --out dist-manylinux --interpreter "$venv/bin/python"
wheel=$(ls dist-manylinux/bbrl_bench-*.whl)
case $(basename "$wheel") in
    *"$tag"*) echo "== built $(basename "$wheel")" ;;
    *)
        echo "not tagged $tag: $(basename "$wheel")" >&2
        exit 1
        ;;
esac
