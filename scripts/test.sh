#!/usr/bin/env bash
# The test command of the README: builds a wheel from this checkout, installs it into a fresh
# virtual environment, and runs every check against the installed package (never the source
# tree, so a file missing from the wheel fails here):
#   Rust unit and property tests, rustfmt, clippy (warnings are errors), ruff, the native module's
#   stub against the module (mypy's stubtest), pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${BBRL_TEST_VENV:-.venv-test}
python=${PYTHON:-python3}

echo "== building the wheel into a fresh virtual environment ($venv)"
rm -rf "$venv" dist
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "maturin>=1.5,<2"
"$venv/bin/maturin" build --release --out dist --quiet --interpreter "$venv/bin/python"
wheel=$(ls dist/*.whl)
"$venv/bin/python" -m pip install --quiet "${wheel}[test]"

echo "== Rust: format, lints, unit and property tests"
cargo fmt --all -- --check
cargo clippy -p bbrl-core --lib --tests -- -D warnings
cargo clippy -p bbrl-python -- -D warnings
cargo test -p bbrl-core --lib --tests --quiet

echo "== Python: lints and tests against the installed wheel"
"$venv/bin/ruff" check python tests benches
"$venv/bin/ruff" format --check python tests benches
# The stub python/bbrl/_core.pyi against the installed native module: names, signatures, constructors,
# final classes (no allowlist: fix the stub; an entry that truly cannot be fixed would go in
# tests/stubtest-allowlist.txt, passed with --allowlist, with its reason).
"$venv/bin/python" -m mypy.stubtest bbrl._core
BBRL_REQUIRE_INSTALLED=1 "$venv/bin/python" -m pytest tests
# The benchmark suite once, untimed (speed is measured with `pytest benches`, benches/README.md):
# it must keep running against the package as it changes.
BBRL_REQUIRE_INSTALLED=1 "$venv/bin/python" -m pytest benches --benchmark-disable -q
