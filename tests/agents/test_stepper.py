"""The stepping handle: the README's loop, Python agents behind it, snapshots and forks."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import bbrl
from bbrl import agents, envs


def test_the_readme_loop() -> None:
    h = bbrl.Stepper(agents.PSRL(), prior="UGC", gamma=0.95, seed=0)
    env = envs.from_distribution("GC", seed=0)
    s = env.reset(seed=0)
    total = 0.0
    for t in range(100):
        a = h.act(s)
        s2, r, *_ = env.step(a)
        h.observe(s, a, r, s2)
        s, total = s2, total + 0.95**t * r
    assert total > 0


class CountingUniform(agents.Agent):
    """Uniform actions; counts its transitions and episodes (its learned state)."""

    def start_task(self):
        self.transitions = 0
        self.episodes = 0

    def start_episode(self, state):
        self.episodes += 1

    def act(self, state, rng):
        return int(rng.integers(self.n_actions))

    def observe(self, state, action, reward, next_state):
        self.transitions += 1

    def action_probabilities(self, state):
        return np.full(self.n_actions, 1.0 / self.n_actions)


class CheapSnapshot(CountingUniform):
    """Overrides snapshot/restore with a small state: the stepper must use them."""

    used: list[str] = []  # noqa: RUF012 - a record across copies

    def snapshot(self):
        CheapSnapshot.used.append("snapshot")
        return (self.transitions, self.episodes)

    def restore(self, snapshot):
        CheapSnapshot.used.append("restore")
        self.transitions, self.episodes = snapshot


def test_python_agents_behind_the_same_handle() -> None:
    h = bbrl.Stepper(CountingUniform(), prior="GC", horizon=10, seed=1)
    actions = [h.act(0) for _ in range(5)]
    snap = h.snapshot()
    later = [h.act(0) for _ in range(5)]
    h.restore(snap)
    assert [h.act(0) for _ in range(5)] == later and actions != later
    h.observe(0, 2, 0.0, 1)
    h.start_episode(1)
    twin = h.fork(seed=1)
    assert twin.act(0) == h.act(0)  # a fork keeps the Generator of the current task...
    twin.start_task()
    h.start_task()
    assert [twin.act(0) for _ in range(8)] != [h.act(0) for _ in range(8)]  # ...new tasks draw from new streams


def test_overridden_snapshot_is_used() -> None:
    CheapSnapshot.used.clear()
    h = bbrl.Stepper(CheapSnapshot(), prior="GC", horizon=10, seed=1)
    h.observe(0, 1, 0.0, 1)
    snap = h.snapshot()
    h.observe(0, 1, 0.0, 1)
    h.restore(snap)
    assert "snapshot" in CheapSnapshot.used and "restore" in CheapSnapshot.used


class Explodes(CountingUniform):
    def act(self, state, rng):
        raise KeyError("boom")


def test_python_agent_errors_are_agent_errors_with_the_cause() -> None:
    h = bbrl.Stepper(Explodes(), prior="GC", horizon=10)
    with pytest.raises(bbrl.AgentError, match="act raised KeyError") as info:
        h.act(0)
    assert isinstance(info.value.__cause__, KeyError)


def test_old_reset_method_is_refused_with_the_new_name() -> None:
    with pytest.raises(TypeError, match=r"reset\(\) is now called start_task\(\)"):

        class Old(agents.Agent):
            def reset(self):
                pass


def test_trained_agents_and_handles() -> None:
    trained = agents.BAMCP(k=20, depth=5).train("UGC", gamma=0.95, horizon=30, seed=2)
    a = bbrl.Stepper(trained, seed=2)
    b = bbrl.Stepper(copy.deepcopy(trained), prior="UGC", gamma=0.95, seed=2)
    assert [a.act(s % 5) for s in range(6)] == [b.act(s % 5) for s in range(6)]
    with pytest.raises(ValueError, match="trained on prior 'UGC', not 'GC'"):
        bbrl.Stepper(trained, prior="GC")
    with pytest.raises(TypeError, match=r"agent must be one of bbrl\.agents"):
        bbrl.Stepper("psrl")  # type: ignore[arg-type]


def test_the_readme_stepping_example_runs() -> None:
    from pathlib import Path

    readme = Path(__file__).resolve().parents[2] / "README.md"
    if not readme.is_file():
        pytest.skip("README.md is not beside the tests")
    text = readme.read_text()
    section = text[text.index("## Step any agent yourself") :]
    code = section[section.index("```python") + len("```python") : section.index("```", section.index("```python") + 9)]
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert isinstance(namespace["h"], bbrl.Stepper) and namespace["t"] == 249


#: Small planning budgets for the kinds whose first example setting plans more than this property
#: needs; every other kind runs its registry's first example setting.
_SMALL = [
    agents.Random(),
    agents.EGreedy(0.3),
    agents.SoftMax(0.7),
    agents.BEB(1.0),
    agents.SBOSS(0.01, 1.0),
    agents.PSRL(3),
    agents.Formula("X0 X2 MAX2"),
    agents.BAMCP(k=20, depth=5),
    agents.BFS3(k=6, c=2, depth=3),
]
#: One agent of every built-in kind but the oracle (OPPS-DS acts as a Formula agent).
_QUERYABLE = _SMALL + [
    agents.examples(kind)[0] for kind in agents.kinds() if kind not in {a.kind for a in _SMALL} | {"optimal", "oppsds"}
]


def test_the_property_covers_every_kind() -> None:
    kinds = {a.kind for a in _QUERYABLE}
    assert kinds == set(agents.kinds()) - {"optimal", "oppsds"}
    assert len(kinds) == len(_QUERYABLE)


@pytest.mark.parametrize("spec", _QUERYABLE, ids=lambda a: a.kind)
def test_queries_never_change_a_trajectory(spec: agents.AgentSpec) -> None:
    """Property: for any seed and any pattern of action_probabilities queries interleaved into a
    run (before acting, after observing, several times), the actions are bit-identical to the
    run without queries."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    trained = spec.train("UGC", gamma=0.95, horizon=30, seed=0)

    @settings(max_examples=15, deadline=None)
    @given(seed=st.integers(0, 2**32), pattern=st.lists(st.integers(0, 3), min_size=25, max_size=25))
    def check(seed: int, pattern: list[int]) -> None:
        def run(queries: list[int]) -> list[int]:
            h = bbrl.Stepper(trained, seed=seed)
            env = envs.from_distribution("GC", seed=seed)
            s, actions = env.reset(seed=seed), []
            for n in queries:
                for _ in range(n):
                    h.action_probabilities(s)
                a = h.act(s)
                s2, r, *_ = env.step(a)
                h.observe(s, a, r, s2)
                if n == 3:
                    h.action_probabilities(s2)
                actions.append(a)
                s = s2
            return actions

        assert run(pattern) == run([0] * len(pattern))

    check()


def test_every_public_module_is_reachable_from_the_package() -> None:
    # `import bbrl` alone must give every module a user is told about (gym needs its extra).
    modules = ("agents", "analysis", "distributions", "envs", "formulas", "kernels", "protocol", "replay", "seeds")
    for name in (*modules, "value_error"):
        assert hasattr(bbrl, name), name
    assert hasattr(bbrl.protocol, "results") and hasattr(bbrl.protocol, "schema")
    assert hasattr(bbrl.analysis, "stats") and hasattr(bbrl.analysis, "regret")
