"""Fuzz tests of the readers of the files a user gives bbrl (docs/safety.md): grid configurations
(TOML), calibrations, distribution files (bbrl's JSON, the original BBRL text, plain and
zlib-compressed), value-error reference files, replay logs (CSV, Parquet) and logging policies
(.npy), and OPPS-DS's saved text. Each reader is called in-process on a damaged copy of a valid
file built here."""

from __future__ import annotations

import io
import json
import zlib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from _fuzz import (
    FUZZ,
    TINY_GRID,
    assert_reader_fails_cleanly,
    damaged_bytes,
    json_damage,
    named_json_damage,
    parquet_damaged_bytes,
)
from hypothesis import given
from hypothesis import strategies as st

from bbrl import _core, agents, distributions, formulas, grid, replay
from bbrl import value_error as ve
from bbrl.analysis.cost import load_calibration, reference_calibration
from bbrl.distributions import bbrl_format

DATA = Path(__file__).resolve().parent.parent / "data"


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# -- grid configurations ------------------------------------------------------------------------

#: TOML values of every type, to put where another is expected.
TOML_VALUES = ["1", "-1", "0", "1.5", "nan", "true", '"x"', '""', "[]", "[1, 2]", "{}", '"GC"', "2e400"]


def toml_damage(text: str) -> st.SearchStrategy[bytes]:
    """A configuration with one line's value of another type, one line dropped, an extra line,
    or damaged bytes."""
    lines = text.splitlines()
    assignments = [i for i, line in enumerate(lines) if "=" in line]

    def retyped(i: int, value: str) -> bytes:
        key = lines[i].split("=")[0]
        return "\n".join([*lines[:i], f"{key}= {value}", *lines[i + 1 :]]).encode()

    def dropped(i: int) -> bytes:
        return "\n".join(lines[:i] + lines[i + 1 :]).encode()

    def added(i: int, value: str) -> bytes:
        return "\n".join([*lines[: i + 1], f"extra_key = {value}", *lines[i + 1 :]]).encode()

    values = st.sampled_from(TOML_VALUES)
    return st.one_of(
        st.builds(retyped, st.sampled_from(assignments), values),
        st.builds(dropped, st.integers(0, len(lines) - 1)),
        st.builds(added, st.integers(0, len(lines) - 1), values),
        damaged_bytes(text.encode()),
    )


@FUZZ
@given(damage=toml_damage(TINY_GRID))
def test_grid_configurations(tmp_path: Path, damage: bytes) -> None:
    path = _write(tmp_path, "grid.toml", damage)
    assert_reader_fails_cleanly(lambda: grid.load_config(path), path.name, tmp_path)


# -- calibrations -------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_calibrations(tmp_path: Path, data: st.DataObject) -> None:
    damage, field = data.draw(named_json_damage(reference_calibration().to_document()))
    path = _write(tmp_path, "calibration.json", damage)
    assert_reader_fails_cleanly(lambda: load_calibration(path), path.name, tmp_path, [field] if field else [])


# -- distribution files -------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_distribution_json_files(tmp_path: Path, data: st.DataObject) -> None:
    document = distributions.get("GC").to_document()
    path = _write(tmp_path, "gc.json", data.draw(json_damage(document)))
    assert_reader_fails_cleanly(lambda: distributions.load(path), path.name, tmp_path)


@FUZZ
@given(data=st.data())
def test_compact_distribution_json_files(tmp_path: Path, data: st.DataObject) -> None:
    """The version written (compact tables), damaged as the version-1 files above."""
    document = distributions.get("Grid").to_document(compact=True)
    path = _write(tmp_path, "grid.json", data.draw(json_damage(document)))
    assert_reader_fails_cleanly(lambda: distributions.load(path), path.name, tmp_path)


def test_a_compact_distribution_announcing_a_huge_table_is_refused_before_allocating(tmp_path: Path) -> None:
    document = distributions.get("GC").to_document(compact=True)
    document["theta"]["shape"] = [100_000, 100, 100_000]
    path = _write(tmp_path, "huge.json", json.dumps(document).encode())
    with pytest.raises(ValueError, match=r"huge\.json: theta: shape \[100000, 100, 100000\] has more than"):
        distributions.load(path)


def bbrl_text_damage(text: str) -> st.SearchStrategy[bytes]:
    """The original text format damaged: a number replaced by another token, a line dropped or
    repeated, or damaged bytes."""
    lines = text.splitlines()
    tokens = st.sampled_from(["-1", "0", "1e308", "nan", "x", "", "99999999999", "3.5", "1 2"])

    def replaced(i: int, token: str) -> bytes:
        return "\n".join([*lines[:i], token, *lines[i + 1 :]]).encode()

    def dropped(i: int) -> bytes:
        return "\n".join(lines[:i] + lines[i + 1 :]).encode()

    def repeated(i: int) -> bytes:
        return "\n".join(lines[: i + 1] + lines[i:]).encode()

    index = st.integers(0, len(lines) - 1)
    return st.one_of(
        st.builds(replaced, index, tokens), index.map(dropped), index.map(repeated), damaged_bytes(text.encode())
    )


