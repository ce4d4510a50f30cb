"""Starting bbrl, each in a fresh process: ``import bbrl``, ``bbrl --version`` and ``bbrl --help``
(the suite form of startup.py). The wall time is the benchmark's; the median CPU time (user +
system) of the child processes is stored in ``extra_info``."""

from __future__ import annotations

import statistics

import pytest

from startup import COMMANDS, cpu_seconds


@pytest.mark.parametrize("name", [name for name in COMMANDS if name != "python -c pass"])
def test_startup(benchmark, name):
    times: list[float] = []
    benchmark.pedantic(lambda: times.append(cpu_seconds(COMMANDS[name])), rounds=5, iterations=1)
    benchmark.extra_info["cpu_seconds_median"] = statistics.median(times)
