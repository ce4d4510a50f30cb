"""pytest-benchmark suite of the Python benches (``pytest benches``, see benches/README.md).

The machine line (CPU model, vector extensions, cores, load) heads the session's output and is
stored with every benchmark's result (``extra_info["host"]``, in ``--benchmark-json`` files).
"""

from __future__ import annotations

import pytest

from bbrl.protocol.schema import host_line


def pytest_report_header(config: pytest.Config) -> str:
    return host_line()


@pytest.fixture(autouse=True)
def _machine_line(request: pytest.FixtureRequest) -> None:
    if "benchmark" in request.fixturenames:
        request.getfixturevalue("benchmark").extra_info["host"] = host_line()
