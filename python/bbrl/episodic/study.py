"""The regret study (``bbrl regret-study``): where the Bayes-adaptive planners and the regret-minimising
baselines meet on the same MDPs, seeds and start states.

Two questions, one panel each:

1. **RiverSwim** (Osband, Russo & Van Roy 2013's comparison, ``RiverSwim-Osband``, episodes of
   tau = 20 steps): the cumulative regret over episodes of PSRL, the Bayes-adaptive planners (BAMCP,
   BFS3, SBOSS, BEB) and every agent kind of the registry that declares itself an episodic baseline
   (``episodic_baseline``: a kind registered later joins the study without a change here).
2. **DeepSea scaling**, when the problem registry has ``DeepSea``: for each size N, the first
   episode from which at least 90% of the remaining episodes (and 9 of the next 10) reach the treasure, for PSRL and the
   baselines, against the ``2^N`` episodes dithering needs. Skipped with a note otherwise.

Every agent uses its kind's first example setting (the one that runs in seconds) and learns offline
from a Dirichlet prior of concentration ``1/S`` over every next state with the problem's rewards.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..fileio import write_atomic
from ..intervals import Z_95_TWO_SIDED
from ..protocol.schema import Col

__all__ = [
    "BAYESIAN_KINDS",
    "DEEP_SEA",
    "StudyConfig",
    "baseline_kinds",
    "learning_episode",
    "run_study",
    "study_agents",
]

#: PSRL and the Bayes-adaptive planners of the benchmark, in the study's order.
BAYESIAN_KINDS = ("psrl", "beb", "bamcp", "bfs3", "sboss")
#: The problem of question 1.
RIVERSWIM = "RiverSwim-Osband"
#: The problem of question 2, when registered.
DEEP_SEA = "DeepSea"
#: The share of episodes that must reach the treasure (question 2).
SOLVED_SHARE = 0.9
#: The episodes right after the learning episode that must reach the treasure in that share too.
NEXT_EPISODES = 10
#: Nine of ten is 0.9 up to rounding: compared with this much slack.
SHARE_TOLERANCE = 1e-12
#: An episode reaches DeepSea's treasure when its return exceeds this: the treasure pays 1, and all
#: the move costs of an episode together are at most 0.01.
TREASURE_RETURN = 0.5


@dataclasses.dataclass(frozen=True)
class StudyConfig:
    """The study's sizes.

    Attributes:
        episodes: RiverSwim episodes per run (Osband et al.: 10,000 steps, so 500 episodes of 20).
        runs: RiverSwim runs (seeds) per agent (Osband et al.: 20).
        planners: whether the Bayes-adaptive planners run on RiverSwim (PSRL always does).
        deep_sea_sizes: the DeepSea sizes N.
        deep_sea_episodes: DeepSea episodes per run.
        deep_sea_runs: DeepSea runs per agent and size.
    """

    episodes: int = 500
    runs: int = 20
    planners: bool = True
    deep_sea_sizes: tuple[int, ...] = tuple(range(4, 21, 2))
    deep_sea_episodes: int = 1000
    deep_sea_runs: int = 5

    def smoke_sized(self) -> StudyConfig:
        """These sizes, or under ``BBRL_SMOKE`` (:mod:`bbrl.smoke`) a few runs of a few episodes
        and the smallest DeepSea only: the whole study, its files and figures in seconds."""
        from .. import smoke

        if not smoke.active():
            return self
        runs, episodes = smoke.episodic_size(self.runs, self.episodes)
        deep_runs, deep_episodes = smoke.episodic_size(self.deep_sea_runs, self.deep_sea_episodes)
        return dataclasses.replace(
            self,
            runs=runs,
            episodes=episodes,
            deep_sea_sizes=self.deep_sea_sizes[:1],
            deep_sea_runs=deep_runs,
            deep_sea_episodes=deep_episodes,
        )

    @classmethod
    def quick(cls) -> StudyConfig:
        """Minutes become seconds: fewer episodes, runs and sizes."""
        return cls(
            episodes=200, runs=10, planners=True, deep_sea_sizes=(4, 6, 8), deep_sea_episodes=150, deep_sea_runs=3
        )


def baseline_kinds() -> tuple[str, ...]:
    """The registry's kinds that declare themselves episodic baselines, in its order
    (:func:`bbrl.agents.registry.baseline_kinds`)."""
    from ..agents import registry

    return registry.baseline_kinds()


def study_agents(kinds: tuple[str, ...], horizon: int) -> list[Any]:
    """Each kind's first example setting; an agent that plans in blocks of ``plan_horizon`` steps
    plans over the episode's ``horizon`` (its default, 1 / (1 - gamma) steps, is for a discounted
    trajectory and has no meaning at gamma = 1)."""
    import dataclasses

    from .. import agents

    built = [agents.examples(kind)[0] for kind in kinds]
    return [dataclasses.replace(a, plan_horizon=horizon) if "plan_horizon" in a.params else a for a in built]


def learning_episode(returns: np.ndarray, window: int) -> int:
    """The first episode k (0-based) from which at least 90% of episodes k, k+1, ... reach the
    treasure and at least 90% of the :data:`NEXT_EPISODES` episodes k, ..., k + 9 do, looking only
    at k with at least ``window`` episodes left (so that a lucky last few do not count);
    ``len(returns)`` when there is none (not learned within the run)."""
    reached = np.asarray(returns) > TREASURE_RETURN
    k_max = reached.size - max(window, NEXT_EPISODES)
    if k_max < 0:
        return int(reached.size)
    # Share of reaching episodes in each suffix k.., by reversed cumulative sums.
    suffix_hits = np.cumsum(reached[::-1])[::-1]
    shares = suffix_hits / np.arange(reached.size, 0, -1)
    # Share in each block k..k+9: without it a long run dilutes the misses of exploration (an agent
    # that misses the first 50 of 1000 episodes, then never again, would count as learned at 0).
    hits = np.concatenate(([0], np.cumsum(reached)))
    next_shares = (hits[NEXT_EPISODES:] - hits[:-NEXT_EPISODES]) / NEXT_EPISODES
    ok = np.flatnonzero(
        (shares[: k_max + 1] >= SOLVED_SHARE) & (next_shares[: k_max + 1] >= SOLVED_SHARE - SHARE_TOLERANCE)
    )
    return int(ok[0]) if ok.size else int(reached.size)


def _mean_ci(values: np.ndarray) -> tuple[float, float]:
    n = values.size
    mean = float(values.mean())
    return mean, (math.nan if n < 2 else float(Z_95_TWO_SIDED * values.std(ddof=1) / math.sqrt(n)))


def riverswim(config: StudyConfig, seed: int, threads: int | None) -> tuple[list[Any], dict[str, Any]]:
    """Question 1: every agent's :class:`~bbrl.episodic.EpisodicRun` on RiverSwim-Osband."""
    from .experiment import EpisodicExperiment

    exp = EpisodicExperiment(RIVERSWIM, episodes=config.episodes, n_runs=config.runs, seed=seed)
    kinds = BAYESIAN_KINDS if config.planners else ("psrl",)
    runs = [exp.run(agent, threads=threads) for agent in study_agents(kinds + baseline_kinds(), exp.horizon)]
    settings = {
        "problem": RIVERSWIM,
        "episodes": exp.episodes,
        "runs": exp.n_runs,
        "horizon": exp.horizon,
        "gamma": exp.gamma,
        "seed": exp.seed,
        "prior": f"Dirichlet 1/S = {1 / exp.n_states:g} on every next state",
    }
    return runs, settings


