"""The registries through Python: every registered name (agent kinds, environments, problems and
their priors) is reached in every spelling of the one name rule by every lookup (agents.create,
a grid's kind, bbrl.envs, bbrl.problems, bbrl.distributions), and each problem's entry holds the
facts its tables or its environment give."""

from __future__ import annotations

import numpy as np
import pytest

from bbrl import _core, agents, distributions, envs, grid, names, problems
from bbrl.envs import registry as env_registry


def spellings(name: str) -> list[str]:
    """The name as registered, in lower and upper case, with '_' and '-' added between letters,
    and with every '_' and '-' taken out."""
    marked = "".join(c + ("_" if i % 2 == 0 else "-") for i, c in enumerate(name))
    return [name, name.lower(), name.upper(), marked, name.replace("-", "").replace("_", "")]


def test_the_rule_ignores_case_dashes_and_underscores_on_both_sides():
    assert {names.key(s) for s in ("my_agent", "My-Agent", "myagent", "M_Y-AGENT")} == {"myagent"}
    assert names.find(["RiverSwim-Osband", "my_agent"], "MyAgent") == "my_agent"
    assert names.find(["RiverSwim-Osband"], "River Swim Osband") is None
    with pytest.raises(TypeError, match="must be a string"):
        names.find(["GC"], 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", list(agents.kinds()))
def test_every_kind_is_reached_in_every_spelling(kind):
    params = agents.registry.example_params(kind)
    for spelling in spellings(kind):
        assert agents.registry.canonical(spelling) == kind
        assert agents.spec(spelling)["kind"] == kind
        assert agents.create(spelling, params) == agents.create(kind, params)
        block = "\n".join(f"{k} = {v!r}".replace("True", "true").replace("False", "false") for k, v in params.items())
        config = grid.parse_config(
            f"[[experiment]]\nname = 'GC'\ntest = 'GC'\n\n[[agent]]\nkind = '{spelling}'\n{block}\n"
        )
        assert config.cells[0].kind == kind, spelling


def test_the_cheap_name_list_is_the_registry_s():
    # Name lookups read the core's name list, which does not build the environments: it must be
    # the full registry's names, sources and priors, in its order.
    full = [(e["name"], e["source"], list(e["priors"])) for e in problems.REGISTRY]
    assert [(n, s, list(p)) for n, s, p in _core.problem_names()] == full
    assert problems.names_of() == tuple(n for n, _, _ in full)
    assert problems.prior_names() == ("GC", "GDL", "Grid", "UGC", "UGDL", "UGrid")


def test_every_environment_problem_and_prior_is_reached_in_every_spelling():
    for name in env_registry.names():
        for spelling in spellings(name):
            assert env_registry.canonical(spelling) == name
    for name in envs.NAMES:
        assert envs.make(spellings(name)[3]).name == name
    for entry in problems.REGISTRY:
        for spelling in spellings(entry["name"]):
            assert problems.canonical(spelling) == entry["name"]
        for prior in entry["priors"]:
            for spelling in spellings(prior):
                assert distributions.builtin_name(spelling) == prior
                assert distributions.get(spelling).name == prior
    # No two registered names of one registry are one name under the rule.
    for registered in (list(agents.kinds()), env_registry.names(), problems.names_of(), distributions.names()):
        keys = [names.key(n) for n in registered]
        assert len(set(keys)) == len(keys), registered


def test_every_environment_is_a_problem_with_its_facts():
    assert problems.names_of("environment") == env_registry.names()
    for name in envs.NAMES:
        env, problem = envs.make(name), problems.entry(name)
        assert problem["n_states"] == env.n_states and problem["n_actions"] == env.n_actions
        assert problem["horizon"] == env.time_limit and problem["discount"] == env.discount
        assert problem["long_name"] == env_registry.entry(name)["long_name"]
        start = problem["start"]
        law = np.zeros(env.n_states)
        if start["kind"] == "state":
            law[start["state"]] = 1.0
        else:
            law[:] = start["probabilities"] if start["kind"] == "law" else 1.0 / env.n_states
        np.testing.assert_array_equal(law, env.start_law)
    for name in env_registry.names("box2"):
        assert problems.entry(name)["start"] == {"kind": "simulator"}
        assert len(env_registry.entry(name)["state_box"]) == 2


def test_distribution_problems_give_their_priors_tables_and_facts():
    # The original three first; the distributions' names, then their uniform priors' in that order.
    assert problems.names_of("distribution")[:3] == ("GC", "GDL", "Grid")
    assert distributions.names() == [
        *problems.names_of("distribution"),
        *(problems.entry(n)["priors"][1] for n in problems.names_of("distribution")),
    ]
    for name in problems.names_of("distribution"):
        entry, test = problems.entry(name), distributions.get(name)
        assert test.long_name == entry["long_name"]
        assert entry["reward_range"] == (test.rewards.min(), test.rewards.max())
        assert entry["n_states"] == test.n_states and entry["n_actions"] == test.n_actions
        assert entry["start"] == {"kind": "state", "state": test.initial_state}
        assert entry["horizon"] is None and entry["discount"] is None
        # The uniform-prior rule, applied by the registry or to the distribution itself: one result.
        accurate, uniform = entry["priors"]
        assert accurate == name
        by_name, by_rule = distributions.get(uniform), test.uniform()
        assert by_name == by_rule and (by_name.name, by_name.long_name) == (by_rule.name, by_rule.long_name)
        assert by_rule.uniform().name == uniform and np.all(by_name.theta == 1.0)
    custom = distributions.FDM(np.ones((2, 1, 2)), np.zeros((2, 1, 2)), name="mine", long_name="Mine")
    assert (custom.uniform().name, custom.uniform().long_name) == ("Umine", "Uniform Mine")
