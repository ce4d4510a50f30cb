"""Property tests of the grid's bookkeeping: cell ids that do not depend on how a configuration
spells a setting, shards that partition any grid, and result files that read back whole."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from hypothesis import assume, given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from rich.console import Console

from bbrl import agents, grid
from bbrl.fileio import write_atomic
from bbrl.grid.store import cell_path
from bbrl.protocol import results, schema

# --- cell ids -------------------------------------------------------------------------------------

FLAG = st.booleans()
#: Open-ended ranges are drawn up to these (a cell id is parsed, never run).
FLOAT_CAP, INT_CAP = 1e3, 10**6
#: Above an open lower bound (``> 0``): a float nudged down by one step must stay in range.
OPEN_MARGIN = 1e-6


def _values(kind: str, param: dict[str, Any], field: str) -> st.SearchStrategy[Any]:
    """The values a parameter may take, from its registry entry: booleans; numbers within the range
    it states (its typed ``min`` and ``max``); strings from the kind's example settings, as the
    record normalises them (only those a TOML scalar can spell)."""
    if param["type"] == "bool":
        return FLAG
    if param["type"] == "str":
        values = {getattr(a, field) for a in agents.examples(kind)}
        return st.sampled_from(sorted((v for v in values if isinstance(v, (str, int))), key=str))
    # The registry's typed range (one source with the core's checks and the docs).
    assert param["min"] is not None, f"{kind}.{param['name']}: no lower bound in its range {param['range']!r}"
    low, high, open_low = param["min"], param["max"], not param["min_inclusive"]
    assert high is None or param["max_inclusive"], f"{kind}.{param['name']}: an open upper bound"
    if param["type"] == "int":
        return st.integers(int(low) + open_low, INT_CAP if high is None else int(high))
    return st.floats(low + OPEN_MARGIN * open_low, FLOAT_CAP if high is None else high)


def _parameters(entry: dict[str, Any]) -> dict[str, tuple[Any, st.SearchStrategy[Any]]]:
    cls = agents.kinds()[entry["kind"]]
    return {
        field.name: (None if p["required"] else p["default"], _values(entry["kind"], p, field.name))
        for p, field in zip(entry["params"], dataclasses.fields(cls), strict=True)
    }


#: Every parameter of every kind of the registry, by the record's names, with its default (None:
#: required) and its values.
AGENTS: dict[str, dict[str, tuple[Any, st.SearchStrategy[Any]]]] = {e["kind"]: _parameters(e) for e in agents.REGISTRY}
#: The kinds with parameters to vary.
WITH_PARAMETERS = sorted(kind for kind, params in AGENTS.items() if params)


@st.composite
def settings(draw: st.DrawFn, kind: str | None = None) -> tuple[str, dict[str, Any], bool]:
    """An agent kind, every one of its parameters (normalised: floats are floats, never -0.0) and
    whether the experiment records per-step rewards."""
    kind = kind if kind is not None else draw(st.sampled_from(WITH_PARAMETERS))
    params = {name: draw(values) for name, (_, values) in AGENTS[kind].items()}
    params = {k: v + 0.0 if isinstance(v, float) else v for k, v in params.items()}
    # Each parameter is drawn from its own range; a few values exclude each other (UCRL2's
    # reference = "tabularl" needs rewards = "learned"), and only settings the agent accepts count.
    assume(_accepted(kind, params))
    return kind, params, draw(FLAG)


def _accepted(kind: str, params: dict[str, Any]) -> bool:
    try:
        agents.create(kind, params)
    except ValueError:
        return False
    return True


@st.composite
def spelled_kind(draw: st.DrawFn, kind: str) -> str:
    """Any case, with '-' or '_' anywhere (what the configuration accepts for a kind)."""
    out = []
    for ch in kind:
        out.append(draw(st.sampled_from([ch, ch.upper()])) + draw(st.sampled_from(["", "", "-", "_"])))
    return "".join(out)


@st.composite
def spelled_value(draw: st.DrawFn, value: Any) -> str:
    """One TOML spelling of a value: booleans as such; integers in decimal, hex or with underscores;
    floats by repr, with 17 significant digits, in exponent form, or as an integer when integral;
    any of them alone or in a one-element list."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value)
    elif isinstance(value, int):
        text = draw(st.sampled_from([str(value), hex(value), f"{value:_}"]))
    else:
        choices = [repr(value), f"{value:.17g}", f"{value:.17e}"]
        if value.is_integer() and abs(value) < 2**53:
            choices.append(str(int(value)))
        text = draw(st.sampled_from(choices))
    return draw(st.sampled_from([text, f"[{text}]", f"[ {text} , ]"]))


