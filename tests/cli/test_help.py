"""``bbrl --help``, now that the parser is built without importing the subcommands' work: it still
lists every subcommand the parser has, each with its one-line help."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

from bbrl.cli import build_parser


def _subcommands() -> list[str]:
    """The names of the top-level subcommands, as the parser registers them."""
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(action.choices)


def test_help_lists_every_subcommand() -> None:
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))  # the CLI under test, not PATH's
    command = [exe] if exe else [sys.executable, "-m", "bbrl"]
    out = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    listed = re.findall(r"^ {4}(\S+)", out.stdout, flags=re.MULTILINE)
    names = _subcommands()
    assert len(names) >= 10
    assert listed == names
