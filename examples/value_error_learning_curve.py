"""CMAPVE over training, with its guaranteed band, for TD learners on Mountain Car or Puddle World.

Computes certified reference values (Algorithm 1 of Sajed, Chung and White 2018) at states drawn
uniformly over the domain, then trains three learners following the evaluated policy from the
start law -- tabular TD(0) on a 20 x 20 grid (state aggregation), linear TD(0) and linear TD(0.9)
on 10 tilings of 9 x 9 tiles -- and plots the mean CMAPVE over runs at every checkpoint with the
band the references guarantee (with probability 1 - delta, for all k = learners x checkpoints x
runs queries at once).

    python examples/value_error_learning_curve.py --env mountain-car --states 200 --out cmapve.png
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bbrl import value_error as ve

LEARNERS = {
    # name: (tiles, tilings, lambda, alpha)
    "tabular TD(0), 20x20 grid": (20, 1, 0.0, 0.5),
    "linear TD(0), 10 tilings": (9, 10, 0.0, 0.1),
    "linear TD(0.9), 10 tilings": (9, 10, 0.9, 0.05),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", choices=["mountain-car", "puddle-world"], default="mountain-car")
    parser.add_argument("--states", type=int, default=200, help="reference states (default 200)")
    parser.add_argument("--epsilon", type=float, default=0.2, help="target accuracy of the references' design")
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200_000, help="learning steps per run")
    parser.add_argument("--checkpoints", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--references", type=Path, default=None, help="reuse (or create) this Parquet file")
    parser.add_argument("--out", type=Path, default=Path("value_error_cmapve.png"))
    args = parser.parse_args()

    env, policy = ve.paper_setup(args.env)
    k = len(LEARNERS) * (args.checkpoints + 1) * args.runs
    if args.references is not None and args.references.exists():
        refs = ve.References.load(args.references)
    else:
        start = time.perf_counter()
        refs = ve.reference_values(
            env, policy, args.states, epsilon=args.epsilon, delta=args.delta, tau=1.0, c=1.0, k=k, seed=args.seed
        )
        print(f"references: {refs.m} states, {int(refs.n_steps.sum()):,} steps in {time.perf_counter() - start:.1f} s")
        if args.references is not None:
            refs.save(args.references)
    if int(refs.params["k"]) < k:
        raise SystemExit(f"the references were designed for k = {refs.params['k']} queries, this run makes {k}")
    print(f"guaranteed error of every CMAPVE below: +/- {refs.guaranteed_error:.3f} (probability {1 - args.delta})")

    lo, hi = ve.box_of(env)
    eval_every = args.steps // args.checkpoints
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (name, (tiles, tilings, lam, alpha)), color in zip(LEARNERS.items(), ["C0", "C1", "C2"], strict=True):
        features = ve.tile_coding(lo, hi, tiles, tilings)
        curves = [
            ve.td_lambda(
                env, policy, features, refs.states, alpha=alpha, lambda_=lam, n_steps=args.steps,
                eval_every=eval_every, seed=args.seed, run=run,
            )
            for run in range(args.runs)
        ]  # fmt: skip
        errors = np.array([[r.estimate for r in curve.cmapve(refs)] for curve in curves])
        mean = errors.mean(axis=0)
        steps = curves[0].steps
        # Every run's estimate is within the bound at once, so their mean is too.
        ax.plot(steps, mean, color=color, label=name)
        ax.fill_between(steps, np.maximum(mean - refs.guaranteed_error, 0), mean + refs.guaranteed_error,
                        color=color, alpha=0.15, linewidth=0)  # fmt: skip
        print(f"{name}: CMAPVE {mean[0]:.3f} -> {mean[-1]:.3f}")
    ax.set_xlabel("learning steps")
    ax.set_ylabel(f"CMAPVE (tau = {refs.params['tau']}, c = {refs.params['c']})")
    ax.set_title(f"{env.name}, {refs.m} certified references; bands: guaranteed error")
    ax.set_ylim(0, 1.05 * float(refs.params["c"]))
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
