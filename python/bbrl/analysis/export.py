"""Results in the formats of other analysis tools (``bbrl export``): rliable's score arrays,
AdaStop's per-experiment tables, and one plain long table.

* ``rliable``: ``rliable.npz``, a NumPy archive (no pickled object: ``numpy.load(path)`` reads it
  with ``allow_pickle=False``) of ``{algorithm: array (N MDPs x experiments)}``, float64, of the
  normalised scores ``(R - R_random) / (R_optimal - R_random)`` of each algorithm's best setting
  (:func:`bbrl.analysis.scores.normalized_by_experiment`: ``R_random`` and ``R_optimal`` are the
  experiment's mean scores of its Random and Optimal cells, so 0 is Random's level and 1 the
  oracle's). Rows are test MDPs (rliable's runs), columns the experiments (its tasks) in the order
  of ``rliable-experiments.csv``, which also gives each column's reference levels. Only
  experiments with both reference cells are exported, and only algorithms present in each of them;
  the oracle itself is left out.
* ``adastop``: ``adastop/<experiment>-<prior>.csv`` per experiment: a first column ``mdp`` (the
  index AdaStop's ``compare`` reads), then one column per algorithm (its best setting's
  discounted returns, the oracle left out), one row per test MDP.
* ``csv``: ``returns.csv``, one row per (cell, test MDP): the cell's experiment, prior, algorithm,
  setting and id, the MDP's index, its discounted return and its normalised score (empty where the
  experiment has no Random or Optimal cell).

Every file is written whole (:func:`bbrl.fileio.write_atomic`).
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..fileio import write_atomic

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

    from ..protocol.results import Results

__all__ = [
    "ADASTOP_FOLDER",
    "FORMATS",
    "LONG_FILE",
    "RLIABLE_COLUMNS_FILE",
    "RLIABLE_FILE",
    "adastop_tables",
    "export",
    "long_table",
    "rliable_scores",
]

# NumPy, polars and the results' readers are imported where used: the command line's parser reads
# FORMATS without importing them (and the command line sets NumPy's BLAS threads before NumPy loads).

#: The formats ``bbrl export --format`` writes.
FORMATS = ("rliable", "adastop", "csv")
#: rliable's archive, and the table naming its columns.
RLIABLE_FILE = "rliable.npz"
RLIABLE_COLUMNS_FILE = "rliable-experiments.csv"
#: The folder of AdaStop's tables.
ADASTOP_FOLDER = "adastop"
#: The plain long table.
LONG_FILE = "returns.csv"

#: The column of the MDP's index in the exported tables.
MDP = "mdp"
#: The column of the normalised score in the long table.
NORMALIZED = "normalized_score"


def _load(results_dir: str | os.PathLike[str]) -> tuple[Results, pl.DataFrame]:
    """The results of a grid's output folder, ranked as the report ranks them (a raced setting by
    its paired estimate over the N MDPs)."""
    from ..protocol.results import check_results_folder, load
    from .racing import with_paired_means

    results = with_paired_means(load(check_results_folder(results_dir)))
    return results, results.cells


def rliable_scores(results_dir: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], pl.DataFrame]:
    """rliable's score dictionary of a results folder: ``{algorithm: array (N, experiments)}`` of
    normalised scores, and a frame with one row per column (``column``, ``experiment`` as
    ``name/prior``, ``r_random``, ``r_optimal``).

    Raises:
        FileNotFoundError: ``results_dir`` is not a results folder, or holds no cell.
        ValueError: no experiment has both a Random and an Optimal cell (with Optimal above
            Random), no algorithm is in every such experiment, or the experiments (or a raced
            algorithm's best setting) have different numbers of test MDPs, so that the scores do
            not make one (MDPs x experiments) array; the message says which.
    """
    import polars as pl

    from ..protocol.schema import Col
    from .scores import normalized_by_experiment

    results, cells = _load(results_dir)
    normalized = normalized_by_experiment(results, cells)
    keys = list(normalized.scores)
    if not keys:
        raise ValueError(
            f"{results_dir}: no experiment has both a Random and an Optimal cell with Optimal above Random "
            f"(skipped: {', '.join(normalized.skipped) or 'none'}), so there is nothing to normalise by; add "
            'kind = "random" and kind = "optimal" agents to the grid, or export --format csv'
        )
    algorithms = [a for a in dict.fromkeys(a for k in keys for a in normalized.scores[k])]
    common = [a for a in algorithms if all(a in normalized.scores[k] for k in keys)]
    if not common:
        raise ValueError(f"{results_dir}: no algorithm ran in every normalisable experiment ({', '.join(keys)})")
    sizes = {f"{k} ({a})": normalized.scores[k][a].size for k in keys for a in common}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{name}: {n}" for name, n in sizes.items())
        raise ValueError(
            f"{results_dir}: the experiments' best settings ran different numbers of test MDPs ({shown}); rliable "
            "needs one (MDPs x experiments) array per algorithm: export --format csv instead"
        )
    import numpy as np

    scores = {a: np.column_stack([normalized.scores[k][a] for k in keys]) for a in common}
    columns = pl.DataFrame(
        {
            "column": list(range(len(keys))),
            Col.EXPERIMENT: keys,
            "r_random": [normalized.levels[k][0] for k in keys],
            "r_optimal": [normalized.levels[k][1] for k in keys],
        }
    )
    return scores, columns


def adastop_tables(results_dir: str | os.PathLike[str]) -> dict[str, pl.DataFrame]:
    """AdaStop's table of each experiment of a results folder, by experiment key (``name/prior``):
    a column ``mdp``, then one column per algorithm (its best setting's returns; the oracle left
    out), one row per test MDP.

    Raises:
        FileNotFoundError: ``results_dir`` is not a results folder, or holds no cell.
        ValueError: an experiment's algorithms ran different numbers of test MDPs (a raced grid).
    """
    import numpy as np
    import polars as pl

    from ..protocol.schema import Col
    from .scores import ORACLE_KINDS, best_settings

    results, cells = _load(results_dir)
    competing = cells.filter(~pl.col(Col.KIND).is_in(ORACLE_KINDS))
    tables = {}
    for key, by_algorithm in best_settings(results, competing).items():
        sizes = {a: r.size for a, r in by_algorithm.items()}
        if len(set(sizes.values())) > 1:
            shown = ", ".join(f"{a}: {n}" for a, n in sizes.items())
            raise ValueError(
                f"{results_dir}: in experiment {key} the algorithms' best settings ran different numbers of test "
                f"MDPs ({shown}); AdaStop compares equal numbers of evaluations: export --format csv instead"
            )
        n = next(iter(sizes.values()))
        tables[key] = pl.DataFrame({MDP: np.arange(n, dtype=np.int64), **by_algorithm})
    return tables


def long_table(results_dir: str | os.PathLike[str]) -> pl.DataFrame:
    """Every (cell, test MDP) of a results folder: ``experiment``, ``prior``, ``algorithm``,
    ``label`` (the setting), ``cell_id``, ``mdp``, ``return`` (discounted) and
    ``normalized_score`` (null where the experiment has no Random or Optimal cell)."""
    import polars as pl

    from ..protocol.schema import Col
    from .scores import normalized_by_experiment

    results, cells = _load(results_dir)
    levels = normalized_by_experiment(results, cells).levels
    keys = [Col.EXPERIMENT, Col.PRIOR, Col.ALGORITHM, Col.LABEL, Col.CELL_ID]
    long = results.returns.select(Col.CELL_ID, Col.MDP, Col.RETURN).join(
        cells.select(keys), on=Col.CELL_ID, how="inner", maintain_order="left"
    )
    level = pl.DataFrame(
        {
            Col.EXPERIMENT: [k.split("/", 1)[0] for k in levels],
            Col.PRIOR: [k.split("/", 1)[1] for k in levels],
            "_low": [v[0] for v in levels.values()],
            "_high": [v[1] for v in levels.values()],
        },
        schema={Col.EXPERIMENT: pl.String, Col.PRIOR: pl.String, "_low": pl.Float64, "_high": pl.Float64},
    )
    long = long.join(level, on=[Col.EXPERIMENT, Col.PRIOR], how="left", maintain_order="left")
    normalized = ((pl.col(Col.RETURN) - pl.col("_low")) / (pl.col("_high") - pl.col("_low"))).alias(NORMALIZED)
    return long.select(*keys, pl.col(Col.MDP).alias(MDP), Col.RETURN, normalized)


def _file_stem(key: str) -> str:
    """A file name for experiment key ``name/prior``: ``name-prior``, other characters than
    letters, digits, ``.``, ``_`` and ``-`` replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", key.replace("/", "-"))


def export(results_dir: str | os.PathLike[str], fmt: str, out: str | os.PathLike[str]) -> list[Path]:
    """Writes the results of ``results_dir`` (the output folder of ``bbrl grid run``) in format
    ``fmt`` (one of :data:`FORMATS`) into folder ``out`` (created if missing); returns the files
    written, each written whole.

    Raises:
        ValueError: an unknown format, or results that the format cannot hold (the message says
            why and which format can).
        FileNotFoundError: ``results_dir`` is not a results folder, or holds no cell.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    folder = Path(out)
    if fmt == "rliable":
        scores, columns = rliable_scores(results_dir)
        import numpy as np

        buffer = io.BytesIO()
        np.savez(buffer, **scores)  # float64 arrays only: nothing pickled
        folder.mkdir(parents=True, exist_ok=True)
        return [
            write_atomic(folder / RLIABLE_FILE, buffer.getvalue()),
            write_atomic(folder / RLIABLE_COLUMNS_FILE, columns.write_csv().encode()),
        ]
    if fmt == "adastop":
        tables = adastop_tables(results_dir)
        stems = {key: _file_stem(key) for key in tables}
        if len(set(stems.values())) < len(stems):
            raise ValueError(f"{results_dir}: two experiments give the same file name: {stems}")
        (folder / ADASTOP_FOLDER).mkdir(parents=True, exist_ok=True)
        return [
            write_atomic(folder / ADASTOP_FOLDER / f"{stems[key]}.csv", table.write_csv().encode())
            for key, table in tables.items()
        ]
    table = long_table(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return [write_atomic(folder / LONG_FILE, table.write_csv().encode())]
