"""One range notation in messages: an index outside 0..n (end excluded) is named with the allowed
range written "0 to n - 1", both ends included, by the core and by Python alike."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest

import bbrl
from bbrl import agents, distributions, envs, kernels, replay
from bbrl import value_error as ve


@dataclass
class _Three(agents.Agent):
    def start_task(self) -> None:
        pass

    def act(self, state: int, rng: object) -> object:
        return 1.0

    def observe(self, *args: object) -> None:
        pass


def _messages() -> list[str]:
    stepper = bbrl.Stepper(agents.EGreedy(0.1), prior="GC", gamma=0.95, horizon=250, seed=0)
    log = pl.DataFrame({"episode": [0], "t": [0], "state": [0], "action": [2], "reward": [0.0], "next_state": [1]})
    finite = ve.finite_mdp(np.full((3, 1, 3), 1 / 3), np.zeros((3, 1, 3)), [1, 0, 0], 0.9)
    env = envs.six_arms()
    env.reset(seed=0)
    calls = [
        lambda: stepper.act(5),  # GC: 5 states
        lambda: stepper.observe(0, 3, 0.0, 1),  # 3 actions
        lambda: replay.Dataset(log, 2, 2, logging_policy=np.full((2, 2), 0.5)),
        lambda: ve.reference_values(finite, ve.uniform_policy(1), np.array([3]), max_samples=5),
        lambda: bbrl.Experiment("GC", n_mdps=2, horizon=3).run(_Three(), threads=1),
        lambda: env.step(6),
        lambda: kernels.Posterior(distributions.get("GC")).observe(7, 0, 1),  # GC: 5 states, 3 actions
        lambda: kernels.Posterior(distributions.get("GC")).observe(0, 3, 1),
        lambda: kernels.Posterior(distributions.get("GC")).observe(0, 0, -1),
    ]
    found = []
    for call in calls:
        with pytest.raises((ValueError, TypeError, RuntimeError)) as info:
            call()
        found.append(str(info.value))
    return found


def test_every_range_is_written_from_0_to_the_last_index() -> None:
    state, action, logged, reference, python, stepped, *observed = _messages()
    assert state.endswith("state 5 is out of range: allowed 0 to 4"), state
    assert action.endswith("action 3 is out of range: allowed 0 to 2"), action
    assert logged.endswith("action 2 is out of range: allowed 0 to 1"), logged
    assert reference.endswith("state 3 is out of range: allowed 0 to 2"), reference
    assert "an action must be an int from 0 to 2 (NumPy integers are fine)" in python, python
    assert stepped == "action 6 is out of range: allowed 0 to 5", stepped
    assert observed == [
        "state 7 is out of range: allowed 0 to 4",
        "action 3 is out of range: allowed 0 to 2",
        "next_state -1 is out of range: allowed 0 to 4",
    ], observed
    for message in (state, action, logged, reference, python, stepped, *observed):
        assert ".." not in message, message
