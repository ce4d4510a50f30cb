"""Replaying a log to a trained agent (:func:`evaluate`) and the online truth it estimates
(:func:`online_returns`)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import polars as pl

from .. import _core
from ..agents import Agent, AgentSpec, Stepper, TrainedAgent, TrainedPythonAgent
from ..checks import count as _count
from ..envs import FiniteEnv
from ..seeds import keyed_seed
from ..threads import worker_threads
from .dataset import Dataset, environment_core, episode_end_rule
from .results import ReplayResult, ReplayRuns, describe_m
from .workers import run_blocks

__all__ = ["METHODS", "binomial_survival", "evaluate", "online_returns", "stepping_handle"]

#: The evaluators by name: three replays of the log and the model-based baseline.
METHODS = ("queue", "psrs", "pers", "model")


def stepping_handle(agent: Any) -> tuple[Any, bool]:
    """The core stepping handle on a trained agent, and whether it is a Python agent (whose runs
    hold the GIL: one after the other in a process)."""
    if isinstance(agent, Stepper):
        return agent._core, isinstance(agent.trained, TrainedPythonAgent)
    if isinstance(agent, (AgentSpec, Agent)):
        raise TypeError(f"{agent.label} is not trained: pass agent.train(prior, gamma) (a trained agent)")
    if not isinstance(agent, TrainedAgent):
        raise TypeError(
            "agent must be a trained agent (bbrl.agents.X(...).train(prior) or a trained bbrl.agents.Agent "
            f"subclass) or a bbrl.Stepper, got {type(agent).__name__}"
        )
    handle = Stepper(agent)
    return handle._core, isinstance(agent, TrainedPythonAgent)


def evaluate(
    agent: Any,
    data: Dataset,
    method: str,
    seed: int = 0,
    *,
    episode_end: Any = "start",
    gamma: float | None = None,
    runs: int | None = None,
    threads: int | None = None,
    m: str | float | None = None,
    max_length: int | None = None,
    weighted: bool = False,
    max_episodes: int | None = None,
    trace: bool = False,
    psrs_order: str | None = None,
    max_steps: int | None = None,
) -> ReplayResult | ReplayRuns:
    """Replays ``data`` to ``agent`` (a trained agent) with ``method`` (``"queue"``, ``"psrs"``,
    ``"pers"``), or runs it on the log's maximum-likelihood model (``"model"``, the model-based
    baseline: :meth:`Dataset.mle_model`, ``max_episodes`` episodes per run, never stopping).

    Args:
        seed: with the log's :attr:`~Dataset.fingerprint`, the seed of every random stream of the
            evaluation (:func:`bbrl.seeds.keyed_seed`): the same log and seed give bit-identical
            results, and two logs evaluated with one seed get independent draws.
        episode_end: ``"start"`` (an episode ends when the walk returns to the start state),
            ``"terminal"`` (the log's ``terminal`` column) or an int horizon in steps.
        gamma: discount of the reported returns; default the agent's training discount, with a
            warning when the log's episodes are undiscounted (a fixed horizon ``episode_end=<int>``,
            or a log collected on an undiscounted environment such as RiverSwim-Osband) and that
            discount is below 1.
        runs: ``None`` for one :class:`ReplayResult`; an int for a :class:`ReplayRuns` of that many
            independent evaluations run in parallel on ``threads`` workers (default every core;
            never more than ``runs``, and more than the cores warns: :mod:`bbrl.threads`):
            threads for built-in agents, worker processes for a Python agent (which must then
            pickle; by default, one that does not runs in this process), the same results whatever
            their number.
        m: PERS only: ``"policy"`` (default; exact bound from the agent's policy at the start of each
            episode, for agents whose policy is fixed within an episode such as episodic PSRL),
            ``"per_step"`` (looser, same validity), ``"logging"`` (1 / min over episodes of the
            logging probability: a fixed M valid for every agent) or a number (fixed M, checked).
            With ``weighted=True``, which needs a fixed M, the default is ``"logging"`` (with a
            warning giving M). The M used is in ``result.settings["m"]`` and ``result.m_values``;
            a warning says when fewer than one accepted episode per run is expected (N / M < 1).
        max_length: PERS: the longest possible episode when episodes have no fixed horizon.
        weighted: PERS: also return the importance-weighted estimates (needs a fixed M).
        max_episodes: stop after this many emitted episodes.
        trace: keep every transition fed to the agent (``result.trace``; not for ``"model"``).
        psrs_order: PSRS only: ``"check_first"`` (default: check that the state's stream is not
            empty, then pop) or ``"paper"`` (the paper's listing: pop, then stop if the stream
            became empty, throwing that row away; for comparison).
        max_steps: ``"model"`` only: a simulated episode still running after this many steps is
            cut there (default 1000).
    """
    handle, python_agent = stepping_handle(agent)
    if not isinstance(data, Dataset):
        raise TypeError(f"data must be a bbrl.replay.Dataset, got {type(data).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(repr(m) for m in METHODS)}, got {method!r}")
    if psrs_order is not None and psrs_order not in ("check_first", "paper"):
        raise ValueError(f"psrs_order must be 'check_first' or 'paper', got {psrs_order!r}")
    if method == "model" and max_episodes is None:
        raise ValueError("method 'model' never runs out of data: give max_episodes (episodes per run)")
    kind, horizon = episode_end_rule(episode_end)
    # The model uses every row; the replays need complete episodes under the episode end.
    complete, dropped_rows, dropped_id = (
        (data.n_episodes, 0, None) if method == "model" else data._core.complete_episodes(kind, horizon)
    )
    if dropped_rows:
        warnings.warn(
            f"the log's last episode ({dropped_id}) is incomplete under episode_end={episode_end!r}: its "
            f"{dropped_rows} transitions are left out (a partial episode would bias the evaluators)",
            stacklevel=2,
        )
    m_rule, m_value = (None, None)
    if isinstance(m, str):
        m_rule = m
    elif m is not None:
        if isinstance(m, bool) or not isinstance(m, (int, float, np.number)) or not math.isfinite(m):
            raise TypeError(f"m must be 'policy', 'per_step', 'logging' or a finite number, got {m!r}")
        m_value = float(m)
    n_runs = _count(runs, "runs", 1, optional=True) or 1
    if gamma is not None and not (isinstance(gamma, (int, float, np.number)) and 0.0 <= gamma <= 1.0):
        raise ValueError(f"gamma must be a number in [0, 1] (or None for the agent's), got {gamma!r}")
    # weighted=True needs a fixed M: its default is the logging bound (the core's default too), said aloud.
    m_defaulted = str(method) == "pers" and bool(weighted) and m is None
    if m_defaulted:
        m_rule = "logging"
    options = {
        "method": str(method),
        "episode_end": kind if kind != "horizon" else horizon,
        "gamma": None if gamma is None else float(gamma),
        # The log keys the streams: the same log and seed reproduce, two logs with one seed draw independently.
        "seed": keyed_seed(_count(seed, "seed", 0), data.fingerprint),
        "runs": n_runs,
        "threads": worker_threads(threads, n_runs),
        "m_rule": m_rule,
        "m_value": m_value,
        "max_length": _count(max_length, "max_length", 1, optional=True),
        "weighted": bool(weighted),
        "max_episodes": _count(max_episodes, "max_episodes", 1, optional=True),
        "trace": bool(trace),
        "psrs_order": psrs_order,
        "max_steps": _count(max_steps, "max_steps", 1, optional=True),
    }
    options = {k: v for k, v in options.items() if v is not None}
    if python_agent:
        outcomes = run_blocks(
            "evaluate",
            _python_trained(agent),
            data,
            options,
            threads is not None,
            lambda o: _core.replay_evaluate(handle, True, data._core, o),
        )
    else:
        outcomes = _core.replay_evaluate(handle, False, data._core, options)
    agent_gamma = float(handle.gamma)
    settings = {
        "method": str(method),
        "seed": int(seed),
        "log_fingerprint": data.fingerprint,
        "runs": runs,
        "episode_end": episode_end if kind != "horizon" else horizon,
        "gamma": agent_gamma if gamma is None else float(gamma),
        "agent_gamma": agent_gamma,
        "m": (m_value if m_value is not None else (m_rule or "policy")) if str(method) == "pers" else None,
        "max_length": max_length,
        "weighted": bool(weighted),
        "max_episodes": max_episodes,
        "logged_episodes": int(complete),
        "psrs_order": (psrs_order or "check_first") if str(method) == "psrs" else None,
        "max_steps": (max_steps or 1000) if str(method) == "model" else None,
        "start": "logged" if data.start_state is None else data.start_state,
    }
    results = [_outcome(str(method), int(seed), i, o, settings) for i, o in enumerate(outcomes)]
    if gamma is None:
        _warn_discount(agent_gamma, data, kind, horizon)
    if str(method) == "pers":
        _warn_m(results, m_defaulted)
    return results[0] if runs is None else ReplayRuns(results)


def _environment_document(env: FiniteEnv) -> dict[str, Any]:
    """The arguments that rebuild ``env`` in a worker process (the core object does not pickle)."""
    return {
        "transitions": env.transitions,
        "rewards": env.rewards,
        "start": env.start_law,
        "discount": env.discount,
        "time_limit": env.time_limit,
        "name": env.name,
    }


def _python_trained(agent: Any) -> TrainedPythonAgent:
    """The trained Python agent behind ``agent`` (a trained agent or a stepper on one)."""
    return agent.trained if isinstance(agent, Stepper) else agent


def _warn_discount(agent_gamma: float, data: Dataset, kind: str, horizon: int) -> None:
    """Warns when the returns are discounted by default while the log's episodes are undiscounted."""
    if agent_gamma >= 1.0:
        return
    if kind == "horizon":
        why = f"the log's episodes have a fixed horizon of {horizon} steps (episode_end={horizon})"
    elif data.discount == 1.0:
        why = "the log was collected on an undiscounted environment (discount 1)"
    else:
        return
    warnings.warn(
        f"the reported returns are discounted by gamma={agent_gamma:g}, the agent's training discount, but {why}, "
        "whose returns are usually undiscounted sums; pass gamma=1.0 for undiscounted returns, or gamma= the "
        "discount you mean (which also silences this warning)",
        UserWarning,
        stacklevel=3,
    )


