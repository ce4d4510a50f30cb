"""The agent file's Python agents as data: saving and loading give the same agent (bit-identical
returns on 1 and 2 worker processes), the value encoding round-trips, and what cannot be data is
refused by name."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import bbrl
from bbrl import agents, kernels
from bbrl.agents.state import decode, encode


@dataclass
class StatefulAgent(agents.Agent):
    """Learns offline (a random table kept as an array and a Generator it keeps drawing from) and
    online (a posterior): everything it keeps must come back from the file for its returns to."""

    epsilon: float = 0.25
    shape: tuple[int, ...] = (2, 3)
    notes: dict = field(default_factory=lambda: {1: "one", "nan": math.nan, "$dollar": (1, 2)})

    def learn_offline(self, prior, gamma, horizon, rng):
        super().learn_offline(prior, gamma, horizon, rng)
        self.bias = rng.normal(size=(prior.n_states, prior.n_actions))
        self.own = np.random.default_rng(int(rng.integers(2**32)))
        self.count = np.int64(0)

    def start_task(self):
        self.posterior = kernels.Posterior(self.prior)

    def act(self, state, rng):
        self.count += 1
        if self.own.random() < self.epsilon:
            return int(rng.integers(self.n_actions))
        _, policy = kernels.value_iteration(self.posterior.mean(), self.posterior.rewards, self.gamma)
        return int(policy[state]) if self.bias[state].max() < 2.0 else int(np.argmax(self.bias[state]))

    def observe(self, state, action, reward, next_state):
        self.posterior.observe(state, action, next_state)


class WithLambda(agents.Agent):
    def __init__(self) -> None:
        self.choose = lambda state: 0

    def act(self, state, rng):
        return self.choose(state)


class CustomState(agents.Agent):
    """An attribute that is not data, and the two methods that make the agent saveable anyway."""

    def __init__(self, action: int = 1) -> None:
        self.action = action
        self.choose = lambda state: self.action

    def act(self, state, rng):
        return self.choose(state)

    def state(self):
        return {"action": self.action}

    @classmethod
    def from_state(cls, state):
        return cls(**state)


def test_a_saved_agent_gives_bit_identical_returns_on_one_and_two_workers(tmp_path: Path) -> None:
    trained = StatefulAgent().train("UGC", 0.95, 30, 5)
    exp = bbrl.Experiment("GC", n_mdps=6, horizon=30, seed=5)
    before = exp.run(trained, threads=1).returns
    path = trained.save(tmp_path / "agent.json")
    document = json.loads(path.read_text())
    assert document["python"]["class"] == f"{__name__}:StatefulAgent" and "pickle" not in document["python"]
    loaded = agents.load(path)
    assert isinstance(loaded.agent, StatefulAgent) and loaded.label == trained.label
    assert loaded.agent.notes[1] == "one" and math.isnan(loaded.agent.notes["nan"])
    assert loaded.agent.notes["$dollar"] == (1, 2) and loaded.agent.shape == (2, 3)
    assert type(loaded.agent.count) is np.int64
    for threads in (1, 2):
        assert np.array_equal(exp.run(loaded, threads=threads).returns, before)
    # The loaded agent saves to the same file.
    assert json.loads(loaded.save(tmp_path / "again.json").read_text())["python"] == document["python"]


def test_agent_class_is_checked_and_what_is_not_data_is_named(tmp_path: Path) -> None:
    path = StatefulAgent().train("UGC", 0.95, 10, 0).save(tmp_path / "agent.json")
    assert isinstance(agents.load(path, agent_class=StatefulAgent).agent, StatefulAgent)
    with pytest.raises(ValueError, match=rf"saved from class {__name__}:StatefulAgent, not {__name__}:CustomState"):
        agents.load(path, agent_class=CustomState)
    with pytest.raises(TypeError, match=r"agent_class must be a subclass of bbrl\.agents\.Agent"):
        agents.load(path, agent_class=int)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"agent \(WithLambda\)\['choose'\]: a value of type builtins\.function"):
        WithLambda().train("GC").save(tmp_path / "lambda.json")
    assert not (tmp_path / "lambda.json").exists()
    custom = CustomState(2).train("GC").save(tmp_path / "custom.json")
    assert agents.load(custom).agent.act(0, None) == 2


def test_a_damaged_state_names_the_file_and_the_place(tmp_path: Path) -> None:
    path = StatefulAgent().train("UGC", 0.95, 10, 0).save(tmp_path / "agent.json")
    document = json.loads(path.read_text())
    document["python"]["state"]["bias"] = {"$ndarray": "not base64!"}
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"agent\.json: python\.state\['bias'\]: not a NumPy array"):
        agents.load(path)
    document["python"]["state"]["bias"] = {"$import": "os:system"}
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"python\.state\['bias'\]: unknown tag '\$import'"):
        agents.load(path)


def test_an_object_array_is_refused_both_ways() -> None:
    with pytest.raises(TypeError, match="an array of Python objects"):
        encode(np.array([object()]), "x")
    import base64
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="not a NumPy array"):
        decode({"$ndarray": base64.b64encode(buffer.getvalue()).decode()}, "x")


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.sampled_from([math.inf, -math.inf]),
    st.text(max_size=8),
)
_arrays = hnp.arrays(
    st.sampled_from([np.float64, np.int32, np.uint8, np.bool_, np.complex128]),
    hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
)
_values = st.recursive(
    st.one_of(_scalars, _arrays),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers(), st.just("$tag")), children, max_size=3),
    ),
    max_leaves=10,
)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and (a == b or (a != a and b != b))


@given(_values)
def test_encoding_round_trips_through_json(value) -> None:
    text = json.dumps(encode(value, "value"), allow_nan=False)
    assert _same(value, decode(json.loads(text), "value"))


def test_generators_fdms_and_posteriors_round_trip() -> None:
    rng = np.random.default_rng(7)
    rng.random(3)
    twin = decode(json.loads(json.dumps(encode(rng, "rng"))), "rng")
    assert np.array_equal(twin.random(5), rng.random(5))
    prior = bbrl.distributions.get("UGC")
    assert decode(encode(prior, "p"), "p") == prior
    posterior = kernels.Posterior(prior)
    posterior.observe(0, 1, 2)
    back = decode(json.loads(json.dumps(encode(posterior, "q"))), "q")
    assert np.array_equal(back.counts, posterior.counts) and np.array_equal(back.rewards, posterior.rewards)