@st.composite
def spelled_config(draw: st.DrawFn, setting: tuple[str, dict[str, Any], bool]) -> str:
    """A configuration of one cell: the setting's agent in any spelling, its parameters in any order
    and spelling, defaults written out or left implicit, record_rewards in [defaults] or in the
    experiment (or left out when false), and a block name of no consequence."""
    kind, params, record = setting
    names = draw(st.permutations(list(params)))
    lines = [f'kind = "{draw(spelled_kind(kind))}"']
    if draw(FLAG):
        lines.append(f'block = "{draw(st.text("abcXYZ 0123", max_size=8))}"')
    for name in names:
        default = AGENTS[kind][name][0]
        if params[name] == default and draw(FLAG):
            continue  # a default left implicit
        key = draw(st.sampled_from([name, f'"{name}"']))
        lines.append(f"{key} = {draw(spelled_value(params[name]))}")
    experiment = ['name = "GC"', 'test = "GC"', 'prior = "UGC"']
    defaults = []
    if record or draw(FLAG):
        line = f"record_rewards = {'true' if record else 'false'}"
        (defaults if draw(FLAG) else experiment).append(line)
    text = "[defaults]\n" + "\n".join(defaults) + "\n\n" if defaults else ""
    return text + "[[experiment]]\n" + "\n".join(experiment) + "\n\n[[agent]]\n" + "\n".join(lines) + "\n"


def _only_id(text: str) -> str:
    config = grid.parse_config(text)
    assert len(config.cells) == 1, text
    return config.cells[0].id


@st.composite
def setting_and_two_spellings(draw: st.DrawFn) -> tuple[tuple[str, dict[str, Any], bool], str, str]:
    setting = draw(settings())
    return setting, draw(spelled_config(setting)), draw(spelled_config(setting))


@given(setting_and_two_spellings())
def test_cell_id_does_not_depend_on_spelling_or_order(case: tuple[tuple[str, dict[str, Any], bool], str, str]) -> None:
    (kind, params, record), first, second = case
    cell_id = _only_id(first)
    assert cell_id == _only_id(second), (first, second)
    # What the id says, read back: the experiment, the kind, every parameter and the recording.
    assert cell_id.endswith("+rewards") == record
    head = cell_id.removesuffix("+rewards")
    assert head.split("/")[:3] == ["GC", "UGC", kind]
    written = dict(pair.split("=") for pair in head.split("/", 3)[3].split(","))
    assert written.keys() == params.keys()
    for name, value in params.items():
        if isinstance(value, bool):
            assert written[name] == ("true" if value else "false")
        elif isinstance(value, str):
            assert written[name] == value
        elif isinstance(value, int):
            assert int(written[name]) == value
        else:
            assert float(written[name]) == value


