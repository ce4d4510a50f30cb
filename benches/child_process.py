"""A child process timed whole, for the benches that time commands: its user + system CPU seconds
(the operating system's accounting of the finished child) and its wall seconds; and the command
line under test."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time


def bbrl_command() -> list[str]:
    """The command line under test: the installed ``bbrl`` script beside the interpreter, else
    ``python -m bbrl``."""
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "bbrl"]


def timed(command: list[str]) -> tuple[float, float]:
    """(user + system CPU seconds, wall seconds) of one run of ``command``, which must succeed (its
    standard output is thrown away)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall
