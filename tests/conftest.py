"""Shared fixtures. The tests import the installed package (never the source tree)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=40, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


DATA = Path(__file__).resolve().parent / "data"


def reference_data() -> Path | None:
    """The project's reference copy of the original data files, beside the checkout, if present."""
    candidate = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The original BBRL distribution files (copies shipped with the tests)."""
    return DATA


#: One experiment where a race (batches of 10) stops two configurations: BFS3, beaten by e-Greedy,
#: which costs less; Soft-max at tau = 10, no better than tau = 0.1 by more than the margin.
RACED_GRID = """\
[defaults]
n_mdps = 100
horizon = 60
seed = 1

[[experiment]]
name = "GC"
test = "GC"

[[agent]]
kind = "random"

[[agent]]
kind = "egreedy"
epsilon = [0.0, 1.0]

[[agent]]
kind = "softmax"
tau = [0.1, 10.0]

[[agent]]
kind = "bfs3"
k = [2]
c = [2]
depth = [6]

[[agent]]
kind = "optimal"
"""


@pytest.fixture(scope="session")
def raced_grid_toml() -> str:
    """The text of a grid whose race stops configurations (tests of raced grids on every engine)."""
    return RACED_GRID


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under the test script, insist that ``bbrl`` is the installed wheel, not the source tree."""
    if os.environ.get("BBRL_REQUIRE_INSTALLED"):
        import bbrl

        source_tree = Path(__file__).resolve().parent.parent / "python"
        if Path(bbrl.__file__).resolve().is_relative_to(source_tree):
            raise RuntimeError(f"bbrl was imported from the source tree ({bbrl.__file__}), not the installed wheel")
