"""The Python parameter records against the core's agent registry, the single source of every
kind's parameters, defaults, ranges and order: any drift between the two fails here."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import bbrl
from bbrl import _core, agents
from bbrl.agents.registry import example_params
from bbrl.analysis.figures import ALGORITHM_ORDER


@pytest.mark.parametrize("entry", agents.REGISTRY, ids=lambda e: e["kind"])
def test_each_record_matches_its_registry_entry(entry):
    kind = entry["kind"]
    cls = agents.kinds()[kind]
    assert cls.kind == kind
    assert cls.display == entry["display"]
    record = cls(**example_params(kind))
    core_names = [p["name"] for p in entry["params"]]
    # The record passes exactly the registry's parameters to the core, in the registry's order.
    assert list(record.core_params()) == core_names
    # Every default the registry states is the record's default; a required one has none.
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    for param in entry["params"]:
        field = "formula_set" if (kind, param["name"]) == ("oppsds", "formulas") else param["name"]
        assert field in defaults, (kind, field)
        if param["required"]:
            assert defaults[field] is dataclasses.MISSING, (kind, field)
        else:
            assert defaults[field] == param["default"], (kind, field, defaults[field], param["default"])
        assert param["type"] in ("float", "int", "bool", "str") and param["range"] and param["doc"]


@pytest.mark.parametrize("entry", agents.REGISTRY, ids=lambda e: e["kind"])
def test_each_kind_has_example_settings_that_set_every_parameter(entry):
    # The first runs in seconds; together they set every parameter (the core's tests check the same
    # on the Rust side, and run every example).
    assert entry["examples"], entry["kind"]
    set_somewhere = {name for example in entry["examples"] for name in example["params"]}
    assert set_somewhere == {p["name"] for p in entry["params"]}, entry["kind"]
    assert {p["name"] for p in entry["params"] if p["required"]} <= set(entry["examples"][0]["params"])
    built = agents.examples(entry["kind"])
    assert len(built) == len(entry["examples"]) and all(a.kind == entry["kind"] for a in built)


def test_kinds_order_and_report_order_come_from_the_registry():
    assert list(agents.kinds()) == [e["kind"] for e in _core.agent_kinds()]
    assert tuple(e["display"] for e in agents.REGISTRY) == ALGORITHM_ORDER


def test_cost_units_come_from_the_registry():
    from bbrl.grid import parse_config
    from bbrl.grid.plan import offline_units, online_units

    config = parse_config(
        """
        [[experiment]]
        name = "GC"
        test = "GC"
        n_mdps = 2
        horizon = 10
        [[agent]]
        kind = "bamcp"
        k = [3]
        depth = [5]
        [[agent]]
        kind = "sboss"
        epsilon = [0.01]
        delta = [7.0]
        [[agent]]
        kind = "oppsds"
        formula_set = [2]
        n_draws = [6]
        """
    )
    units = {cell.kind: (online_units(cell), offline_units(cell)) for cell in config.cells}
    assert units["bamcp"] == (15.0, 1.0)
    assert units["sboss"] == (100.0, 1.0)
    assert units["oppsds"] == (1.0, 60.0)


def test_bbrl_agents_lists_every_parameter_with_its_range():
    from bbrl.cli.listings import describe_agent

    summary, lines = describe_agent("bfs3")
    assert summary
    assert [line.split(" ")[0] for line in lines] == ["k", "c", "depth"]
    assert all("required" in line and ">= 1" in line for line in lines)
    _, lines = describe_agent("oppsds")
    assert any(line.startswith("c (float, default 660.0; >= 0)") for line in lines), lines


@pytest.mark.parametrize("kind", ["bfs3", "oppsds", "psrl"])
def test_a_kind_without_a_python_record_gets_one_from_the_registry(kind):
    # What a new Rust agent gets when it is registered in the core and nowhere else.
    from bbrl.agents.registry import generated_record

    entry = agents.spec(kind)
    generated = generated_record(entry)
    assert generated.kind == kind and generated.display == entry["display"]
    names = [f.name for f in dataclasses.fields(generated)]
    assert sorted(names) == sorted(p["name"] for p in entry["params"])
    # The example setting by the core's names (the generated record's fields) and by the record's.
    record = generated(**entry["examples"][0]["params"])
    hand_written = agents.kinds()[kind](**example_params(kind))
    assert record.core_params() == hand_written.core_params()
    # The same agent: the same numbers, bit for bit.
    experiment = bbrl.Experiment("GC", n_mdps=3, horizon=20, seed=5)
    np.testing.assert_array_equal(experiment.run(record).returns, experiment.run(hand_written).returns)


def test_a_generated_record_is_checked_by_the_core():
    from bbrl.agents.registry import generated_record

    bfs3 = generated_record(agents.spec("bfs3"))
    with pytest.raises(ValueError, match=r"parameter .c. must be >= 1, got 0"):
        bfs3(k=4, c=0, depth=3)
    with pytest.raises(TypeError, match="depth"):
        bfs3(k=4, c=2)
    assert bfs3(k=4, c=2, depth=3).label == agents.BFS3(k=4, c=2, depth=3).label
