"""Fuzz tests of the readers of a results folder's cell files and a race's batches (Parquet): the
bytes damaged, or a column of another type, dropped, emptied or added. ``results.load``,
``grid.status`` and the race's ``read_rows`` read them in-process; one check runs ``bbrl report``."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
from _fuzz import FUZZ, assert_reader_fails_cleanly, fresh_copy, parquet_damaged_bytes
from hypothesis import given
from hypothesis import strategies as st

from bbrl import grid
from bbrl.grid import store
from bbrl.grid.plan import compare
from bbrl.grid.race import read_rows
from bbrl.protocol import results


def _parquet(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


def frame_damage(frame: pl.DataFrame) -> st.SearchStrategy[bytes]:
    """A cell frame with one column changed: of another type, dropped, all null, a row removed, an
    extra column, or a JSON column (params, details) holding something else; written as Parquet."""
    columns = st.sampled_from(frame.columns)

    def retyped(name: str, to: str) -> bytes:
        column = frame[name]
        values = {
            "string": column.cast(pl.String, strict=False).fill_null("x"),
            "integer": pl.Series(name, [7] * frame.height),
            "float": pl.Series(name, [0.5] * frame.height),
            "null": pl.Series(name, [None] * frame.height, dtype=column.dtype),
            "list": pl.Series(name, [[1.0]] * frame.height),
        }[to]
        return _parquet(frame.with_columns(values.alias(name)))

    return st.one_of(
        st.builds(retyped, columns, st.sampled_from(["string", "integer", "float", "null", "list"])),
        columns.map(lambda name: _parquet(frame.drop(name))),
        st.integers(0, frame.height - 1).map(lambda i: _parquet(frame.filter(pl.int_range(pl.len()) != i))),
        st.just(_parquet(frame.head(0))),
        st.just(_parquet(frame.with_columns(pl.lit("extra").alias("extra_column")))),
        st.builds(
            lambda name, text: _parquet(frame.with_columns(pl.lit(text).alias(name))),
            st.sampled_from(["params", "details"]),
            st.sampled_from(["not json", "[1]", '{"a": 1', "null"]),
        ),
    )


def _cell_damage(file: Path) -> st.SearchStrategy[bytes]:
    return st.one_of(frame_damage(pl.read_parquet(file)), parquet_damaged_bytes(file.read_bytes()))


@FUZZ
@given(data=st.data())
def test_cell_files(grid_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    relative = str(next((grid_folder / "cells").rglob("*.parquet")).relative_to(grid_folder))
    damage = data.draw(_cell_damage(grid_folder / relative))
    out = fresh_copy(grid_folder, tmp_path)
    file = out / relative
    file.write_bytes(damage)
    config = store.load_output_config(grid_folder)
    assert_reader_fails_cleanly(lambda: results.load(out), file.name, out)
    # The status reads every cell file: a damaged one is listed as broken, not an error.
    assert_reader_fails_cleanly(lambda: grid.status(config, out), file.name, out)
    assert_reader_fails_cleanly(lambda: compare({c.id: 1.0 for c in config.cells}, config, out), file.name, out)


def _one_by_one(files: list[Path]) -> pl.DataFrame | str:
    try:
        return pl.concat([results.read_cell_file(f) for f in files], how="diagonal_relaxed")
    except results.CellFileError as exc:
        return str(exc)


@FUZZ
@given(data=st.data())
def test_reading_every_cell_file_at_once_accepts_what_reading_each_accepts(
    grid_folder: Path, tmp_path: Path, data: st.DataObject
) -> None:
    # The report reads a folder's cell files in one call when it can: it must accept exactly the
    # files the one-by-one reader accepts, give the same rows, and name the same damaged file.
    files = sorted((grid_folder / "cells").rglob("*.parquet"))
    victim = data.draw(st.integers(0, len(files) - 1))
    damage = data.draw(_cell_damage(files[victim]))
    out = fresh_copy(grid_folder, tmp_path)
    copies = sorted((out / "cells").rglob("*.parquet"))
    copies[victim].write_bytes(damage)
    expected = _one_by_one(copies)
    try:
        got: pl.DataFrame | str = pl.concat(results.read_cell_files(copies), how="diagonal_relaxed")
    except results.CellFileError as exc:
        got = str(exc)
    if isinstance(expected, str):
        assert got == expected
    else:
        assert isinstance(got, pl.DataFrame)
        key = ["cell_index", "mdp"]
        assert got.sort(key).equals(expected.sort(key))
    footers = store._rows_in_footers(copies)
    assert footers == {f: store._rows_in_footer(f) for f in copies}


@FUZZ
@given(data=st.data())
def test_race_batches(race_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    cell = next((race_folder / "cells").rglob("*.parquet"))
    damage = data.draw(_cell_damage(cell))
    out = fresh_copy(race_folder, tmp_path)
    batch = out / "batches" / "0000000-0000004.parquet"
    batch.parent.mkdir(parents=True, exist_ok=True)
    batch.write_bytes(damage)
    # A batch that does not read back whole reads as missing (it is run again).
    rows = read_rows(batch, 0, 4)
    assert rows is None or rows.height == 4


def test_a_cell_file_that_keeps_the_schema_is_accepted(grid_folder: Path, tmp_path: Path) -> None:
    """Other returns in a cell file are read as they are: the threat model's "wrong numbers"."""
    out = fresh_copy(grid_folder, tmp_path)
    file = next((out / "cells").rglob("*.parquet"))
    frame = pl.read_parquet(file)
    file.write_bytes(_parquet(frame.with_columns(pl.lit(1234.5).alias("return"))))
    cells = results.load(out).cells
    assert 1234.5 in cells["mean"].to_list()


def test_bbrl_report_names_a_damaged_cell_file_in_one_line(grid_folder: Path, tmp_path: Path) -> None:
    out = fresh_copy(grid_folder, tmp_path)
    file = next((out / "cells").rglob("*.parquet"))
    file.write_bytes(file.read_bytes()[:100])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "bbrl", "report", str(out), "--out", str(tmp_path / "report")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and file.name in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1, done.stderr
