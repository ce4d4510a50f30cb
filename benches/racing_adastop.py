"""Racing and AdaStop side by side on the per-MDP returns of a finished full grid run: which
comparisons each method decides, and after how many test MDPs. Prints the machine line first.

    python benches/racing_adastop.py RESULTS_FOLDER [--out FILE.csv] [--permutations 500] [--seed 0]
        [--alpha 0.05] [--adastop-batch B]

For each experiment (its competing configurations, not the oracle):

* AdaStop (Mathieu et al., the ``adastop`` package, ``pip install ".[bench]"``) compares every
  pair of configurations with its group-sequential permutation test at family-wise level
  ``--alpha``, fed the test MDPs in the race's batches (``RaceOptions().batch_size(N)`` MDPs per
  look, ``N / batch`` looks), MDP ``i`` of every configuration at once. It must know the runs per
  look and the number of looks up front, and treats the returns of two configurations as
  independent samples: it knows neither that they come from the same MDPs (the pairing) nor what
  each configuration costs. A pair it has not decided at the last look it declares equal.
* The race (:func:`bbrl.analysis.racing.simulate_race`, default options) replays its stops. Its
  default level is per comparable pair; the summary also gives the race at family-wise level
  (``RaceOptions(family_wise=True)``), the error AdaStop controls.

MDPs run: for AdaStop, a configuration is needed until every one of its comparisons is decided;
for the race, until its stop (N when it runs to the end).

``--out`` writes the same as CSV: one row per AdaStop comparison (``method`` adastop, decision
better / worse / equal of ``cell`` against ``other``), one per race stop (``method`` race, decision
the rule, ``other`` the stopper; ``race-family-wise`` the same at family-wise level), and a
summary row per experiment and method (``cell`` ``*``, ``decided`` comparisons decided before N,
``mdps_run`` the MDPs run in total).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from bbrl import distributions
from bbrl.analysis import racing
from bbrl.analysis.cost import reference_calibration
from bbrl.analysis.scores import ORACLE_KINDS
from bbrl.fileio import write_atomic
from bbrl.protocol.results import load
from bbrl.protocol.schema import Col, host_line

CSV_COLUMNS = ("experiment", "method", "cell", "other", "decision", "n_mdps", "decided", "mdps_run")


@dataclass(frozen=True)
class Comparison:
    """One AdaStop comparison: ``decision`` is ``cell`` against ``other`` (better, worse or equal),
    reached after ``n_mdps`` test MDPs; ``early`` when decided before the last look."""

    cell: str
    other: str
    decision: str
    n_mdps: int
    early: bool


@dataclass(frozen=True)
class AdaStopRun:
    comparisons: list[Comparison]
    needed: dict[str, int]  # MDPs each configuration runs until all its comparisons are decided
    seconds: float
    normalization: float  # the package's permutation count at the last look (its p-value denominator)
    permutations_kept: int


def run_adastop(
    contenders: Sequence[racing.Contender], n_total: int, batch: int, permutations: int, alpha: float, seed: int
) -> AdaStopRun:
    """AdaStop on the contenders' returns, ``batch`` MDPs per look, ``n_total / batch`` looks."""
    from adastop import MultipleAgentsComparator

    if n_total % batch:
        raise ValueError(f"AdaStop needs looks of equal size: {batch} does not divide N = {n_total}")
    looks = n_total // batch
    names = [c.cell_id for c in contenders]
    comparator = MultipleAgentsComparator(n=batch, K=looks, B=permutations, alpha=alpha, seed=seed)
    decided_at: dict[str, int] = {}
    start = time.perf_counter()
    for k in range(looks):
        n = (k + 1) * batch
        comparator.partial_compare({c.cell_id: c.returns[:n] for c in contenders}, verbose=False)
        for key, verdict in comparator.decisions.items():
            if verdict != "continue" and key not in decided_at:
                decided_at[key] = n
        if comparator.is_finished:
            break
    seconds = time.perf_counter() - start
    words = {"larger": "better", "smaller": "worse", "equal": "equal"}
    comparisons = []
    needed = dict.fromkeys(names, 0)
    for pair in comparator.comparisons:
        i, j = int(pair[0]), int(pair[1])
        n = decided_at[str(pair)]
        comparisons.append(Comparison(names[i], names[j], words[comparator.decisions[str(pair)]], n, n < n_total))
        needed[names[i]] = max(needed[names[i]], n)
        needed[names[j]] = max(needed[names[j]], n)
    kept = len(next(iter(comparator.mean_diffs.values()), []))
    return AdaStopRun(comparisons, needed, seconds, float(comparator.normalization), kept)


