"""Agents written in Python: the protocol, boundary checks, worker processes, saving, the
conformance suite (built-ins and Python agents alike) and the helpers."""

from __future__ import annotations

import copy
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import bbrl
from bbrl import agents, kernels, seeds
from bbrl.agents import AgentError
from bbrl.testing import check_agent

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_agent.py"

# Agents used below live at module level so that worker processes can unpickle them.


class Uniform(agents.Agent):
    """Uniformly random actions, with their probabilities."""

    def act(self, state, rng):
        return int(rng.integers(self.n_actions))

    def action_probabilities(self, state):
        return np.full(self.n_actions, 1.0 / self.n_actions)


class AlwaysZero(agents.Agent):
    def act(self, state, rng):
        return np.uint8(0)


@dataclass
class NoisyGreedy(agents.Agent):
    """e-greedy on the posterior-mean model, re-solved every step: stochastic and stateful."""

    epsilon: float = 0.3

    def start_task(self):
        self.posterior = kernels.Posterior(self.prior)

    def act(self, state, rng):
        if rng.random() < self.epsilon:
            return rng.integers(self.n_actions)  # a NumPy int64
        _, policy = kernels.value_iteration(self.posterior.mean(), self.posterior.rewards, self.gamma)
        return policy[state]

    def observe(self, state, action, reward, next_state):
        self.posterior.observe(state, action, next_state)

    def action_probabilities(self, state):
        _, policy = kernels.value_iteration(self.posterior.mean(), self.posterior.rewards, self.gamma)
        p = np.full(self.n_actions, self.epsilon / self.n_actions)
        p[policy[state]] += 1 - self.epsilon
        return p


@dataclass
class Broken(agents.Agent):
    """Fails in a chosen way at step ``at`` of every trajectory."""

    how: str
    at: int = 3

    def start_task(self):
        self.t = 0
        if self.how == "reset":
            raise RuntimeError("cannot reset")

    def act(self, state, rng):
        if self.t < self.at:
            return 0
        return {
            "raise": lambda: 1 / 0,
            "negative": lambda: -1,
            "too large": lambda: self.n_actions,
            "float": lambda: 1.0,
            "numpy float": lambda: np.float64(1.0),
            "bool": lambda: True,
            "none": lambda: None,
            "interrupt": self._interrupt,
        }.get(self.how, lambda: 0)()

    def _interrupt(self):
        raise KeyboardInterrupt

    def observe(self, state, action, reward, next_state):
        self.t += 1
        if self.how == "observe" and self.t > self.at:
            raise ValueError("bad observation")


class Flaky(agents.Agent):
    """Fails on a few MDPs only, at a step that depends on its generator."""

    def act(self, state, rng):
        if rng.random() < 0.003:
            raise ValueError("flaky")
        return 0


class FailsOffline(agents.Agent):
    def learn_offline(self, prior, gamma, horizon, rng):
        raise ValueError("no prior for me")

    def act(self, state, rng):
        return 0


class Unpicklable(agents.Agent):
    def __init__(self):
        self.choose = lambda state: 0  # a lambda: deep-copyable, not picklable

    def act(self, state, rng):
        return self.choose(state)


