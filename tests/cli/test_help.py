"""``bbrl --help`` and ``bbrl --version``, now that the parser is built without importing the
subcommands' work and the version is read only when asked: the help still lists every subcommand
the parser has, and the version is the package's."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

import bbrl
from bbrl.cli import build_parser


def _subcommands() -> list[str]:
    """The names of the top-level subcommands, as the parser registers them."""
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(action.choices)


def _bbrl(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))  # the CLI under test, not PATH's
    command = [exe] if exe else [sys.executable, "-m", "bbrl"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)


def test_help_lists_every_subcommand() -> None:
    out = _bbrl("--help")
    assert out.returncode == 0, out.stderr
    listed = re.findall(r"^ {4}(\S+)", out.stdout, flags=re.MULTILINE)
    names = _subcommands()
    assert len(names) >= 10
    assert listed == names


def test_version_is_the_package_s() -> None:
    out = _bbrl("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"bbrl {bbrl.__version__}\n"
    assert "--version" in _bbrl("--help").stdout
