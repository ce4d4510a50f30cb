"""The command line, run as a user would (the installed ``bbrl`` entry point)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _bbrl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))  # the CLI under test, not PATH's
    command = [exe] if exe else [sys.executable, "-m", "bbrl"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def test_help_documents_the_commands() -> None:
    out = _bbrl("--help")
    assert out.returncode == 0
    for word in ("run", "quick", "agents", "distributions", "grid", "report", "paper"):
        assert word in out.stdout
    run_help = _bbrl("run", "--help")
    assert "--experiment" in run_help.stdout and "--param" in run_help.stdout


def test_run_prints_a_result_table(tmp_path: Path) -> None:
    out = _bbrl(
        "run", "--experiment", "GC", "--prior", "GC", "--agent", "egreedy", "--param", "epsilon=0.1",
        "--n-mdps", "50", "--seed", "0", "--csv", str(tmp_path / "runs.csv"),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "e-Greedy (epsilon=0.1)" in out.stdout and "±" in out.stdout
    assert (tmp_path / "runs.csv").read_text().count("\n") == 51


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "egreedy", "--param", "epsilon=2"], "epsilon must be in"),
        (["--agent", "nope"], "unknown agent"),
        (["--agent", "egreedy", "--param", "epsilon"], "NAME=VALUE"),
        (["--agent", "random", "--n-mdps", "0"], "argument --n-mdps: must be >= 1, got 0"),
        (["--agent", "random", "--prior", "UGDL"], "states"),
    ],
)
def test_run_errors_are_clear(args: list[str], message: str) -> None:
    out = _bbrl("run", "--experiment", "GC", *args)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


def test_quick_writes_table_and_figure(tmp_path: Path) -> None:
    out = _bbrl("quick", "--n-mdps", "10", "--horizon", "50", "--out", str(tmp_path / "q"))
    assert out.returncode == 0, out.stderr
    for name in ("summary.csv", "table.md", "returns.parquet", "scores.png"):
        assert (tmp_path / "q" / name).stat().st_size > 0
    assert (tmp_path / "q" / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_listings() -> None:
    assert "egreedy" in _bbrl("agents").stdout
    assert "UGrid" in _bbrl("distributions").stdout


def test_run_names_only_the_missing_parameters_without_a_default() -> None:
    out = _bbrl("run", "--experiment", "GC", "--agent", "oppsds", "--n-mdps", "2")
    assert out.returncode == 2
    assert out.stderr == "bbrl: error: agent 'oppsds' needs parameter(s) formula_set, n_draws (no default)\n"


def test_agents_lists_every_kind_as_plain_text_with_the_python_kind() -> None:
    out = _bbrl("agents")
    assert out.returncode == 0, out.stderr
    for markup in ("``", ":class:", ":func:", ":meth:", "[bold]"):
        assert markup not in out.stdout, markup
    # Parameters as --param and a grid spell them (OPPS-DS's formula_set, not the core's "formulas").
    assert "    formula_set (str, required; F2 to F6" in out.stdout
    python = [line for line in out.stdout.splitlines() if line.startswith("python: ")]
    assert len(python) == 1 and 'kind = "python"' in python[0] and 'class = "file.py:ClassName"' in python[0]