def _load_example():
    spec = importlib.util.spec_from_file_location("bbrl_example_my_agent", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# --- the protocol -------------------------------------------------------------------------------


def test_example_agent_runs_like_a_builtin() -> None:
    example = _load_example()
    exp = bbrl.Experiment("GC", n_mdps=6, horizon=60, seed=3)
    run = exp.run(example.MyPSRL(), prior="UGC", threads=1)
    builtin = exp.run(agents.PSRL(), prior="UGC", threads=1)
    assert isinstance(run, bbrl.Run) and type(run) is type(builtin)
    assert run.returns.shape == (6,) and run.online_seconds.shape == (6,)
    assert np.all(run.online_seconds > 0) and run.offline_seconds >= 0
    assert run.agent == "MyPSRL (epsilon=0.0001)" and run.agent_kind == "MyPSRL"
    assert run.params == {"epsilon": 1e-4} and run.prior == "UGC" and run.experiment == "GC"
    assert np.array_equal(run.returns, exp.run(example.MyPSRL(), prior="UGC", threads=1).returns)
    check_agent(example.MyPSRL())


def test_same_test_mdps_and_environment_streams_as_the_builtins() -> None:
    # Soft-max in compat mode always plays action 0 (non-negative rewards): the same actions as
    # AlwaysZero, so identical returns prove identical MDPs and environment streams.
    exp = bbrl.Experiment("GDL", n_mdps=12, horizon=80, seed=5)
    assert np.array_equal(exp.run(AlwaysZero(), threads=1).returns, exp.run(agents.SoftMax(1.0, compat=True)).returns)


def test_generator_follows_the_documented_seed_rule() -> None:
    seen = {}

    class Spy(agents.Agent):
        def learn_offline(self, prior, gamma, horizon, rng):
            super().learn_offline(prior, gamma, horizon, rng)
            seen["offline"] = rng.random()

        def act(self, state, rng):
            seen.setdefault("online", rng.random())
            return 0

    bbrl.Experiment("GC", n_mdps=1, horizon=2, seed=9).run(Spy(), threads=1)
    first = seeds.first_draw(9, "agent_offline", 0)
    assert seen["offline"] == np.random.default_rng(first).random() == agents.offline_rng(9).random()
    first_draw = bbrl.seeds.first_draw(9, "agent_online", 0)
    assert seen["online"] == np.random.default_rng(first_draw).random() == agents.online_rng(9, 0).random()


def test_results_identical_whatever_the_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two cores whatever the machine: three workers are more than that, which warns.
    monkeypatch.setattr(bbrl.threads, "usable_cores", lambda: 2)
    exp = bbrl.Experiment("GC", n_mdps=14, horizon=40, seed=11)
    one = exp.run(NoisyGreedy(), prior="UGC", threads=1)
    two = exp.run(NoisyGreedy(), prior="UGC", threads=2)
    with pytest.warns(bbrl.threads.ThreadCountWarning, match="3 threads asked for, more than the 2 cores"):
        three = exp.run(NoisyGreedy(), prior="UGC", threads=3, progress=True)
    assert three.threads == 3
    assert np.array_equal(one.returns, two.returns) and np.array_equal(one.returns, three.returns)
    assert np.all(two.online_seconds > 0)
    trained = NoisyGreedy().train("UGC", exp.gamma, exp.horizon, exp.seed)
    assert np.array_equal(exp.run(trained, threads=1).returns, one.returns)


def test_trained_python_agent_has_the_trained_agent_interface(tmp_path: Path) -> None:
    trained = NoisyGreedy(epsilon=0.2).train("UGC", 0.95, 40, 11)
    assert isinstance(trained, agents.TrainedAgent)
    assert trained.label == "NoisyGreedy (epsilon=0.2)" and trained.kind == "NoisyGreedy"
    assert trained.params == {"epsilon": 0.2} and trained.details == {} and trained.offline_seconds >= 0
    exp = bbrl.Experiment("GC", n_mdps=5, horizon=40, seed=11)
    before = exp.run(trained, threads=1)
    loaded = agents.load(trained.save(tmp_path / "agent.json"))
    assert isinstance(loaded, agents.TrainedPythonAgent) and loaded.label == trained.label
    assert np.array_equal(exp.run(loaded, threads=1).returns, before.returns)
    with pytest.raises(ValueError, match=r"was trained on prior .UGC., not .GC."):
        exp.run(trained, prior="GC")
    with pytest.raises(TypeError, match=r"agent \(Unpicklable\)\['choose'\]: a value of type builtins.function"):
        Unpicklable().train("GC").save(tmp_path / "nope.json")
    assert not (tmp_path / "nope.json").exists()


# --- boundary checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("how", "match"),
    [
        ("raise", r"failed on MDP 0 at step 3: act raised ZeroDivisionError: division by zero"),
        ("negative", r"failed on MDP 0 at step 3: act returned action -1, not one of the actions 0 to 2"),
        ("too large", r"failed on MDP 0 at step 3: act returned action 3, not one of the actions 0 to 2"),
        ("float", r"failed on MDP 0 at step 3: act returned 1\.0 of type float; an action must be an int"),
        ("numpy float", r"failed on MDP 0 at step 3: act returned np\.float64\(1\.0\) of type float64; an action must"),
        ("bool", r"failed on MDP 0 at step 3: act returned True of type bool"),
        ("none", r"failed on MDP 0 at step 3: act returned None of type NoneType"),
        ("observe", r"failed on MDP 0 at step 3: observe raised ValueError: bad observation"),
        ("reset", r"failed on MDP 0 at step 0: reset: raised RuntimeError: cannot reset"),
    ],
)
def test_broken_agents_fail_cleanly_with_agent_mdp_and_step(how: str, match: str) -> None:
    exp = bbrl.Experiment("GC", n_mdps=3, horizon=10, seed=0)
    with pytest.raises(AgentError, match=f"agent 'Broken \\(how={how}, at=3\\)' " + match) as info:
        exp.run(Broken(how), threads=1)
    assert isinstance(info.value, RuntimeError)
    if how in ("raise", "observe", "reset"):
        assert info.value.__cause__ is not None  # the agent's own exception and traceback