def deep_sea(config: StudyConfig, seed: int, threads: int | None) -> Any:
    """Question 2: one row per agent and size N, the runs' learning episodes (mean and 95% band)."""
    import polars as pl

    from .experiment import EpisodicExperiment

    rows = []
    window = max(10, config.deep_sea_episodes // 10)
    for n in config.deep_sea_sizes:
        exp = EpisodicExperiment(
            DEEP_SEA,
            episodes=config.deep_sea_episodes,
            n_runs=config.deep_sea_runs,
            seed=seed,
            env_options={"size": n},
        )
        for agent in study_agents(("psrl", *baseline_kinds()), exp.horizon):
            run = exp.run(agent, threads=threads)
            learned = np.array([learning_episode(r, window) for r in run.returns], dtype=np.float64)
            mean, ci = _mean_ci(learned)
            rows.append(
                {
                    Col.AGENT: run.agent,
                    "kind": run.kind,
                    "size": n,
                    "learning_episode_mean": mean,
                    "learning_episode_ci95": ci,
                    "runs_not_learned": int((learned >= config.deep_sea_episodes).sum()),
                    "runs": run.n_runs,
                    "episodes": run.episodes,
                }
            )
    return pl.DataFrame(rows)


def _styles(kinds: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each agent label's colour, line style, marker and legend name, by its kind: the report's
    colour-blind-safe colours and line styles, fixed by the registry's order, so that an agent looks
    the same in every figure and no two of the study's agents share both colour and line style. The
    name is the algorithm's (its setting is in the table under the figure)."""
    from ..agents import kinds as registry
    from ..analysis.figures import algorithm_colour, algorithm_linestyle, algorithm_marker

    styles = {}
    for label, kind in kinds.items():
        algorithm = registry()[kind].display
        styles[label] = {
            "color": algorithm_colour(algorithm, []),
            "linestyle": algorithm_linestyle(algorithm, []),
            "marker": algorithm_marker(algorithm, []),
            "name": algorithm,
        }
    return styles


def _deep_sea_figure(table: Any, episodes: int) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    # One line per kind: an agent's label changes with N (its planning horizon is the problem's).
    kinds = table["kind"].unique(maintain_order=True).to_list()
    styles = _styles({kind: kind for kind in kinds})
    for agent in kinds:
        rows = table.filter(table["kind"] == agent).sort("size")
        x = rows["size"].to_numpy()
        y = rows["learning_episode_mean"].to_numpy() + 1  # episodes are 1-based on the axis
        ci = np.nan_to_num(rows["learning_episode_ci95"].to_numpy())
        style = styles[agent]
        # Lines of agents that never learn lie on the "end of the runs" line together: the legend
        # says which they are.
        never = bool((rows["runs_not_learned"] == rows["runs"]).all())
        (line,) = ax.plot(
            x,
            y,
            marker=style["marker"],
            color=style["color"],
            linestyle=style["linestyle"],
            linewidth=1.2,
            label=style["name"] + (": never, at any N" if never else ""),
        )
        ax.fill_between(x, np.maximum(y - ci, 1), y + ci, color=line.get_color(), alpha=0.2)
    sizes = np.asarray(sorted(set(table["size"].to_list())))
    ax.plot(sizes, 2.0**sizes, color="0.35", linestyle="--", linewidth=1.0, label="2^N (dithering)")
    ax.axhline(episodes, color="0.6", linestyle=":", linewidth=1.0, label=f"end of the runs ({episodes})")
    ax.set_yscale("log")
    ax.set_xticks(sizes)
    ax.set_xlabel("DeepSea size N")
    ax.set_ylabel("first episode from which >= 90%\nof episodes reach the treasure")
    ax.set_title("DeepSea scaling: mean over runs, 95% band (runs that never learn count as the last episode)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="agent", title_fontsize=8)
    return fig


def _markdown(frame: Any) -> str:
    columns = frame.columns
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in frame.iter_rows():
        cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_study(out: Path, config: StudyConfig, seed: int = 0, threads: int | None = None, say: Any = print) -> Path:
    """Runs both questions into ``out``; returns the report (README.md). ``say`` gets the notes a
    user should see (the DeepSea panel skipped)."""
    from .. import problems
    from ..analysis.figures import save_figure
    from ..analysis.regret import plot_cumulative_regret
    from .results import regret_curves, regret_table, save_results

    clock = time.perf_counter()
    runs, settings = riverswim(config, seed, threads)
    settings["wall_seconds"] = round(time.perf_counter() - clock, 3)
    save_results(out / "riverswim", runs, settings)
    table = regret_table(runs)
    write_atomic(out / "riverswim-regret.csv", table.write_csv().encode())
    curves = regret_curves(runs)
    styles = _styles({run.agent: run.kind for run in runs})
    fig = plot_cumulative_regret(
        curves,
        title=f"{RIVERSWIM}, episodes of {settings['horizon']} steps",
        xlabel="episode k",
        ylabel="mean cumulative realised regret\n(finite-horizon optimum minus return, summed to k)",
        over="runs",
        colours={label: style["color"] for label, style in styles.items()},
        linestyles={label: style["linestyle"] for label, style in styles.items()},
        names={label: style["name"] for label, style in styles.items()},
        legend_by_final=True,
    )
    figures = {"riverswim": save_figure(fig, out / "riverswim-regret")}
    summary: dict[str, Any] = {"config": dataclasses.asdict(config), "seed": seed, "riverswim": settings}
    deep_note = ""
    if DEEP_SEA in problems.names_of():
        clock = time.perf_counter()
        deep = deep_sea(config, seed, threads)
        write_atomic(out / "deepsea-scaling.csv", deep.write_csv().encode())
        figures["deepsea"] = save_figure(_deep_sea_figure(deep, config.deep_sea_episodes), out / "deepsea-scaling")
        summary["deepsea"] = {
            "sizes": list(config.deep_sea_sizes),
            "episodes": config.deep_sea_episodes,
            "runs": config.deep_sea_runs,
            "wall_seconds": round(time.perf_counter() - clock, 3),
        }
    else:
        deep_note = f"The problem registry has no {DEEP_SEA}: the DeepSea scaling panel is skipped."
        say(deep_note)
    write_atomic(out / "summary.json", (json.dumps(summary, indent=1) + "\n").encode())
    parts = [
        "# Regret study",
        "",
        f"Seed {seed}. Every agent runs its kind's first example setting and learns offline from {settings['prior']}"
        " with the problem's rewards; every agent meets the same MDPs and start states (see docs/regret.md).",
        "",
        f"## {RIVERSWIM}: cumulative regret over {settings['episodes']} episodes of {settings['horizon']} steps",
        "",
        f"Mean over {settings['runs']} runs with 95% bands. Realised regret: the finite-horizon optimum of the start "
        "state minus the return; expected regret: the sum of the gaps of the actions taken.",
        "",
        "![RiverSwim regret](riverswim-regret.png)",
        "",
        _markdown(table),
        "",
        "Per-episode results: `riverswim/` (read with `bbrl.episodic.read_results`).",
        "",
    ]
    if "deepsea" in figures:
        parts += [
            f"## {DEEP_SEA} scaling",
            "",
            "For each size N, the first episode from which at least 90% of the later episodes, and 9 of the next 10, "
            "reach the treasure "
            "(mean over runs, 95% band); the dashed line is the 2^N episodes dithering needs. The agents are "
            "given the reward table, which on DeepSea tells them where the treasure pays and which action "
            "costs, where bsuite's agents learn the rewards; docs/regret.md (Limits) says for which agents "
            "that matters.",
            "",
            "![DeepSea scaling](deepsea-scaling.png)",
            "",
        ]
    else:
        parts += [f"## {DEEP_SEA} scaling", "", deep_note, ""]
    return write_atomic(out / "README.md", "\n".join(parts).encode())
