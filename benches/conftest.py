"""pytest-benchmark suite of the Python benches (``pytest benches``, see benches/README.md).

The machine line (CPU model, vector extensions, cores, load) heads the session's output and is
stored with every benchmark's result (``extra_info["host"]``, in ``--benchmark-json`` files).
``pytest benches --benchmark-disable`` runs each benchmark once, untimed: the test command does
that, so the suite cannot fall out of step with the package.
"""

from __future__ import annotations

import pytest

from bbrl.protocol.schema import host_line


def pytest_report_header(config: pytest.Config) -> str:
    return host_line()


def per_second(benchmark: object, count: float) -> float:
    """``count`` (tuples, returns, steps) per second of the fastest round; NaN when timing is off
    (``--benchmark-disable``)."""
    stats = getattr(benchmark, "stats", None)
    return count / stats.stats.min if stats is not None else float("nan")


@pytest.fixture(autouse=True)
def _machine_line(request: pytest.FixtureRequest) -> None:
    if "benchmark" in request.fixturenames:
        request.getfixturevalue("benchmark").extra_info["host"] = host_line()