def _warn_m(results: list[ReplayResult], m_defaulted: bool) -> None:
    """PERS: states a defaulted M, and warns when fewer than one accepted episode per run is expected."""
    values = np.concatenate([r.m_values for r in results])
    if m_defaulted:
        warnings.warn(
            f"weighted=True needs a fixed M, so m='logging' is used ({describe_m(values)}; the default without "
            "weighted is m='policy'); pass m='logging' or a number to choose M and silence this warning",
            UserWarning,
            stacklevel=3,
        )
    if values.size == 0:
        return
    expected = float(np.mean([np.sum(1.0 / r.m_values) for r in results]))
    if expected < 1.0:
        proposals = float(np.mean([r.proposals for r in results]))
        warnings.warn(
            f"PERS expects {expected:.3g} accepted episodes per run (N / M with N = {proposals:g} proposed episodes "
            f"and {describe_m(values)}): fewer than one, so most runs report no episode; shorten the horizon "
            "(max_length or an int episode_end), give a smaller valid M, or collect more episodes",
            UserWarning,
            stacklevel=3,
        )


def _outcome(method: str, seed: int, run: int, o: dict[str, Any], settings: dict[str, Any]) -> ReplayResult:
    trace = pl.DataFrame(o["trace"]) if "trace" in o else None
    return ReplayResult(
        method=method,
        seed=seed,
        run=run,
        returns=o["returns"],
        lengths=o["lengths"],
        tuples_used=int(o["tuples_used"]),
        proposals=int(o["proposals"]),
        accepted=int(o["accepted"]),
        stop_reason=o["stop_reason"],
        stop_message=o["stop_message"],
        m_values=o["m_values"],
        weighted_returns=o["weighted"],
        trace=trace,
        settings=dict(settings),
    )


