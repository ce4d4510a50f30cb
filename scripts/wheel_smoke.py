"""A smoke test of an installed bbrl wheel, one check per part (scripts/wheel-smoke.sh runs it in a
fresh virtual environment with no Rust toolchain on its PATH): a benchmark experiment (a seeded
number compared to the digit), a user-written Python agent on worker processes, a replay
evaluation, a value-error reference computation, and the gymnasium environments when gymnasium is
installed. Small sizes: it checks that the parts run from the wheel, not what they compute."""

from __future__ import annotations

import importlib.util
import math
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import bbrl
from bbrl import agents, distributions, replay
from bbrl import value_error as ve


@dataclass
class Greedy(agents.Agent):
    """A user-written agent: the action of highest mean reward under the prior, random ties."""

    def start_task(self):
        self.best = np.flatnonzero(np.isclose(self.q, self.q.max(axis=1, keepdims=True)))

    def learn_offline(self, prior, gamma, horizon, rng):
        super().learn_offline(prior, gamma, horizon, rng)
        theta = prior.theta / prior.theta.sum(axis=2, keepdims=True)
        self.q = (theta * prior.rewards).sum(axis=2)

    def act(self, state, rng):
        row = self.q[state]
        return int(rng.choice(np.flatnonzero(row == row.max())))

    def observe(self, state, action, reward, next_state):
        pass


def check(name: str, ok: bool, detail: str) -> None:
    print(f"  {name}: {detail}")
    if not ok:
        raise SystemExit(f"wheel smoke test failed: {name}: {detail}")


def main() -> None:
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    where = Path(bbrl.__file__).resolve()
    check("installed", site in where.parents, f"bbrl {bbrl.__version__} from {where.parent}")

    gc = distributions.generalized_chain()
    experiment = bbrl.Experiment(gc, n_mdps=20, gamma=0.95, horizon=50, seed=0)
    run = experiment.run(agents.EGreedy(epsilon=0.1), prior=gc.uniform(), threads=2)
    # The same seed gives the same number on any machine and build (recorded from a source build).
    check("benchmark", repr(run.mean) == "32.79200419534082", f"e-Greedy on GC, 20 MDPs: mean {run.mean!r}")

    one = experiment.run(Greedy(), threads=1)
    two = experiment.run(Greedy(), threads=2)  # worker processes importing this script's class
    same = one.returns.tobytes() == two.returns.tobytes()
    check("python agent", same and np.isfinite(one.mean), f"mean {one.mean:.4f}, 1 and 2 processes bit-identical")

    data = replay.Dataset.collect("SixArms", np.full((7, 6), 1 / 6), n_episodes=200, seed=0)
    psrl = agents.PSRL(k=1).train(data.uniform_prior(), gamma=0.95)
    result = replay.evaluate(psrl, data, "psrs", seed=0)
    check("replay", result.n_episodes > 0, f"PSRS on SixArms: {result.n_episodes} episodes, {result.stop_reason}")

    P = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.0, 1.0]]])
    R = np.array([[1.0, 0.0], [0.0, 2.0]])
    env = ve.finite_mdp(P, np.broadcast_to(R[:, :, None], P.shape).copy(), start=[1.0, 0.0], discount=0.5)
    refs = ve.reference_values(env, ve.uniform_policy(2), states=np.array([0, 1]), epsilon=0.2, delta=0.1, k=1)
    values = np.asarray(refs.values)
    exact = np.linalg.solve(np.eye(2) - 0.5 * P.mean(axis=1), R.mean(axis=1))  # the uniform policy's values
    close = bool(np.all(np.abs(values - exact) <= 0.2))
    check("value error", close, f"references {np.round(values, 3)} within 0.2 of the exact {np.round(exact, 3)}")

    if importlib.util.find_spec("gymnasium") is None:
        print("  gymnasium: not installed, skipped (pip install 'bbrl-bench[gym]')")
    else:
        import gymnasium

        importlib.import_module("bbrl.gym")  # registers the environments
        gym_env = gymnasium.make("bbrl/GC-v0")
        state, _ = gym_env.reset(seed=0)
        gym_env.action_space.seed(0)
        total, steps, ended = 0.0, 0, False
        while steps < 10 and not ended:
            state, reward, terminated, truncated, _ = gym_env.step(gym_env.action_space.sample())
            total, steps, ended = total + float(reward), steps + 1, terminated or truncated
        ok = gym_env.observation_space.contains(state) and math.isfinite(total)
        check("gymnasium", ok, f"bbrl/GC-v0: {steps} steps, reward {total:.1f}")
    print(f"wheel smoke test passed (Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
