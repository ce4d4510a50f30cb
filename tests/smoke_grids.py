"""The small grids the analysis and report tests run at smoke sizes: their experiments and agents
written once, as TOML text built from tables, and a run that prints nothing.

Importable from every test folder: pytest puts this folder on ``sys.path`` with its conftest."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from bbrl import grid

#: The benchmark's two distributions, each with its accurate (GC) or uniform (Grid) prior.
GC = {"name": "GC", "test": "GC", "prior": "GC"}
GRID_UNIFORM = {"name": "Grid", "test": "Grid", "prior": "UGrid"}

#: Agents without offline computation, and the oracle.
RANDOM = {"kind": "random"}
EGREEDY = {"kind": "egreedy", "epsilon": [0.0, 0.5]}
SOFTMAX = {"kind": "softmax", "tau": 1.0}
OPTIMAL = {"kind": "optimal"}


def oppsds(n_draws: list[int]) -> dict[str, Any]:
    """OPPS-DS on the second formula set: an agent with offline computation, one per draw count."""
    return {"kind": "oppsds", "formula_set": 2, "n_draws": n_draws}


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)  # a TOML basic string, integer or float (repr keeps 1e-1 a float)


def _table(header: str, entries: Mapping[str, Any]) -> str:
    return "\n".join([header, *(f"{key} = {_toml(value)}" for key, value in entries.items())]) + "\n"


def grid_text(
    defaults: Mapping[str, Any], experiments: Sequence[Mapping[str, Any]], agents: Sequence[Mapping[str, Any]]
) -> str:
    """A grid configuration's TOML text: ``[defaults]``, then one table per experiment and agent."""
    tables = [_table("[defaults]", defaults)]
    tables += [_table("[[experiment]]", e) for e in experiments]
    tables += [_table("[[agent]]", a) for a in agents]
    return "\n".join(tables)


def run_quietly(config: str, out: Path, **kwargs: Any) -> Path:
    """Runs the grid ``config`` (TOML text) into ``out`` without printing; ``kwargs`` go to
    :func:`bbrl.grid.run_grid` (e.g. ``threads``). Returns ``out``."""
    grid.run_grid(grid.parse_config(config), out, console=Console(file=io.StringIO()), **kwargs)
    return out