def test_errors_are_the_same_on_worker_processes() -> None:
    exp = bbrl.Experiment("GC", n_mdps=40, horizon=50, seed=2)
    with pytest.raises(AgentError) as one:
        exp.run(Flaky(), threads=1)
    with pytest.raises(AgentError) as two:
        exp.run(Flaky(), threads=2)
    assert str(one.value) == str(two.value)
    assert "agent 'Flaky' failed on MDP" in str(one.value) and "act raised ValueError: flaky" in str(one.value)
    with pytest.raises(AgentError, match=r"act returned action -1"):
        exp.run(Broken("negative"), threads=2)


def test_other_failures() -> None:
    exp = bbrl.Experiment("GC", n_mdps=2, horizon=5)
    with pytest.raises(AgentError, match="agent 'FailsOffline' failed in learn_offline: ValueError: no prior"):
        exp.run(FailsOffline())
    with pytest.raises(KeyboardInterrupt):
        exp.run(Broken("interrupt", at=0), threads=1)
    with pytest.raises(TypeError, match=r"not picklable.*threads=1"):
        exp.run(Unpicklable(), threads=2)
    assert exp.run(Unpicklable(), threads=1).returns.shape == (2,)
    with pytest.raises(NotImplementedError, match="must implement act"):
        agents.Agent().act(0, np.random.default_rng())


# --- the conformance suite ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(agents.kinds()))
def test_builtin_agents_pass_the_conformance_suite(kind: str) -> None:
    # Every kind of the registry, at its first example setting (the one that runs in seconds).
    agent = agents.examples(kind)[0]
    checked = check_agent(agent)
    assert "experiment" in checked
    if not agent.build_core().is_oracle:
        assert checked == ["actions", "determinism", "probabilities", "pure queries", "snapshot", "experiment"]


def test_python_agents_pass_the_conformance_suite() -> None:
    every_rule = ["actions", "determinism", "probabilities", "pure queries", "snapshot", "experiment"]
    assert check_agent(Uniform()) == every_rule
    assert "probabilities" in check_agent(NoisyGreedy(), prior="UGDL")
    assert "probabilities" not in check_agent(AlwaysZero())


class LiesAboutProbabilities(Uniform):
    def act(self, state, rng):
        return 0 if rng.random() < 0.9 else 1


class Impossible(Uniform):
    def action_probabilities(self, state):
        p = np.zeros(self.n_actions)
        p[1] = 1.0
        return p

    def act(self, state, rng):
        return 0


