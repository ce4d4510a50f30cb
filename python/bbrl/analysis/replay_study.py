"""Mandel et al.'s (2016) replay experiments regenerated into a report folder: Figure 2a (SixArms: PSRS and
Queue against the model-based evaluator, MSE against the online truth per episode with its bias and
variance and the share of runs that reach the episode) and the RiverSwim comparison of the appendix
(episodes evaluated per evaluator and candidate, logs of 200 and 1,000 episodes).

Estimates and truth, per episode index i (0-based): an evaluation of log j reports R_j(i) when it
reaches episode i; the truth is the mean online return of episode i over ``truth_runs`` runs. Over
the logs whose evaluation reached i: bias = mean_j R_j(i) - truth(i), variance = the mean square
deviation of R_j(i) from its mean (denominator n, so MSE = bias^2 + variance exactly), and reach =
(logs reaching i) / (all logs).

Agents plan with the true reward table (a Dirichlet(1) prior on the transitions and the
environment's rewards), as bbrl's agents treat rewards as known; every log and every evaluation is
seeded from the study's seed by a stated rule (:func:`log_seed`), so the report is reproducible.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .. import agents, envs, replay
from ..distributions import FDM
from ..fileio import write_atomic
from ..protocol.schema import host_line
from .figures import save_figure
from .tables import markdown_table

__all__ = [
    "StudyConfig",
    "log_seed",
    "ranking_note",
    "riverswim_table",
    "run_study",
    "six_arms_figure_2a",
    "unrankable_episodes",
]


@dataclasses.dataclass(frozen=True)
class StudyConfig:
    """The sizes of the study (defaults: the paper's; :meth:`quick`: minutes on 2 cores)."""

    #: Figure 2a: logs, uniformly logged transitions per log, PSRL's posterior samples, discount,
    #: episodes per evaluation, online runs for the truth.
    six_arms_logs: int = 200
    six_arms_samples: int = 100
    k: int = 10
    gamma: float = 0.95
    six_arms_episodes: int = 20
    truth_runs: int = 10_000
    #: RiverSwim (Osband, 20-step undiscounted episodes): logged episodes per log, evaluations per
    #: (log size, evaluator, candidate), PSRL's posterior samples of each candidate.
    river_sizes: tuple[int, ...] = (200, 1000)
    river_runs: int = 100
    river_ks: tuple[int, ...] = (10, 1)
    #: The longest episode of an online or model run (steps).
    max_steps: int = 1000

    @classmethod
    def quick(cls) -> StudyConfig:
        """Under a minute on 2 cores: fewer logs, episodes, runs and truth runs."""
        return cls(six_arms_logs=40, six_arms_episodes=12, truth_runs=1000, river_runs=20)


def log_seed(seed: int, index: int) -> int:
    """The seed of log (and evaluation) ``index`` of a study with ``seed``: ``seed * 10**6 + index``."""
    return int(seed) * 1_000_000 + int(index)


def _known_reward_prior(env: envs.FiniteEnv, name: str) -> FDM:
    """Dirichlet(1) on every transition, with the environment's rewards."""
    theta = np.ones((env.n_states, env.n_actions, env.n_states))
    start = int(np.argmax(env.start_law))
    return FDM(theta=theta, rewards=env.rewards, initial_state=start, name=name)


def _first_samples(data: replay.Dataset, n_rows: int) -> replay.Dataset:
    """The complete episodes of ``data`` within its first ``n_rows`` transitions."""
    frame = data.to_polars().with_row_index("row")
    last_row = frame.group_by("episode").agg(pl.col("row").max().alias("last"))
    keep = last_row.filter(pl.col("last") < n_rows)["episode"]
    kept = frame.filter(pl.col("episode").is_in(keep.implode())).drop("row")
    return replay.Dataset(kept, data.n_states, data.n_actions, data.start_state, logging_policy=data.logging_policy)


def _episode_table(estimates: list[np.ndarray], truth: np.ndarray, truth_ci95: np.ndarray, method: str) -> pl.DataFrame:
    """Per episode: logs reaching it, reach share, mean estimate, truth and its 95% half-width, bias,
    variance, MSE."""
    width = len(truth)
    matrix = np.full((len(estimates), width), np.nan)
    for j, returns in enumerate(estimates):
        n = min(len(returns), width)
        matrix[j, :n] = returns[:n]
    reached = np.sum(~np.isnan(matrix), axis=0)
    rows = []
    for i in range(width):
        values = matrix[~np.isnan(matrix[:, i]), i]
        if values.size == 0:
            mean = bias = variance = mse = float("nan")
        else:
            mean = float(values.mean())
            bias = mean - float(truth[i])
            variance = float(np.mean((values - mean) ** 2))
            mse = float(np.mean((values - truth[i]) ** 2))
        rows.append(
            (
                method, i, int(reached[i]), reached[i] / len(estimates), mean, float(truth[i]), float(truth_ci95[i]),
                bias, variance, mse,
            )
        )  # fmt: skip
    columns = ["method", "episode", "runs", "reach", "mean", "truth", "truth_ci95", "bias", "variance", "mse"]
    return pl.DataFrame(rows, schema=columns, orient="row")


def six_arms_figure_2a(config: StudyConfig, seed: int, threads: int | None = None) -> tuple[pl.DataFrame, dict]:
    """Figure 2a's table (one row per evaluator and episode) and its settings."""
    env = envs.six_arms(config.gamma)
    prior = _known_reward_prior(env, "SixArms, Dirichlet(1), true rewards")
    agent = agents.PSRL(k=config.k).train(prior, gamma=config.gamma, seed=seed)
    episodes = config.six_arms_episodes
    truth_runs = replay.online_returns(
        agent, env, episodes, runs=config.truth_runs, seed=seed, max_steps=config.max_steps, threads=threads
    )
    truth = truth_runs.mean(axis=0)
    truth_ci95 = 1.96 * truth_runs.std(axis=0, ddof=1) / np.sqrt(config.truth_runs)
    uniform = np.full((env.n_states, env.n_actions), 1.0 / env.n_actions)
    estimates: dict[str, list[np.ndarray]] = {"psrs": [], "queue": [], "model": []}
    samples = []
    # Enough uniform episodes to hold the samples (2.07 steps per episode on average).
    collected = max(10, config.six_arms_samples)
    for j in range(config.six_arms_logs):
        full = replay.Dataset.collect(env, uniform, collected, seed=log_seed(seed, j))
        data = _first_samples(full, config.six_arms_samples)
        samples.append(data.n_rows)
        common = {"seed": log_seed(seed, j), "max_episodes": episodes, "threads": threads}
        for method in ("psrs", "queue"):
            estimates[method].append(replay.evaluate(agent, data, method, **common).returns)
        model = replay.evaluate(agent, data, "model", max_steps=config.max_steps, **common)
        estimates["model"].append(model.returns)
    table = pl.concat([_episode_table(estimates[m], truth, truth_ci95, m) for m in estimates])
    settings = {
        "seed": seed,
        "environment": "SixArms (Strehl & Littman), episodes end on return to state 0",
        "agent": agent.label,
        "prior": prior.name,
        "gamma": config.gamma,
        "logs": config.six_arms_logs,
        "samples_per_log": {"target": config.six_arms_samples, "mean": float(np.mean(samples))},
        "logging_policy": "uniform",
        "log_seeds": f"log j: Dataset.collect(seed={seed} * 10**6 + j), the first complete episodes "
        f"within {config.six_arms_samples} transitions; its evaluations use the same seed",
        "episodes": episodes,
        "truth": f"mean of {config.truth_runs} online runs (online_returns seed {seed})",
        "truth_ci95_half_width_max": float(np.max(truth_ci95)),
        "max_steps": config.max_steps,
        "model_unvisited_rule": "an untried (state, action) stays in its state with reward 0",
    }
    return table, settings


def riverswim_table(config: StudyConfig, seed: int, threads: int | None = None) -> tuple[pl.DataFrame, dict]:
    """The appendix's RiverSwim comparison: episodes evaluated per run, by log size, evaluator and
    candidate."""
    env = envs.make("RiverSwim-Osband")
    horizon = 20
    prior = _known_reward_prior(env, "RiverSwim-Osband, Dirichlet(1), true rewards")
    uniform = np.full((env.n_states, env.n_actions), 0.5)
    evaluators: list[tuple[str, str, dict[str, Any]]] = [
        ("queue", "queue", {}),
        ("psrs", "psrs", {}),
        ("pers (policy bound)", "pers", {"m": "policy"}),
        ("pers (fixed M = 2^20)", "pers", {"m": "logging"}),
        ("pers weighted (fixed M)", "pers", {"m": "logging", "weighted": True}),
    ]
    rows = []
    for size_index, size in enumerate(config.river_sizes):
        data = replay.Dataset.collect(env, uniform, size, seed=log_seed(seed, size_index), episode_end=horizon)
        for k in config.river_ks:
            # Planning discount 0.95 (value iteration needs one below 1); returns are undiscounted sums.
            agent = agents.PSRL(k=k).train(prior, gamma=0.95, horizon=horizon, seed=seed)
            for name, method, options in evaluators:
                with warnings.catch_warnings():
                    # PERS's warning that it expects less than one accepted episode per run is
                    # the finding here (N / M is in the table), not a mistake of the caller.
                    warnings.simplefilter("ignore", UserWarning)
                    runs = replay.evaluate(
                        agent,
                        data,
                        method,
                        seed=log_seed(seed, size_index),
                        runs=config.river_runs,
                        episode_end=horizon,
                        gamma=1.0,
                        threads=threads,
                        **options,
                    )
                counts = runs.n_episodes
                m_values = np.concatenate([r.m_values for r in runs])
                rows.append(
                    {
                        "logged_episodes": size,
                        "candidate": agent.label,
                        "evaluator": name,
                        "episodes_mean": float(counts.mean()),
                        "episodes_sd": float(counts.std(ddof=1)) if len(counts) > 1 else float("nan"),
                        "episodes_min": int(counts.min()),
                        "episodes_max": int(counts.max()),
                        "m_min": float(m_values.min()) if m_values.size else None,
                        "m_max": float(m_values.max()) if m_values.size else None,
                        "expected_pers_accepts": float(np.mean([np.sum(1.0 / r.m_values) for r in runs]))
                        if m_values.size
                        else None,
                    }
                )
    settings = {
        "environment": "RiverSwim (Osband, Russo & Van Roy 2013), 20-step undiscounted episodes from state 0",
        "logging_policy": "uniform",
        "log_sizes": list(config.river_sizes),
        "log_seeds": f"the log of the i-th size: Dataset.collect(seed={seed} * 10**6 + i); evaluations: the same seed",
        "runs": config.river_runs,
        "candidates": [f"PSRL (k={k})" for k in config.river_ks],
        "prior": prior.name,
    }
    return pl.DataFrame(rows), settings


def unrankable_episodes(table: pl.DataFrame) -> list[int]:
    """The episodes where the truth's 95% interval is too wide to rank the evaluators by MSE.

    An evaluator's MSE against the true value is ``variance + (bias + e)^2``, ``e`` the truth's
    error (within +-``truth_ci95``); for two evaluators the difference of their MSEs is linear in
    ``e``, so their order is settled when it is the same at both ends of the interval. An episode is
    listed when some pair reaching it has no settled order."""
    out = []
    for episode, rows in table.filter(pl.col("runs") > 0).group_by("episode", maintain_order=True):
        half = float(rows["truth_ci95"][0])
        bias, variance = rows["bias"].to_numpy(), rows["variance"].to_numpy()
        ends = [variance + (bias + e) ** 2 for e in (-half, half)]
        for i in range(len(bias)):
            for j in range(i + 1, len(bias)):
                if np.sign(ends[0][i] - ends[0][j]) != np.sign(ends[1][i] - ends[1][j]):
                    out.append(int(episode[0]))
                    break
            else:
                continue
            break
    return sorted(out)


def ranking_note(table: pl.DataFrame) -> str:
    """One sentence when the truth is too uncertain to rank the evaluators at some episodes ("" otherwise)."""
    episodes = unrankable_episodes(table)
    if not episodes:
        return ""
    truth = table.filter(pl.col("method") == table["method"][0])
    n = truth.height
    half, low, high = float(truth["truth_ci95"].max()), float(truth["truth"].min()), float(truth["truth"].max())
    return (
        f"The truth's 95% half-width (up to {half:.3g}; truth {low:.3g} to {high:.3g}) is too wide to rank the "
        f"evaluators by MSE at {len(episodes)} of {n} episodes (their order changes within it): more truth runs "
        "(the full study) are needed to rank them there."
    )


#: Figure 2a's evaluators: colour (Okabe and Ito's colour-blind-safe set) and line style.
_STYLES = {"model": ("#D55E00", "-"), "psrs": ("#0072B2", "--"), "queue": ("#009E73", ":")}


def _figure(table: pl.DataFrame, settings: dict) -> Any:
    """MSE (log scale), bias and standard deviation, and the reach share, per episode and evaluator;
    the legends beside the panels (never over the data), and a note when the truth is too uncertain
    to rank the evaluators (:func:`ranking_note`)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, (mse_ax, split_ax, reach_ax) = plt.subplots(3, 1, figsize=(9.5, 8), sharex=True)
    fig.subplots_adjust(left=0.11, right=0.74, top=0.9, hspace=0.15)
    for method, (colour, line) in _STYLES.items():
        rows = table.filter(pl.col("method") == method)
        x = rows["episode"].to_numpy()
        mse_ax.plot(x, rows["mse"].to_numpy(), color=colour, linestyle=line, marker="o", label=method)
        split_ax.plot(x, rows["bias"].to_numpy(), color=colour, linestyle=line, marker="o", label=f"{method} bias")
        sd = np.sqrt(rows["variance"].to_numpy())
        split_ax.plot(x, sd, color=colour, linestyle=line, marker="x", alpha=0.6, label=f"{method} sd")
        reach_ax.step(x, rows["reach"].to_numpy(), where="mid", color=colour, linestyle=line, label=method)
    outside = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "fontsize": 8}
    mse_ax.set_yscale("log")
    mse_ax.set_ylabel("MSE against the truth")
    mse_ax.legend(title="evaluator", title_fontsize=8, **outside)
    title = (
        f"SixArms, {settings['agent']}, {settings['logs']} logs of ~{settings['samples_per_log']['target']} "
        f"uniform samples, seed {settings['seed']}; truth: {settings['truth']}"
    )
    note = ranking_note(table)
    if note:
        title += "\n" + "\n".join(textwrap.wrap(note, 110))
    fig.suptitle(title, fontsize=8, color="black" if not note else "#8B0000")
    split_ax.axhline(0.0, color="0.6", linewidth=0.8)
    split_ax.set_yscale("symlog", linthresh=10.0)
    split_ax.set_ylabel("bias and sd of the estimate")
    split_ax.legend(**outside)
    reach_ax.set_ylim(0.0, 1.05)
    reach_ax.set_ylabel("share of logs\nreaching the episode")
    reach_ax.set_xlabel("episode (0 = the first)")
    reach_ax.legend(**outside)
    return fig


def _markdown(frame: pl.DataFrame, digits: int = 4) -> str:
    """``frame`` through the one Markdown writer, numbers to ``digits`` significant digits, right-aligned."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return "" if np.isnan(value) else f"{value:.{digits}g}"
        return "" if value is None else str(value)

    align = ["right" if dtype.is_numeric() else "left" for dtype in frame.dtypes]
    return markdown_table(frame.columns, [[cell(v) for v in row] for row in frame.iter_rows()], align)


def run_study(out: Path, config: StudyConfig, seed: int = 0, threads: int | None = None) -> Path:
    """Runs both experiments and writes ``figure2a.csv``, ``figure2a.png``/``.svg``, ``riverswim.csv``,
    ``summary.json`` and ``README.md`` (the report) into ``out``; returns the report's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    machine = host_line()
    figure_table, figure_settings = six_arms_figure_2a(config, seed, threads)
    river, river_settings = riverswim_table(config, seed, threads)
    write_atomic(out / "figure2a.csv", figure_table.write_csv().encode())
    write_atomic(out / "riverswim.csv", river.write_csv().encode())
    save_figure(_figure(figure_table, figure_settings), out / "figure2a")
    summary = {
        "seed": seed,
        "config": dataclasses.asdict(config),
        "figure2a": figure_settings,
        "riverswim": river_settings,
        "machine": machine,
    }
    write_atomic(out / "summary.json", (json.dumps(summary, indent=1) + "\n").encode())
    shown = figure_table.select(
        "method", "episode", "runs", "reach", "mean", "truth", "truth_ci95", "bias", "variance", "mse"
    )
    note = ranking_note(figure_table)
    report = f"""# Offline evaluation of an online learner: Mandel et al. (2016), regenerated

Seed {seed}; {machine}.

## Figure 2a: SixArms, PSRS and Queue against the model-based evaluator

{figure_settings["agent"]} ({figure_settings["prior"]}, discount {config.gamma}); {config.six_arms_logs}
logs of the first complete uniform episodes within {config.six_arms_samples} transitions (mean
{figure_settings["samples_per_log"]["mean"]:.1f}); one evaluation of {config.six_arms_episodes} episodes at most per
log and evaluator. Truth: {figure_settings["truth"]} (largest 95% half-width
{figure_settings["truth_ci95_half_width_max"]:.3g}). Seeds: {figure_settings["log_seeds"]}. The model-based
evaluator's rule for untried pairs: {figure_settings["model_unvisited_rule"]}.

Per episode, over the logs whose evaluation reached it: `mse` = `bias`^2 + `variance`; `reach` is the
share of logs reaching it. A small MSE with a small reach is mostly the bias of the runs that survived.
{f"{chr(10)}**Cannot rank:** {note}{chr(10)}" if note else ""}
![Figure 2a](figure2a.png)

{_markdown(shown)}

## RiverSwim: episodes evaluated per run

{river_settings["environment"]}; uniform logs of {", ".join(str(s) for s in config.river_sizes)} episodes;
{config.river_runs} evaluations per row. Seeds: {river_settings["log_seeds"]}. Candidates:
{", ".join(river_settings["candidates"])} ({river_settings["prior"]}). `m_min`/`m_max`: PERS's M;
`expected_pers_accepts`: the expected accepted episodes per run, the sum of 1/M over the proposals.

{_markdown(river)}
"""
    return write_atomic(out / "README.md", report.encode())
