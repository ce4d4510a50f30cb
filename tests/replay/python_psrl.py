"""K-sample PSRL written in Python (Mandel et al.'s variant): at each episode start, K transition
tables drawn from the Dirichlet posterior with the episode's Generator and solved by value
iteration; within the episode the revealed distribution gives each model 1/K of the mass, split
evenly among its greedy actions. A module of its own so that worker processes can import it."""

from __future__ import annotations

import numpy as np

from bbrl import agents, kernels


class PythonPSRL(agents.Agent):
    """PSRL with ``k`` posterior samples per episode."""

    def __init__(self, k: int = 10) -> None:
        self.k = k

    @property
    def params(self):
        return {"k": self.k}

    def start_task(self):
        self.posterior = kernels.Posterior(self.prior)
        self.q = None

    def start_episode(self, state, rng):
        rewards = self.posterior.rewards
        q = []
        for _ in range(self.k):
            draw = self.posterior.sample(rng)
            values, _ = kernels.value_iteration(draw, rewards, self.gamma)
            q.append(np.einsum("say,say->sa", draw, rewards + self.gamma * values[None, None, :]))
        self.q = np.stack(q)

    def action_probabilities(self, state):
        rows = self.q[:, state, :]
        greedy = rows == rows.max(axis=1, keepdims=True)
        return (greedy / greedy.sum(axis=1, keepdims=True)).mean(axis=0)

    def act(self, state, rng):
        return int(rng.choice(self.n_actions, p=self.action_probabilities(state)))

    def observe(self, state, action, reward, next_state):
        self.posterior.observe(state, action, next_state)