class NotNormalised(Uniform):
    def action_probabilities(self, state):
        return np.ones(self.n_actions)


class GlobalRandom(agents.Agent):
    def act(self, state, rng):
        return int(np.random.default_rng().integers(self.n_actions))


class SharedCounter(agents.Agent):
    """Its state lives outside the object: a copy does not carry it."""

    calls = [0]  # noqa: RUF012 - deliberately shared

    def act(self, state, rng):
        SharedCounter.calls[0] += 1
        return SharedCounter.calls[0] % self.n_actions


class ProbabilitiesConsumeTheGenerator(agents.Agent):
    def start_task(self):
        self.u = 0.5

    def act(self, state, rng):
        return int(self.u * self.n_actions)

    def action_probabilities(self, state):
        self.u = (self.u + 0.37) % 1.0
        p = np.zeros(self.n_actions)
        p[int(self.u * self.n_actions)] = 1.0
        return p


@pytest.mark.parametrize(
    ("agent", "match"),
    [
        (Broken("raise", at=0), r"check_agent\(Broken \(how=raise, at=0\)\): act raised ZeroDivisionError"),
        (
            Broken("negative", at=2),
            r"act raised AgentError: act returned action -1, not one of the actions 0 to 2 \(trajectory 0, step 2\)",
        ),
        (Broken("float", at=0), r"act returned 1\.0 of type float; an action must be an int"),
        (FailsOffline(), r"failed in learn_offline: ValueError: no prior"),
        (LiesAboutProbabilities(), r"sampled actions disagree with action_probabilities: at step 0, action 0"),
        (Impossible(), r"act chose action 0 in state 0 but action_probabilities gives it probability 0"),
        (NotNormalised(), r"action_probabilities \[1\. 1\. 1\.\] sum to 3\.0"),
        (GlobalRandom(), r"not deterministic for a seed"),
        (SharedCounter(), r"restore then replay diverged at step 0"),
    ],
    ids=lambda x: x if isinstance(x, str) else type(x).__name__,
)
def test_broken_agents_fail_the_conformance_suite(agent: agents.Agent, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        check_agent(agent)


def test_probabilities_that_change_the_agent_are_caught() -> None:
    # Deterministic and self-consistent when asked before every act, but asking changes it.
    with pytest.raises(AssertionError, match=r"action_probabilities changed between two calls"):
        check_agent(ProbabilitiesConsumeTheGenerator())


# --- helpers ------------------------------------------------------------------------------------


def test_sample_transitions_and_posterior() -> None:
    gc = bbrl.distributions.get("GC")
    posterior = kernels.Posterior(gc)
    posterior.observe(0, 1, 1)
    assert posterior.counts[0, 1, 1] == gc.theta[0, 1, 1] + 1 and gc.theta[0, 1, 1] == posterior.counts[0, 1, 1] - 1
    draw = posterior.sample(np.random.default_rng(1))
    assert draw.shape == gc.theta.shape and np.allclose(draw.sum(-1), 1.0)
    assert np.all(draw[posterior.counts == 0] == 0)
    assert np.array_equal(draw, posterior.sample(np.random.default_rng(1)))
    again = kernels.sample_transitions(posterior.counts, 7)
    assert np.array_equal(kernels.sample_transitions(posterior.counts, 7), again)
    mean = np.mean([kernels.sample_transitions(posterior.counts, s) for s in range(2000)], axis=0)
    assert np.allclose(mean, posterior.mean(), atol=0.03)
    twin = copy.deepcopy(posterior)
    twin.observe(0, 0, 0)
    assert not np.array_equal(twin.counts, posterior.counts)
    with pytest.raises(ValueError, match=r"counts\[0, 0, :\] must be finite"):
        kernels.sample_transitions(np.zeros((2, 1, 2)))
    with pytest.raises(ValueError, match="needs rewards"):
        kernels.Posterior(np.ones((2, 1, 2)))
