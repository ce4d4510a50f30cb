"""Bring your own agent: Thompson-sampling PSRL written in Python, benchmarked beside the built-in PSRL.

Run it directly (from a checkout with bbrl installed)::

    python examples/my_agent.py            # GC, N = 50 test MDPs, accurate prior, T = 250

An agent subclasses ``bbrl.agents.Agent`` and implements the protocol: ``learn_offline`` once on
the prior, then for every test MDP ``reset``, and ``T`` times ``act`` / ``observe``. The core steps
the environment (the same test MDPs and environment random streams as the built-in agents) and
calls these methods; ``rng`` is a NumPy Generator derived from the experiment's seed, so runs
are reproducible. ``action_probabilities(state)`` is optional (this agent's policy depends on a
draw not yet made, so it has none); ``bbrl.testing.check_agent`` checks it when given.
"""

from __future__ import annotations

from dataclasses import dataclass

import bbrl
from bbrl import agents, kernels


@dataclass
class MyPSRL(agents.Agent):
    """Posterior sampling (Strens 2000): before each decision, draw an MDP from the Dirichlet
    posterior, solve it by value iteration and act greedily for it."""

    display = "MyPSRL"
    learns_offline = False  # learn_offline below only keeps the prior: offline time 0 by declaration
    epsilon: float = 1e-4  # value-iteration precision; a dataclass field, so it shows in the label

    def learn_offline(self, prior, gamma, horizon, rng):
        super().learn_offline(prior, gamma, horizon, rng)  # keeps self.prior, self.gamma, self.n_actions...

    def start_task(self):
        self.posterior = kernels.Posterior(self.prior)  # counts := prior theta
        self.policy = None  # the greedy policy of the current posterior draw

    def act(self, state, rng):
        if self.policy is None:  # a fresh draw after every observed transition
            model = self.posterior.sample(rng)
            _, self.policy = kernels.value_iteration(model, self.posterior.rewards, self.gamma, self.epsilon)
        return self.policy[state]  # a NumPy int64: fine

    def observe(self, state, action, reward, next_state):
        self.posterior.observe(state, action, next_state)
        self.policy = None


def main() -> None:
    experiment = bbrl.Experiment("GC", n_mdps=50, gamma=0.95, horizon=250, seed=0)
    for agent in (MyPSRL(), agents.PSRL()):
        print(experiment.run(agent, prior="GC"))


if __name__ == "__main__":  # required: worker processes re-import this file
    main()
