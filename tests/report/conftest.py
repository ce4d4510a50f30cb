"""A smoke report shared by the reader's checks (figures, page): a small grid of two experiments
with every kind of figure (agents with and without offline computation, ties in the maps, a
Python-free regret figure), run once per session at smoke sizes, its report written once with
every figure kept for inspection before it is closed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from smoke_grids import EGREEDY, GC, GRID_UNIFORM, OPTIMAL, RANDOM, grid_text, oppsds, run_quietly

SMOKE_GRID = grid_text(
    {"n_mdps": 8, "horizon": 20, "seed": 3},
    [{**GC, "record_rewards": True}, GRID_UNIFORM],
    [
        RANDOM,
        EGREEDY,
        {"kind": "softmax", "tau": [0.1, 1.0]},
        oppsds([5, 20]),
        {"kind": "beb", "beta": [0.5]},
        {"kind": "sboss", "epsilon": [1e-1], "delta": [7.0]},
        OPTIMAL,
    ],
)


@dataclass
class SmokeReport:
    """The report's folder, its page, and every figure drawn for it (by file name, still open)."""

    folder: Path
    html: Path
    figures: dict[str, object]


@pytest.fixture(scope="session")
def smoke_report(tmp_path_factory: pytest.TempPathFactory) -> SmokeReport:
    from bbrl.analysis import report

    results = run_quietly(SMOKE_GRID, tmp_path_factory.mktemp("smoke") / "results")
    figures: dict[str, object] = {}
    real_save = report.save_figure

    def keep(fig: object, base: Path, formats: tuple[str, ...] = ("png",)) -> dict[str, Path]:
        figures[base.name] = fig
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("matplotlib.pyplot.close", lambda _fig: None)  # kept open for the checks
            return real_save(fig, base, formats)

    folder = results / "report"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report, "save_figure", keep)
        page = report.write_report(results, folder)
    return SmokeReport(folder, page, figures)
