"""``bbrl export``: rliable's archive, AdaStop's tables and the long table, read back by those
packages' own functions where they are installed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bbrl.analysis import export as ex
from bbrl.analysis.stats import iqm
from bbrl.cli import main
from bbrl.protocol.results import load
from bbrl.protocol.schema import Col
from smoke_grids import EGREEDY, GC, GRID_UNIFORM, OPTIMAL, RANDOM, SOFTMAX, grid_text, run_quietly

N = 8

EXPORT_AGENTS = [RANDOM, EGREEDY, SOFTMAX, OPTIMAL]
EXPORT_DEFAULTS = {"n_mdps": N, "horizon": 30}
EXPORT_GRID = grid_text(EXPORT_DEFAULTS, [GC, GRID_UNIFORM], EXPORT_AGENTS)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_quietly(EXPORT_GRID, tmp_path_factory.mktemp("export") / "results", threads=1)


def _returns(results: Path, experiment: str, prior: str, label: str) -> np.ndarray:
    loaded = load(results)
    cell = loaded.cells.filter(
        (pl.col(Col.EXPERIMENT) == experiment) & (pl.col(Col.PRIOR) == prior) & (pl.col(Col.LABEL) == label)
    )
    assert cell.height == 1
    rows = loaded.returns.filter(pl.col(Col.CELL_ID) == cell[Col.CELL_ID][0]).sort(Col.MDP)
    return rows[Col.RETURN].to_numpy()


def test_rliable_archive_holds_normalised_scores_without_pickles(results: Path, tmp_path: Path) -> None:
    files = ex.export(results, "rliable", tmp_path)
    assert [f.name for f in files] == [ex.RLIABLE_FILE, ex.RLIABLE_COLUMNS_FILE]
    with np.load(tmp_path / ex.RLIABLE_FILE, allow_pickle=False) as archive:
        scores = {name: archive[name] for name in archive.files}
    assert set(scores) == {"Random", "e-Greedy", "Soft-max"}  # the oracle is the reference, not a column
    columns = pl.read_csv(tmp_path / ex.RLIABLE_COLUMNS_FILE)
    assert columns[Col.EXPERIMENT].to_list() == ["GC/GC", "Grid/UGrid"]
    for name, array in scores.items():
        assert array.shape == (N, 2) and array.dtype == np.float64, name
    # The normalisation, recomputed from the returns: column j is experiment j.
    for j, key in enumerate(columns[Col.EXPERIMENT].to_list()):
        experiment, prior = key.split("/")
        low = _returns(results, experiment, prior, "Random").mean()
        high = _returns(results, experiment, prior, "Optimal (oracle)").mean()
        assert (columns["r_random"][j], columns["r_optimal"][j]) == (low, high)
        expected = (_returns(results, experiment, prior, "Soft-max (tau=1.0)") - low) / (high - low)
        np.testing.assert_array_equal(scores["Soft-max"][:, j], expected)
        assert abs(scores["Random"][:, j].mean()) < 1e-12  # Random's level is 0 by construction


def test_rliable_reads_the_archive(results: Path, tmp_path: Path) -> None:
    metrics = pytest.importorskip("rliable.metrics", reason="rliable is not installed (pip install rliable)")
    ex.export(results, "rliable", tmp_path)
    with np.load(tmp_path / ex.RLIABLE_FILE, allow_pickle=False) as archive:
        scores = {name: archive[name] for name in archive.files}
    for array in scores.values():
        assert metrics.aggregate_iqm(array) == pytest.approx(iqm(array), rel=1e-12)
        assert metrics.aggregate_mean(array) == pytest.approx(array.mean(), rel=1e-12)
    improvement = metrics.probability_of_improvement(scores["e-Greedy"], scores["Random"])
    assert 0.0 <= improvement <= 1.0


def test_adastop_compares_the_tables(results: Path, tmp_path: Path) -> None:
    files = ex.export(results, "adastop", tmp_path)
    assert sorted(f.name for f in files) == ["GC-GC.csv", "Grid-UGrid.csv"]
    table = pl.read_csv(tmp_path / ex.ADASTOP_FOLDER / "GC-GC.csv")
    assert table.columns == [ex.MDP, "Random", "e-Greedy", "Soft-max"] and table.height == N
    np.testing.assert_array_equal(table["Random"].to_numpy(), _returns(results, "GC", "GC", "Random"))
    adastop = pytest.importorskip("adastop", reason="adastop is not installed (pip install adastop)")
    pd = pytest.importorskip("pandas", reason="pandas (which AdaStop reads its tables with) is not installed")
    for file in files:
        frame = pd.read_csv(file, index_col=0)  # as AdaStop's `adastop compare FILE` reads it
        comparator = adastop.MultipleAgentsComparator(n=len(frame), K=1, B=1000, alpha=0.05, seed=0)
        comparator.partial_compare({name: frame[name].to_numpy() for name in frame.columns}, verbose=False)
        assert comparator.is_finished
        assert set(comparator.decisions.values()) <= {"equal", "larger", "smaller"}
        assert len(comparator.decisions) == 3  # every pair of the three algorithms


def test_the_long_table_has_every_cell_and_mdp(results: Path, tmp_path: Path) -> None:
    (file,) = ex.export(results, "csv", tmp_path)
    table = pl.read_csv(file)
    loaded = load(results)
    assert table.height == loaded.returns.height == loaded.cells.height * N
    row = table.filter((pl.col(Col.EXPERIMENT) == "Grid") & (pl.col(Col.LABEL) == "Random"))
    np.testing.assert_array_equal(row[Col.RETURN].to_numpy(), _returns(results, "Grid", "UGrid", "Random"))
    assert row[ex.NORMALIZED].mean() == pytest.approx(0.0, abs=1e-12)
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_the_command_writes_into_the_results_folder_and_names_a_bad_folder(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "copy"
    assert main(["export", str(results), "--format", "csv", "--out", str(out)]) == 0
    assert (out / ex.LONG_FILE).is_file()
    missing = tmp_path / "nowhere"
    assert main(["export", str(missing), "--format", "rliable"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results folder" in err and str(missing) in err, err
    assert not missing.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["export", str(empty), "--format", "adastop"]) == 2
    assert "no finished cells" in capsys.readouterr().err
    assert list(empty.iterdir()) == []  # the refused command leaves no export folder behind


def test_rliable_needs_the_reference_agents(tmp_path: Path) -> None:
    config = grid_text(EXPORT_DEFAULTS, [GC, GRID_UNIFORM], [a for a in EXPORT_AGENTS if a is not OPTIMAL])
    out = run_quietly(config, tmp_path / "results", threads=1)
    with pytest.raises(ValueError, match="no experiment has both a Random and an Optimal cell"):
        ex.export(out, "rliable", tmp_path / "export")
    assert not (tmp_path / "export").exists()
    with pytest.raises(ValueError, match="format must be one of rliable, adastop, csv"):
        ex.export(out, "npz", tmp_path / "export")
    (file,) = ex.export(out, "csv", tmp_path / "export")
    assert pl.read_csv(file)[ex.NORMALIZED].null_count() == pl.read_csv(file).height  # nothing to normalise by
