"""Distributions: built-ins equal the original files, file formats, validation, sampling."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import bbrl
from bbrl import distributions
from bbrl.distributions import compact

#: The built-ins that reproduce a file of the original library (the registry may hold more).
BUILTIN_NAMES = ["GC", "GDL", "Grid", "UGC", "UGDL", "UGrid"]


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_builtins_equal_the_original_files(shared_data: Path, name: str) -> None:
    loaded = distributions.load(shared_data / f"bbrl-{name}-distrib.dat")
    builtin = distributions.get(name)
    assert loaded == builtin
    assert loaded.name == builtin.name == name
    assert loaded.long_name == builtin.long_name
    assert np.array_equal(loaded.theta, builtin.theta)
    assert np.array_equal(loaded.rewards, builtin.rewards)
    assert loaded.initial_state == builtin.initial_state == 0


def test_fixtures_match_the_recorded_checksums(shared_data: Path) -> None:
    """The six fixtures are the original library's files, byte for byte: their SHA-256 digests were
    recorded in tests/data/SHA256SUMS from the reference copy, so this runs in any clone."""
    import hashlib

    DATA = shared_data

    recorded = {}
    for line in (DATA / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        recorded[name] = digest
    assert sorted(recorded) == sorted(f"bbrl-{name}-distrib.dat" for name in BUILTIN_NAMES)
    for file, digest in recorded.items():
        assert hashlib.sha256((DATA / file).read_bytes()).hexdigest() == digest, file


def test_builtin_facts_from_the_spec() -> None:
    gc = distributions.generalized_chain()
    assert (gc.n_states, gc.n_actions) == (5, 3)
    assert np.flatnonzero(gc.theta[4, 0]).tolist() == [0, 4]  # the file, not the paper's appendix
    gdl = distributions.generalized_double_loop()
    assert (gdl.n_states, gdl.n_actions, gdl.r_max) == (9, 2, 2.0)
    grid = distributions.grid()
    assert (grid.n_states, grid.n_actions) == (25, 4)
    assert np.flatnonzero(grid.theta[19, 3]).tolist() == [0, 19]
    assert grid.rewards[23, 1, 0] == 10.0
    assert not grid.theta[:24, :, 24].any()  # the goal cell is never reached from another cell
    assert np.flatnonzero(grid.theta[0, 0]).tolist() == [0]  # left from the corner stays put


def test_uniform_prior_and_names() -> None:
    gc = distributions.generalized_chain()
    u = gc.uniform()
    assert u.name == "UGC" and u == distributions.get("UGC")
    assert np.all(u.theta == 1.0) and np.array_equal(u.rewards, gc.rewards)
    assert distributions.get("ugrid") == distributions.get("UGrid")
    assert set(BUILTIN_NAMES) <= set(distributions.names())
    with pytest.raises(ValueError, match="unknown distribution 'XYZ'"):
        distributions.get("XYZ")


def test_default_horizon_is_the_papers_formula() -> None:
    assert distributions.get("GC").default_horizon(0.95) == 193
    assert distributions.get("Grid").default_horizon(0.95) == 193
    assert distributions.get("GDL").default_horizon(0.95) == 161


def test_json_round_trip(tmp_path: Path) -> None:
    for name in distributions.names():
        path = distributions.get(name).save(tmp_path / f"{name}.json")
        again = distributions.load(path)
        assert again == distributions.get(name) and again.name == name
    assert not list(tmp_path.glob("*.tmp"))


def test_compressed_original_format(tmp_path: Path, shared_data: Path) -> None:
    text = (shared_data / "bbrl-GDL-distrib.dat").read_bytes()
    path = tmp_path / "GDL.dat.zz"
    path.write_bytes(zlib.compress(text, 9))
    assert distributions.load(path) == distributions.get("GDL")


def test_bad_files(tmp_path: Path, shared_data: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        distributions.load(tmp_path / "missing.dat")
    lines = (shared_data / "bbrl-GC-distrib.dat").read_text().splitlines()
    truncated = tmp_path / "truncated.dat"
    truncated.write_text("\n".join(lines[:20]))
    with pytest.raises(ValueError, match="truncated"):
        distributions.load(truncated)
    garbage = tmp_path / "garbage.dat"
    garbage.write_bytes(b"\x00\xff\x13 not a distribution")
    with pytest.raises(ValueError):
        distributions.load(garbage)
    wrong_class = tmp_path / "wrong.dat"
    wrong_class.write_text("\n".join(["Serializable", "0", "IExperiment", *lines[3:]]))
    with pytest.raises(ValueError, match="not a BBRL distribution"):
        distributions.load(wrong_class)
    bad_number = tmp_path / "bad_number.dat"
    bad_number.write_text("\n".join([*lines[:13], "1\tx\t0\t0\t0", *lines[14:]]))
    with pytest.raises(ValueError, match="line 14"):
        distributions.load(bad_number)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"format": "bbrl-fdm", "version": 1, "name": "x"')
    with pytest.raises(ValueError, match="invalid JSON"):
        distributions.load(bad_json)
    negative = tmp_path / "negative.json"
    negative.write_text(
        '{"format": "bbrl-fdm", "version": 1, "name": "x", "initial_state": 0,'
        ' "theta": [[[1, -1], [1, 1]], [[1, 1], [1, 1]]], "rewards": [[[0, 0], [0, 0]], [[0, 0], [0, 0]]]}'
    )
    with pytest.raises(ValueError, match=r"theta\[0, 0, 1\]"):
        distributions.load(negative)


def test_save_is_atomic_and_checks_the_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        distributions.get("GC").save(tmp_path / "no" / "such" / "folder.json")


def _tables(S: int = 2, A: int = 1) -> tuple[np.ndarray, np.ndarray]:
    return np.ones((S, A, S)), np.zeros((S, A, S))


@pytest.mark.parametrize(
    ("mutate", "error", "match"),
    [
        (lambda t, r: (t * -1, r), ValueError, "must be finite and >= 0"),
        (lambda t, r: (np.where(t > 0, np.nan, t), r), ValueError, "finite"),
        (lambda t, r: (np.zeros_like(t), r), ValueError, "all zero"),
        (lambda t, r: (t, np.zeros((3, 1, 3))), ValueError, "differs from theta shape"),
        (lambda t, r: (t[:, :, :1], r), ValueError, r"shape \(S, A, S\)"),
        (lambda t, r: (t, np.full_like(r, np.inf)), ValueError, "finite"),
        (lambda t, r: ("abc", r), TypeError, "array of numbers"),
    ],
)
def test_fdm_validation(mutate, error, match) -> None:  # type: ignore[no-untyped-def]
    theta, rewards = mutate(*_tables())
    with pytest.raises(error, match=match):
        distributions.FDM(theta, rewards, 0)


def test_fdm_initial_state_validation() -> None:
    theta, rewards = _tables()
    with pytest.raises(ValueError, match="out of range"):
        distributions.FDM(theta, rewards, 2)
    with pytest.raises(TypeError, match="initial_state"):
        distributions.FDM(theta, rewards, 0.5)  # type: ignore[arg-type]
    assert distributions.FDM(theta, rewards, None).initial_state is None


def test_arrays_are_read_only_copies() -> None:
    theta, rewards = _tables()
    fdm = distributions.FDM(theta, rewards, 0, name="mine")
    theta[0, 0, 0] = 5.0
    assert fdm.theta[0, 0, 0] == 1.0
    with pytest.raises(ValueError):
        fdm.theta[0, 0, 0] = 2.0


@st.composite
def fdm_tables(draw: st.DrawFn) -> np.ndarray:
    S = draw(st.integers(1, 6))
    A = draw(st.integers(1, 3))
    theta = draw(
        arrays(np.float64, (S, A, S), elements=st.one_of(st.just(0.0), st.floats(0.01, 20.0, allow_subnormal=False)))
    )
    # Every row needs one positive concentration.
    for s in range(S):
        for a in range(A):
            if not theta[s, a].any():
                theta[s, a, draw(st.integers(0, S - 1))] = 1.0
    return theta


@given(theta=fdm_tables(), seed=st.integers(0, 2**64 - 1))
def test_sampled_mdps_sum_to_one_and_keep_the_support(theta: np.ndarray, seed: int) -> None:
    fdm = bbrl.FDM(theta, np.zeros_like(theta), 0)
    P = fdm.sample(seed)
    assert P.shape == theta.shape
    np.testing.assert_allclose(P.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(P[theta == 0] == 0.0)
    assert np.all(P >= 0)


@pytest.mark.parametrize("name", ["GC", "UGDL", "Grid"])
def test_saved_files_read_back_bit_for_bit_and_version_1_files_still_read(tmp_path: Path, name: str) -> None:
    fdm = distributions.get(name)
    # Zeros of both signs and row-varying rewards: the compact form keeps every bit.
    rewards = fdm.rewards.copy()
    rewards[0, 0, :] = -0.0
    rewards[1, 0, 1] = 0.1 + 0.2
    fdm = distributions.FDM(fdm.theta, rewards, fdm.initial_state, fdm.name, fdm.long_name)
    path = fdm.save(tmp_path / "new.json")
    document = json.loads(path.read_text())
    assert document["version"] == 2 and isinstance(document["theta"], dict)
    back = distributions.load(path)
    assert back == fdm
    for table, original in ((back.theta, fdm.theta), (back.rewards, fdm.rewards)):
        assert np.array_equal(table.view(np.int64), original.view(np.int64))
    # A file of earlier versions (version 1, nested lists, indented) reads as before.
    old = tmp_path / "old.json"
    old.write_text(json.dumps(fdm.to_document(), indent=1) + "\n")
    assert json.loads(old.read_text())["version"] == 1
    assert distributions.load(old) == fdm


def test_the_compact_form_keeps_only_what_differs_from_each_row() -> None:
    table = np.zeros((2, 2, 2))
    table[0, 1, 1] = 3.0
    table[1, 1, :] = 5.0
    encoded = compact.encode_table(table)
    assert encoded == {"shape": [2, 2, 2], "default": [0.0, 0.0, 0.0, 5.0], "index": [3], "value": [3.0]}
    assert np.array_equal(compact.decode_table(encoded, "t"), table)
    assert compact.encode_table(np.ones((2, 1, 2)))["default"] == 1.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"shape": [2, 2, 3]}, r"theta: shape must be \[S, A, S\]"),
        ({"shape": [2, True, 2]}, r"theta: shape must be"),
        ({"default": [1.0, 2.0]}, r"theta: default must be one number or S \* A = 4 numbers"),
        ({"default": "1"}, r"theta: default: expected a number or a list of numbers"),
        ({"index": [3, 1], "value": [1.0, 1.0]}, r"theta: index: indices must be strictly increasing"),
        ({"index": [8], "value": [1.0]}, r"theta: index: an index is outside the table's 8 entries"),
        ({"index": [1.5], "value": [1.0]}, r"theta: index: expected a list of integers"),
        ({"index": [1], "value": []}, r"theta: index and value differ in length"),
        ({"value": [True]}, r"theta: value: expected a list of numbers"),
        ({"extra": 1}, r"theta: a compact table has exactly the keys"),
    ],
)
def test_malformed_compact_tables_are_refused_by_name(change: dict[str, object], message: str) -> None:
    document = distributions.FDM(np.ones((2, 2, 2)), np.zeros((2, 2, 2))).to_document(compact=True)
    document["theta"] = {**document["theta"], "index": [0], "value": [2.0], **change}
    with pytest.raises(ValueError, match=rf"doc: {message}"):
        distributions.from_document(document, "doc")
    # Compact tables are version 2's: in a version-1 document they are refused too.
    document = distributions.FDM(np.ones((2, 2, 2)), np.zeros((2, 2, 2))).to_document(compact=True)
    document["version"] = 1
    with pytest.raises(ValueError, match="doc: theta must be an array of numbers"):
        distributions.from_document(document, "doc")
