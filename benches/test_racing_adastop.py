"""racing_adastop.py on a tiny synthetic experiment: a clearly dominated configuration is decided
by AdaStop (worse than both others, at its first look) and stopped by the race (beaten, at the
race's first decision, MIN_MDPS)."""

from __future__ import annotations

import numpy as np
import pytest

from bbrl.analysis import racing

pytest.importorskip("adastop")

from racing_adastop import run_adastop


def contender(name: str, index: int, offline: float, returns: np.ndarray) -> racing.Contender:
    return racing.Contender(name, index, name, offline, np.full(returns.size, 1e-6), returns)


def test_a_dominated_configuration_is_decided_by_both():
    n_total, batch = 40, 10
    rng = np.random.default_rng(3)
    base = rng.uniform(40.0, 60.0, n_total)
    contenders = [
        contender("E/P/good", 0, 1.0, base + rng.normal(0.0, 1.0, n_total)),
        contender("E/P/twin", 1, 1.0, base + rng.normal(0.0, 1.0, n_total)),
        contender("E/P/bad", 2, 2.0, base - 30.0 + rng.normal(0.0, 1.0, n_total)),
    ]
    ada = run_adastop(contenders, n_total, batch, permutations=200, alpha=0.05, seed=0)
    verdicts = {(c.cell, c.other): (c.decision, c.n_mdps) for c in ada.comparisons}
    assert verdicts[("E/P/good", "E/P/bad")] == ("better", batch)
    assert verdicts[("E/P/twin", "E/P/bad")] == ("better", batch)
    assert verdicts[("E/P/good", "E/P/twin")] == ("equal", n_total)  # undecided at the last look
    assert ada.needed == {"E/P/good": n_total, "E/P/twin": n_total, "E/P/bad": batch}

    race = racing.simulate_race(contenders, n_total, 0.0, 100.0, racing.RaceOptions(batch=batch))
    stop = race["E/P/bad"]
    assert stop is not None and stop.rule == "beaten" and stop.n_mdps == racing.MIN_MDPS
    assert race["E/P/good"] is None and race["E/P/twin"] is None