@FUZZ
@given(damage=bbrl_text_damage((DATA / "bbrl-GC-distrib.dat").read_text()))
def test_bbrl_text_distribution_files(tmp_path: Path, damage: bytes) -> None:
    path = _write(tmp_path, "gc.dat", damage)
    assert_reader_fails_cleanly(lambda: distributions.load(path), path.name, tmp_path)


@FUZZ
@given(damage=bbrl_text_damage((DATA / "bbrl-GC-distrib.dat").read_text()).map(zlib.compress))
def test_compressed_bbrl_distribution_files(tmp_path: Path, damage: bytes) -> None:
    path = _write(tmp_path, "gc.dat.zz", damage)
    assert_reader_fails_cleanly(lambda: distributions.load(path), path.name, tmp_path)


def test_a_compressed_distribution_file_inflating_past_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zlib bomb (a few kilobytes inflating to more than the cap) is refused without inflating it
    whole; the cap is lowered to 1 MiB here, so that the test does not inflate 256 MiB."""
    monkeypatch.setattr(bbrl_format, "MAX_TEXT_BYTES", 2**20)
    bomb = zlib.compress(b"Serializable\n" + b"0" * 2**24, 9)
    assert len(bomb) < 2**16
    path = _write(tmp_path, "bomb.dat", bomb)
    with pytest.raises(ValueError, match=r"bomb\.dat.*inflates to more than 1 MiB"):
        distributions.load(path)
    # Under the cap, the same stream is inflated (and refused as text that is not a distribution).
    monkeypatch.setattr(bbrl_format, "MAX_TEXT_BYTES", 2**25)
    with pytest.raises(ValueError, match=r"bomb\.dat.*line"):
        distributions.load(path)


def test_a_bbrl_file_announcing_huge_sizes_is_refused_before_allocating(tmp_path: Path) -> None:
    text = (DATA / "bbrl-GC-distrib.dat").read_text().replace("\n5\n3\n", "\n100000000\n100000\n", 1)
    path = _write(tmp_path, "huge.dat", text.encode())
    with pytest.raises(ValueError, match=r"huge\.dat"):
        distributions.load(path)


def test_distribution_files_that_keep_the_schema_are_accepted(tmp_path: Path) -> None:
    document = distributions.get("GC").to_document()
    document["rewards"][0][0][0] = 7.5
    path = _write(tmp_path, "gc.json", json.dumps(document).encode())
    assert distributions.load(path).rewards[0, 0, 0] == 7.5
    compressed = _write(tmp_path, "gc.dat.zz", zlib.compress((DATA / "bbrl-GC-distrib.dat").read_bytes()))
    assert distributions.load(compressed).n_states == 5


# -- value-error reference files ----------------------------------------------------------------


@pytest.fixture(scope="module")
def references_frame() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    transitions, rewards = rng.dirichlet(np.ones(3), size=(3, 2)), rng.random((3, 2, 3))
    env = ve.finite_mdp(transitions, rewards, np.array([1.0, 0.0, 0.0]), 0.8)
    refs = ve.reference_values(env, ve.uniform_policy(2), 2, epsilon=0.5, delta=0.2, tau=1.0, c=0.5)
    return refs.to_polars()


def parquet_frame_damage(frame: pl.DataFrame) -> st.SearchStrategy[bytes]:
    """A frame with a column of another type, dropped, emptied or added, or no rows; as Parquet."""

    def parquet(changed: pl.DataFrame) -> bytes:
        buffer = io.BytesIO()
        changed.write_parquet(buffer)
        return buffer.getvalue()

    def retyped(name: str, value: object) -> bytes:
        column = pl.Series(name, [value] * frame.height, dtype=pl.Object if isinstance(value, dict) else None)
        return parquet(frame.with_columns(column.cast(pl.String) if isinstance(value, dict) else column))

    columns = st.sampled_from(frame.columns)
    values = st.sampled_from([None, "x", 1, -1, 1.5, True, [1.0]])
    return st.one_of(
        st.builds(retyped, columns, values),
        columns.map(lambda name: parquet(frame.drop(name))),
        st.just(parquet(frame.head(0))),
        st.just(parquet(frame.with_columns(pl.lit(1).alias("extra_column")))),
    )


@FUZZ
@given(data=st.data())
def test_value_error_reference_files(tmp_path: Path, references_frame: pl.DataFrame, data: st.DataObject) -> None:
    buffer = io.BytesIO()
    references_frame.write_parquet(buffer)
    damage = data.draw(st.one_of(parquet_frame_damage(references_frame), parquet_damaged_bytes(buffer.getvalue())))
    path = _write(tmp_path, "refs.parquet", damage)
    assert_reader_fails_cleanly(lambda: ve.References.load(path), path.name, tmp_path)


# -- replay logs and logging policies -----------------------------------------------------------

LOG = pl.DataFrame(
    {
        "episode": [0, 0, 0, 1, 1],
        "t": [0, 1, 2, 0, 1],
        "state": [0, 1, 0, 0, 1],
        "action": [0, 1, 1, 0, 0],
        "reward": [0.0, 1.0, 0.5, 0.0, 1.0],
        "next_state": [1, 0, 1, 1, 0],
    }
)
POLICY = np.full((2, 2), 0.5)


def _log_damage(suffix: str) -> st.SearchStrategy[bytes]:
    if suffix == ".parquet":
        buffer = io.BytesIO()
        LOG.write_parquet(buffer)
        return st.one_of(parquet_frame_damage(LOG), parquet_damaged_bytes(buffer.getvalue()))
    text = LOG.write_csv()
    lines = text.splitlines()
    cells = st.builds(
        lambda row, column, value: "\n".join(
            [
                *lines[:row],
                ",".join(value if i == column else v for i, v in enumerate(lines[row].split(","))),
                *lines[row + 1 :],
            ]
        ).encode(),
        st.integers(0, len(lines) - 1),
        st.integers(0, len(LOG.columns) - 1),
        st.sampled_from(["", "x", "-1", "1.5", "1e400", "nan", '"', "99999999999999999999"]),
    )
    return st.one_of(cells, damaged_bytes(text.encode()))


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_replay_logs(tmp_path: Path, suffix: str) -> None:
    @FUZZ
    @given(damage=_log_damage(suffix))
    def check(damage: bytes) -> None:
        path = _write(tmp_path, f"log{suffix}", damage)
        assert_reader_fails_cleanly(lambda: replay.Dataset(path, 2, 2, logging_policy=POLICY), path.name, tmp_path)

    check()


@FUZZ
@given(data=st.data())
def test_logging_policy_files(tmp_path: Path, data: st.DataObject) -> None:
    buffer = io.BytesIO()
    np.save(buffer, POLICY)
    other = st.sampled_from([np.array(["a", "b"]), np.ones((2, 3)), np.array(1.0), np.array([[0.9, 0.9], [0.5, 0.5]])])

    def saved(array: np.ndarray) -> bytes:
        out = io.BytesIO()
        np.save(out, array)
        return out.getvalue()

    damage = data.draw(st.one_of(damaged_bytes(buffer.getvalue()), other.map(saved)))
    path = _write(tmp_path, "policy.npy", damage)

    def read() -> None:
        replay.Dataset(LOG, 2, 2, logging_policy=replay.read_logging_policy(path))

    # The file is named by the reader; a table of numbers that is not a policy, by the argument.
    assert_reader_fails_cleanly(read, [path.name, "logging policy", "logging_policy"], tmp_path)


# -- OPPS-DS's saved text -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def opps_text() -> str:
    prior = distributions.get("GC")
    return agents.OPPSDS(formula_set=2, n_draws=5).train(prior, 0.95, 5, 0)._core.saved_text()


def saved_text_damage(text: str) -> st.SearchStrategy[str]:
    lines = text.splitlines()
    words = st.sampled_from(["-1", "0", "1e308", "nan", "x", "", "99999999999999999999", "3.5", "-", "X0 ADD"])

    def replaced(i: int, j: int, word: str) -> str:
        parts = lines[i].split(" ")
        parts[j % len(parts)] = word
        return "\n".join([*lines[:i], " ".join(parts), *lines[i + 1 :]])

    index = st.integers(0, len(lines) - 1)
    return st.one_of(
        st.builds(replaced, index, st.integers(0, 100), words),
        index.map(lambda i: "\n".join(lines[:i] + lines[i + 1 :])),
        st.integers(0, len(text)).map(lambda n: text[:n]),
        st.text(max_size=200),
    )


def test_opps_ds_saved_text(opps_text: str) -> None:
    @FUZZ
    @given(text=saved_text_damage(opps_text))
    def check(text: str) -> None:
        try:
            _core.Agent.load(text, 5, 3, 0.95, 5)
        except ValueError as exc:
            assert "\n" not in str(exc).strip()

    check()


# -- formulas -----------------------------------------------------------------------------------

FORMULA_TOKENS = [
    "X0",
    "X1",
    "X2",
    "ADD2",
    "SUB",
    "MUL",
    "DIV",
    "INV",
    "SQRT",
    "LN",
    "1",
    "-1",
    "(",
    ")",
    "+",
    "*",
    "x",
]


@FUZZ
@given(text=st.one_of(st.text(max_size=60), st.lists(st.sampled_from(FORMULA_TOKENS), max_size=12).map(" ".join)))
def test_formula_texts(text: str) -> None:
    """A formula (a Formula agent's parameter, an OPPS-DS formula list) parses or is refused in one line."""
    for parse in (formulas.parse, lambda t: agents.OPPSDS(formula_set=t or "x", n_draws=1)):
        try:
            parse(text)
        except ValueError as exc:
            assert "\n" not in str(exc).strip()