@st.composite
def two_settings(draw: st.DrawFn) -> tuple[tuple[str, dict[str, Any], bool], tuple[str, dict[str, Any], bool]]:
    first = draw(settings())
    how = draw(st.sampled_from(["any", "same kind", "nudged"]))
    if how != "nudged":
        return first, draw(settings(first[0] if how == "same kind" else None))
    # The nearest different setting: one number moved by one float step (or one), or a flag negated.
    kind, params, record = first
    numbers = sorted(k for k, v in params.items() if not isinstance(v, str))
    if not numbers:
        return first, draw(settings())
    name = draw(st.sampled_from(numbers))
    value = params[name]
    if isinstance(value, bool):
        nudged: Any = not value
    elif isinstance(value, int):
        nudged = value + 1
    else:
        nudged = math.nextafter(value, 0.0 if value > 0 else 1.0)
    # A negated flag can make a setting the agent refuses (BEB's compat with its TabulaRL setting).
    assume(_accepted(kind, {**params, name: nudged}))
    return first, (kind, {**params, name: nudged}, record)


@given(two_settings(), st.data())
def test_different_settings_have_different_cell_ids(pair: Any, data: st.DataObject) -> None:
    first, second = pair
    assume(first != second)
    a = _only_id(data.draw(spelled_config(first)))
    b = _only_id(data.draw(spelled_config(second)))
    assert a != b, (first, second)


@given(settings(), st.data())
def test_a_list_in_any_order_gives_the_same_cells(
    setting: tuple[str, dict[str, Any], bool], data: st.DataObject
) -> None:
    kind, params, _ = setting
    name = data.draw(st.sampled_from(sorted(params)))
    unique = lambda v: v if isinstance(v, str) else v + 0  # noqa: E731 (-0.0 and 0.0 are one value)
    values = data.draw(st.lists(AGENTS[kind][name][1], min_size=1, max_size=4, unique_by=unique))
    values = [v + 0.0 if isinstance(v, float) else v for v in values]
    assume(len(set(values)) == len(values))
    assume(all(_accepted(kind, {**params, name: v}) for v in values))
    base = "[[experiment]]\nname = 'GC'\ntest = 'GC'\n\n[[agent]]\n" + f"kind = '{kind}'\n"
    others = "".join(f"{k} = {data.draw(spelled_value(v))}\n" for k, v in params.items() if k != name)

    def ids(order: list[Any]) -> list[str]:
        listed = ", ".join(data.draw(spelled_value(v)).strip("[] ,") for v in order)
        return [c.id for c in grid.parse_config(base + others + f"{name} = [{listed}]\n").cells]

    forward = ids(values)
    assert len(set(forward)) == len(values)  # one cell, one id, per value
    assert sorted(ids(data.draw(st.permutations(values)))) == sorted(forward)


# --- shards ---------------------------------------------------------------------------------------

_CONFIG = grid.parse_config("[[experiment]]\nname = 'GC'\ntest = 'GC'\n\n[[agent]]\nkind = 'random'\n")


