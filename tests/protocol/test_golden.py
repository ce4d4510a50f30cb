"""Golden values: small seeded runs whose sums must not move.

A change of generator, seed rule, sampler or solver that alters any number of the benchmark fails
here, so such a change is always deliberate (update the values and say why in the commit).
"""

from __future__ import annotations

import pytest

import bbrl
from bbrl import agents

GOLDEN = {
    ("GC", "random"): 688.4549898758102,
    ("GC", "egreedy"): 875.3198808651023,
    ("GC", "beb"): 994.844815291599,
    ("GC", "sboss"): 715.9976974980877,
    ("GC", "bamcp"): 683.0150954935033,
    ("GC", "bfs3"): 657.8103061653164,
    ("GC", "psrl"): 726.9794121186717,
    ("GDL", "random"): 56.576913867437476,
    ("GDL", "egreedy"): 53.74388005218977,
    ("GDL", "beb"): 58.579470166189566,
    ("GDL", "sboss"): 49.86327884381645,
    ("GDL", "bamcp"): 50.483260266058295,
    ("GDL", "bfs3"): 51.27170537675916,
    ("GDL", "psrl"): 51.31530705131002,
    ("Grid", "random"): 0.3139133740928563,
    ("Grid", "egreedy"): 3.3260784835490256,
    ("Grid", "beb"): 0.1345187565768346,
    ("Grid", "sboss"): 2.092662558466972,
    ("Grid", "bamcp"): 0.4174939944265338,
    ("Grid", "bfs3"): 1.0913889679519087,
    ("Grid", "psrl"): 2.0300801506050323,
}

SPECS = {
    "random": agents.Random(),
    "egreedy": agents.EGreedy(0.1),
    "beb": agents.BEB(1.0),
    "sboss": agents.SBOSS(1e-3, 7.0),
    "bamcp": agents.BAMCP(k=20, depth=5),
    "bfs3": agents.BFS3(k=4, c=2, depth=3),
    "psrl": agents.PSRL(),
}


@pytest.mark.parametrize("problem", ["GC", "GDL", "Grid"])
def test_seeded_sums_are_unchanged(problem: str) -> None:
    experiment = bbrl.Experiment(problem, n_mdps=20, horizon=100, seed=2016)
    for kind, spec in SPECS.items():
        total = float(experiment.run(spec, prior="U" + problem).returns.sum())
        # Same binary, same numbers: only a last-bit tolerance for another CPU's libm.
        assert total == pytest.approx(GOLDEN[(problem, kind)], rel=1e-12, abs=1e-12), (problem, kind)