def online_returns(
    agent: Any,
    env: Any,
    n_episodes: int,
    runs: int = 100,
    seed: int = 0,
    *,
    episode_end: Any = "start",
    discount: float | None = None,
    gamma: float | None = None,
    max_steps: int = 1000,
    threads: int | None = None,
) -> np.ndarray:
    """The truth a replay estimates: ``runs`` independent online runs of ``agent`` on ``env`` (as
    in :meth:`Dataset.collect`; each episode starts in a state drawn from the environment's start
    law), ``n_episodes`` episodes each with the same episode end; a (runs, n_episodes) array of
    discounted returns (discount ``gamma``, default the agent's). Run ``i`` uses the streams of run
    ``i`` whatever the number of ``threads`` (worker processes for a Python agent). An episode still running
    after ``max_steps`` steps is cut there, which changes its return by at most
    ``gamma**max_steps * max|r| / (1 - gamma)``."""
    kind, horizon = episode_end_rule(episode_end)
    handle, python_agent = stepping_handle(agent)
    core_env = environment_core(env, discount)
    options = {
        "n_episodes": _count(n_episodes, "n_episodes", 1),
        "episode_end": kind if kind != "horizon" else horizon,
        "gamma": None if gamma is None else float(gamma),
        "max_steps": _count(max_steps, "max_steps", 1),
        "seed": _count(seed, "seed", 0),
        "runs": _count(runs, "runs", 1),
    }
    options["threads"] = worker_threads(threads, options["runs"])
    if not python_agent:
        return _core.replay_online(handle, False, core_env, options)
    rows = run_blocks(
        "online",
        _python_trained(agent),
        _environment_document(FiniteEnv._wrap(core_env)),
        options,
        threads is not None,
        lambda o: list(_core.replay_online(handle, True, core_env, o)),
    )
    return np.vstack(rows) if rows else np.empty((0, options["n_episodes"]))


def binomial_survival(n: int, p: float, t: Any) -> np.ndarray:
    """P(Binomial(n, p) >= t) for each t, accurate far in the upper tail (the weight of the
    importance-weighted PERS estimate)."""
    return _core.binomial_survival(int(n), float(p), np.atleast_1d(np.asarray(t, dtype=np.int64)))