def short(cell_id: str) -> str:
    """A cell id without its experiment and prior."""
    return cell_id.split("/", 2)[-1]


def experiments(folder: str):
    """Each experiment of a results folder: its label, competing contenders, N and return range."""
    results = load(folder)
    calibration = reference_calibration()
    for (experiment, prior), cells in results.cells.group_by([Col.EXPERIMENT, Col.PRIOR], maintain_order=True):
        cells = cells.sort(Col.CELL_INDEX)
        first = cells.row(0, named=True)
        low, high = racing.return_range(
            distributions.get(first[Col.TEST]).rewards, first[Col.GAMMA], first[Col.HORIZON]
        )
        oracles = set(cells.filter(pl.col(Col.KIND).is_in(ORACLE_KINDS))[Col.CELL_ID].to_list())
        contenders = [c for c in racing.contenders_of(results, cells, calibration) if c.cell_id not in oracles]
        yield f"{experiment}/{prior}", contenders, int(first[Col.N_MDPS]), low, high


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="results folder of a full (not raced) grid run")
    parser.add_argument("--out", help="also write the rows as CSV to this file")
    parser.add_argument("--permutations", type=int, default=500, help="AdaStop's B (random permutations)")
    parser.add_argument("--seed", type=int, default=0, help="AdaStop's permutation seed")
    parser.add_argument("--alpha", type=float, default=0.05, help="AdaStop's family-wise level")
    parser.add_argument(
        "--adastop-batch", type=int, default=None, help="AdaStop's MDPs per look (default: the race's batch)"
    )
    args = parser.parse_args(argv)
    print(host_line())
    import adastop

    options = racing.RaceOptions()
    rows: list[dict[str, object]] = []
    family = racing.RaceOptions(family_wise=True)
    totals = {"adastop": [0, 0, 0], "race": [0, 0, 0], "race-family-wise": [0, 0, 0]}  # decided, compared, MDPs
    full_total = 0
    for label, contenders, n_total, low, high in experiments(args.folder):
        batch = args.adastop_batch or options.batch_size(n_total)
        ada = run_adastop(contenders, n_total, batch, args.permutations, args.alpha, args.seed)
        race = racing.simulate_race(contenders, n_total, low, high, options)
        race_fw = racing.simulate_race(contenders, n_total, low, high, family)
        n_pairs = len(ada.comparisons)
        early = [c for c in ada.comparisons if c.early]
        print(
            f"\n== {label}: {len(contenders)} configurations, N = {n_total}; AdaStop {n_total // batch} looks of"
            f" {batch} MDPs, {n_pairs} pairs, {ada.seconds:.1f} s (normalization at the last look"
            f" {ada.normalization:g}, permutation statistics kept {ada.permutations_kept})"
        )
        if ada.normalization == 1 < ada.permutations_kept:
            print(
                f"  note: AdaStop divided its permutation counts by {ada.normalization:g} at the last look, fewer than"
                f" the {ada.permutations_kept} statistics it kept (its normalization after the first look is"
                f" C(2n, n)^floor(log B / log C(2n, n)), C(2n, n) = {math.comb(2 * batch, batch)} here): from its"
                " second look on, its boundary is the largest permutation statistic kept, and the observed one is"
                " kept (the identity permutation comes first) until a first rejection: until then, a look can"
                " reject only a pair whose |difference| exceeds every pair's signed one"
            )
        last = [c for c in ada.comparisons if not c.early and c.decision != "equal"]
        equal = n_pairs - len(early) - len(last)
        print(
            f"  AdaStop: of {n_pairs} pairs, {len(early)} decided before N, {len(last)} at N, {equal} equal at N"
            " (undecided at the last look)"
        )
        for c in sorted(early + last, key=lambda c: (c.n_mdps, c.cell, c.other)):
            print(f"    {c.n_mdps:4d} MDPs  {short(c.cell)}  {c.decision} than  {short(c.other)}")
        stops = [s for s in race.values() if s is not None]
        print(
            f"  race: {len(stops)} of {len(contenders)} configurations stopped"
            f" ({racing.comparable_pairs(contenders)} comparable pairs)"
        )
        for s in sorted(stops, key=lambda s: (s.n_mdps, s.cell_id)):
            print(f"    {s.n_mdps:4d} MDPs  {short(s.cell_id)}  {s.rule} by  {short(s.by)}")
        ada_mdps = sum(ada.needed.values())
        race_mdps = sum(n_total if s is None else s.n_mdps for s in race.values())
        full = n_total * len(contenders)
        stops_fw = [s for s in race_fw.values() if s is not None]
        fw_mdps = sum(n_total if s is None else s.n_mdps for s in race_fw.values())
        print(
            f"  MDPs run: AdaStop {ada_mdps} of {full}, race {race_mdps} of {full}"
            f" (the race at family-wise level {family.delta}, like AdaStop's: {len(stops_fw)} stopped, {fw_mdps})"
        )
        for c in ada.comparisons:
            rows.append(dict(experiment=label, method="adastop", cell=c.cell, other=c.other, decision=c.decision,
                             n_mdps=c.n_mdps))  # fmt: skip
        for s in stops:
            rows.append(dict(experiment=label, method="race", cell=s.cell_id, other=s.by, decision=s.rule,
                             n_mdps=s.n_mdps))  # fmt: skip
        rows.append(dict(experiment=label, method="adastop", cell="*", decided=len(early), mdps_run=ada_mdps))
        rows.append(dict(experiment=label, method="race", cell="*", decided=len(stops), mdps_run=race_mdps))
        for s in stops_fw:
            rows.append(dict(experiment=label, method="race-family-wise", cell=s.cell_id, other=s.by,
                             decision=s.rule, n_mdps=s.n_mdps))  # fmt: skip
        rows.append(dict(experiment=label, method="race-family-wise", cell="*", decided=len(stops_fw),
                         mdps_run=fw_mdps))  # fmt: skip
        for method, decided, compared, mdps in (
            ("adastop", len(early), n_pairs, ada_mdps),
            ("race", len(stops), len(contenders), race_mdps),
            ("race-family-wise", len(stops_fw), len(contenders), fw_mdps),
        ):
            totals[method][0] += decided
            totals[method][1] += compared
            totals[method][2] += mdps
        full_total += full
    print(
        f"\nSummary: AdaStop decided {totals['adastop'][0]} of {totals['adastop'][1]} pairs before N,"
        f" {totals['adastop'][2]} of {full_total} MDPs run; the race stopped {totals['race'][0]} of"
        f" {totals['race'][1]} configurations, {totals['race'][2]} of {full_total} MDPs run (at family-wise level:"
        f" {totals['race-family-wise'][0]} stopped, {totals['race-family-wise'][2]} MDPs run)."
    )
    print(
        f"AdaStop {adastop.__version__}: family-wise level {args.alpha}, B = {args.permutations} permutations,"
        f" seed {args.seed}, no early acceptance (beta = 0). It tests every pair as two independent samples"
        " (it knows no pairing by MDP and no cost) and needs the runs per look and the looks up front."
        f" The race: {options.settings()}, paired confidence sequences, cheaper configurations first."
    )
    if args.out:
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
        write_atomic(args.out, text.getvalue().encode())
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