@given(st.integers(0, 300), st.integers(1, 40), st.randoms(use_true_random=False))
def test_shards_partition_any_grid(n_cells: int, n_shards: int, rng: Any) -> None:
    # The rule of parse_shard's docstring: shard K of N runs cells K-1, K-1+N, K-1+2N, ... so the
    # shards are disjoint, cover the grid, keep its order and differ in size by at most one.
    cells = [dataclasses.replace(_CONFIG.cells[0], index=i) for i in range(n_cells)]
    given_order = list(cells)
    rng.shuffle(given_order)
    shards = [grid.select_shard(given_order, (k, n_shards)) for k in range(1, n_shards + 1)]
    indices = [c.index for shard in shards for c in shard]
    assert sorted(indices) == list(range(n_cells))  # disjoint and covering
    sizes = [len(shard) for shard in shards]
    assert sizes == [n_cells // n_shards + (k < n_cells % n_shards) for k in range(n_shards)]
    assert max(sizes) - min(sizes) <= 1
    for k, shard in enumerate(shards, start=1):
        assert shard == [c for c in given_order if c in shard]  # the order it was given
        assert all(c.index % n_shards == k - 1 for c in shard)
        assert grid.parse_shard(f"{k}/{n_shards}") == (k, n_shards)
    assert grid.select_shard(given_order, None) == given_order


# --- result files ---------------------------------------------------------------------------------

TEXT = st.text(max_size=12)
FLOAT = st.floats(allow_nan=True, allow_infinity=True)
INT64 = st.integers(-(2**63), 2**63 - 1)
_CONSTANT = {
    pl.String: TEXT,
    pl.Float64: FLOAT,
    pl.Int64: INT64,
    pl.UInt64: st.integers(0, 2**64 - 1),
}
#: Columns whose range is set by the core, not by the schema: a seed is any 64-bit unsigned integer;
#: the parameters and what offline learning decided are JSON objects (of arbitrary texts).
_BY_NAME = {
    "seed": st.sampled_from([0, 2**63, 2**64 - 1]) | st.integers(0, 2**64 - 1),
    "params": st.dictionaries(TEXT, TEXT, max_size=3).map(json.dumps),
    "details": st.dictionaries(TEXT, TEXT, max_size=3).map(json.dumps),
}
_PER_MDP = tuple(c for c in schema.PER_MDP_COLUMNS if c != "mdp")


@st.composite
def cell_values(draw: st.DrawFn, cell_id: str, cell_index: int) -> tuple[dict[str, Any], int, bool]:
    """Values of every column of a cell file (arbitrary strings, NaN and infinities, the extremes
    of every integer type), and whether the cell records per-step rewards."""
    n = draw(st.integers(1, 5))
    values: dict[str, Any] = {}
    for name in schema.CELL_COLUMNS:
        if name in _PER_MDP and schema.SCHEMA[name] == pl.Float64:  # averaged: finite, or NaN for unknown CPU
            per_mdp = st.floats(-1e12, 1e12) | (st.just(math.nan) if name == "online_cpu_seconds" else st.nothing())
            values[name] = np.array(draw(st.lists(per_mdp, min_size=n, max_size=n)), dtype=np.float64)
        elif schema.SCHEMA[name] == schema.WORK_DTYPE:  # counts per unit, per MDP or for the cell; or unknown
            shape = (n, len(schema.WORK_UNITS)) if name == "online_work" else (len(schema.WORK_UNITS),)
            counts = st.lists(st.integers(0, 2**64 - 1), min_size=math.prod(shape), max_size=math.prod(shape))
            drawn = draw(st.none() | counts)
            values[name] = None if drawn is None else np.array(drawn, dtype=np.uint64).reshape(shape)
        else:
            values[name] = draw(_BY_NAME[name] if name in _BY_NAME else _CONSTANT[schema.SCHEMA[name]])
    values.update(cell_id=cell_id, cell_index=cell_index, mdp=np.arange(n, dtype=np.int64), n_mdps=n)
    record = draw(FLAG)
    if record:
        steps = draw(st.integers(1, 4))
        values[schema.REWARDS_COLUMN] = np.array(draw(st.lists(FLOAT, min_size=n * steps, max_size=n * steps)))
        values[schema.REWARDS_COLUMN] = values[schema.REWARDS_COLUMN].reshape(n, steps)
    return values, n, record


@st.composite
def grid_files(draw: st.DrawFn) -> list[tuple[dict[str, Any], int, bool]]:
    ids = draw(st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=4, unique=True))
    return [draw(cell_values(cell_id, i)) for i, cell_id in enumerate(ids)]


def _write(out: Path, number: int, values: dict[str, Any], n: int, record: bool) -> pl.DataFrame:
    """A cell file as the grid runner writes it: the schema's frame, Parquet, written atomically."""
    columns = (*schema.CELL_COLUMNS, schema.REWARDS_COLUMN) if record else schema.CELL_COLUMNS
    frame = schema.per_mdp_frame(columns, values, n)
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    cell = dataclasses.replace(_CONFIG.cells[0], params={}, kind=f"kind{number}")
    path = cell_path(out, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, buffer.getvalue())
    return frame


