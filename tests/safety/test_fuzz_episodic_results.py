"""Fuzz tests of the reader of an episodic results folder (``bbrl.episodic.read_results``): its
settings file (JSON) damaged field by field or byte by byte, its per-episode table (Parquet)
damaged byte by byte or edited (a column of another type, dropped, all null, a row removed, an
extra column). The reader, and the regret table built from what it accepts, fail only with the
documented one-line errors naming the file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest
from _fuzz import FUZZ, assert_reader_fails_cleanly, fresh_copy, named_json_damage, parquet_damaged_bytes
from hypothesis import given
from hypothesis import strategies as st

from bbrl import agents
from bbrl.episodic import EpisodicExperiment, read_results, regret_table, save_results
from bbrl.episodic.results import EPISODES_FILE, SETTINGS_FILE


@pytest.fixture(scope="module")
def episodic_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exp = EpisodicExperiment("RiverSwim-Osband", episodes=4, n_runs=2, seed=1)
    runs = [exp.run(agents.PSRL(), threads=1), exp.run(agents.Random(), threads=1)]
    return save_results(tmp_path_factory.mktemp("episodic") / "out", runs, {"problem": exp.name, "episodes": 4})


def _parquet(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


def frame_damage(frame: pl.DataFrame) -> st.SearchStrategy[bytes]:
    """The per-episode frame with one column changed (another type, dropped, all null), a row
    removed or duplicated, no rows, or an extra column; written as Parquet."""
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

    rows = st.integers(0, frame.height - 1)
    return st.one_of(
        st.builds(retyped, columns, st.sampled_from(["string", "integer", "float", "null", "list"])),
        columns.map(lambda name: _parquet(frame.drop(name))),
        rows.map(lambda i: _parquet(frame.filter(pl.int_range(pl.len()) != i))),
        rows.map(lambda i: _parquet(pl.concat([frame, frame.slice(i, 1)]))),
        st.just(_parquet(frame.head(0))),
        st.just(_parquet(frame.with_columns(pl.lit("extra").alias("extra_column")))),
    )


def _read_and_tabulate(folder: Path) -> None:
    frame, _ = read_results(folder)
    regret_table(frame)


@FUZZ
@given(data=st.data())
def test_settings_file(episodic_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    document = json.loads((episodic_folder / SETTINGS_FILE).read_text())
    damage, field = data.draw(named_json_damage(document))
    out = fresh_copy(episodic_folder, tmp_path)
    (out / SETTINGS_FILE).write_bytes(damage)
    # The settings object's own fields are the writer's (free-form); the envelope's are checked.
    fields = [field] if field in ("format", "bbrl_version", "settings") else []
    assert_reader_fails_cleanly(lambda: _read_and_tabulate(out), SETTINGS_FILE, out, fields)


@FUZZ
@given(data=st.data())
def test_episodes_file(episodic_folder: Path, tmp_path: Path, data: st.DataObject) -> None:
    file = episodic_folder / EPISODES_FILE
    damage = data.draw(st.one_of(frame_damage(pl.read_parquet(file)), parquet_damaged_bytes(file.read_bytes())))
    out = fresh_copy(episodic_folder, tmp_path)
    (out / EPISODES_FILE).write_bytes(damage)
    assert_reader_fails_cleanly(lambda: _read_and_tabulate(out), EPISODES_FILE, out)


def test_a_missing_file_is_named(episodic_folder: Path, tmp_path: Path) -> None:
    out = fresh_copy(episodic_folder, tmp_path)
    (out / EPISODES_FILE).unlink()
    with pytest.raises(FileNotFoundError, match=EPISODES_FILE):
        read_results(out)
    with pytest.raises(FileNotFoundError, match=SETTINGS_FILE):
        read_results(tmp_path / "nowhere")