@given(grid_files())
def test_cell_files_read_back_with_every_column_and_type(files: list[tuple[dict[str, Any], int, bool]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        written = [_write(out, i, *case) for i, case in enumerate(files)]
        loaded = results.load(out)
    # The long frame: every column of every file, with the schema's type, value for value (NaN,
    # infinities and the integer extremes included); rewards null where a cell recorded none.
    expected_columns = [*schema.CELL_COLUMNS, schema.REWARDS_COLUMN]
    assert sorted(loaded.returns.columns) == sorted(expected_columns)
    for name in expected_columns:
        assert loaded.returns.schema[name] == schema.SCHEMA[name], name
    expected = pl.concat(
        [
            f
            if schema.REWARDS_COLUMN in f.columns
            else f.with_columns(pl.lit(None, schema.SCHEMA["rewards"]).alias("rewards"))
            for f in written
        ]
    )
    assert_frame_equal(loaded.returns.select(expected_columns), expected.select(expected_columns))
    # The cells frame: one row per file, its constant columns with their types and values.
    assert loaded.cells.height == len(files)
    for row, frame in zip(loaded.cells.iter_rows(named=True), written, strict=True):
        for name in results.CELL_COLUMNS:
            assert loaded.cells.schema[name] == schema.SCHEMA[name], name
            want, got = frame[name][0], row[name]
            assert got == want or (isinstance(want, float) and math.isnan(want) and math.isnan(got)), name
        assert row["has_rewards"] == (schema.REWARDS_COLUMN in frame.columns)


def test_the_runners_files_and_runs_have_the_schemas_columns_and_types(tmp_path: Path) -> None:
    # What the grid runner and Run.to_polars actually write, read back through the loader: the
    # schema's columns in its order and with its types, with and without recorded rewards.
    import bbrl

    text = (
        "[defaults]\nn_mdps = 3\nhorizon = 4\nseed = 1\n\n"
        "[[experiment]]\nname = 'A'\ntest = 'GC'\n\n"
        "[[experiment]]\nname = 'B'\ntest = 'GC'\nrecord_rewards = true\n\n"
        "[[agent]]\nkind = 'egreedy'\nepsilon = [0.5, 1]\n"
    )
    config = grid.parse_config(text)
    grid.run_grid(config, tmp_path, threads=1, console=Console(file=io.StringIO()))
    for cell in config.cells:
        frame = pl.read_parquet(cell_path(tmp_path, cell))
        columns = (
            (*schema.CELL_COLUMNS, schema.REWARDS_COLUMN) if cell.experiment.record_rewards else schema.CELL_COLUMNS
        )
        assert frame.columns == list(columns)
        assert dict(frame.schema) == {c: schema.SCHEMA[c] for c in columns}
        assert frame["cell_id"].to_list() == [cell.id] * 3 and frame["mdp"].to_list() == [0, 1, 2]
    loaded = results.load(tmp_path)
    assert {c: loaded.returns.schema[c] for c in schema.CELL_COLUMNS} == {
        c: schema.SCHEMA[c] for c in schema.CELL_COLUMNS
    }
    assert loaded.returns.schema[schema.REWARDS_COLUMN] == schema.SCHEMA[schema.REWARDS_COLUMN]
    assert loaded.returns.height == 12 and loaded.cells["has_rewards"].to_list() == [False, False, True, True]
    for record in (False, True):
        run = bbrl.Experiment("GC", n_mdps=3, horizon=4, seed=1).run(bbrl.agents.Random(), record_rewards=record)
        frame = run.to_polars()
        columns = (*schema.RUN_COLUMNS, schema.REWARDS_COLUMN) if record else schema.RUN_COLUMNS
        assert frame.columns == list(columns)
        buffer = io.BytesIO()
        frame.write_parquet(buffer)
        buffer.seek(0)
        assert_frame_equal(pl.read_parquet(buffer), frame)
        assert dict(frame.schema) == {c: schema.SCHEMA[c] for c in columns}
