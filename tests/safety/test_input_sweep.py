"""The input sweep: every option of every command, and every parameter of every agent kind and
environment, given hostile values (negative, zero, huge, NaN, infinite, of the wrong type, empty).

The command line is walked through its parser, the agents and environments through the core's
registries, so that what is added tomorrow is swept without anyone listing it; a command needs
one valid command line here (:data:`BASELINES`), which the sweep checks is there. Each case is a
tiny valid command line with one value changed, run in-process (``BBRL_SWEEP_SUBPROCESS=1``: as
``python -m bbrl`` in a subprocess per case). It ends with exit 0, or exit 2 and one line on
standard error naming the option; never a traceback, a Rust panic, an abort or a hang; and a NaN,
infinite or negative value of a numeric option is not accepted unless the option documents it.
A Python API call ends with a result or a ValueError/TypeError naming the parameter.

The cases that still fail are listed in :data:`KNOWN` (strict xfails: the day one is fixed, the
sweep says to drop it); run ``pytest --runxfail`` to see them fail.

Not in CI yet: it runs only with ``BBRL_SWEEP=1``. Today it takes about 17 minutes (its budget is
2) and finds a few hundred cases, mostly errors that do not name the option they come from
(``bbrl run --experiment=-1`` says "unknown distribution '-1'" without ``--experiment``): those
are to be fixed or listed in :data:`KNOWN`, and the cases made cheaper, before it joins the suite.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import _sweep
import numpy as np
import pytest
from _fuzz import TINY_GRID
from _sweep import HOSTILE, HOSTILE_PY, NONSENSE, SUBPROCESS, Command
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import bbrl
from bbrl import _core
from bbrl.cli import build_parser

pytestmark = pytest.mark.skipif(
    os.environ.get("BBRL_SWEEP") != "1", reason="the input sweep runs with BBRL_SWEEP=1 (not yet within CI's budget)"
)

PARSER = build_parser()
COMMANDS = {c.path: c for c in _sweep.commands(PARSER)}

# -- valid command lines ------------------------------------------------------------------------


def argv(line: str) -> list[str]:
    """A command line's words (none holds a space)."""
    return line.split()


#: A tiny valid command line of each command that takes anything (options, then ``--`` and its
#: positionals in the parser's order), run in a folder holding the files of :func:`fixtures`.
BASELINES: dict[tuple[str, ...], list[str]] = {
    (): [],
    ("run",): argv("--experiment GC --agent random --n-mdps 2 --horizon 2 --threads 1"),
    ("quick",): argv("--n-mdps 2 --horizon 2 --threads 1 --out q"),
    ("grid", "run"): argv("--out g --threads 1 -- tiny.toml"),
    ("grid", "status"): argv("-- results"),
    ("grid", "plan"): argv("--out p -- tiny.toml"),
    ("grid", "submit"): argv("--out s --dry-run -- tiny.toml"),
    ("grid", "task"): argv("-- submitted 0"),
    ("report",): argv("--out rep -- results"),
    ("export",): argv("--format csv --out exp -- results"),
    ("paper",): argv("--quick --out pp --threads 1"),
    ("formulas",): argv("--max-size 2 --n-points 10 --out f"),
    ("agents",): [],
    ("agents", "convert"): argv("-- agent.json new.json"),
    ("distributions",): [],
    ("envs",): [],
    ("value-error", "references"): argv("--env mountain-car --states 2 --epsilon 0.3 --k 5 --threads 1 --out ver"),
    ("value-error", "states"): argv("--env mountain-car --states 2 --threads 1 --out ves"),
    ("value-error", "study"): argv(
        "--states 2 --domains mountain-car --epsilons 0.3 --deltas 0.3 --rules betting --threads 1 --out vst"
    ),
    ("replay",): argv("--agent random --runs 2 --threads 1 --out rp -- log.parquet"),
    ("replay-study",): argv("--quick --threads 1 --out rs"),
    ("regret-study",): argv("--quick --threads 1 --out gs"),
}

#: The command line an option is swept in when the baseline is not where it acts (an option that
#: only acts with another, or excludes one of the baseline's); options named ``--race-...`` are
#: swept with ``--race`` (see :func:`context`).
VARIANTS: dict[tuple[tuple[str, ...], str], list[str]] = {
    **{
        (("run",), option): argv("--experiment GC --agent-file agent.json --n-mdps 2 --horizon 2")
        for option in ("--agent-file", "--agent-class", "--allow-pickle")
    },
    **{
        (("replay",), option): argv(
            "--agent random --runs 2 --threads 1 --out rp --method pers --max-length 30 -- log.parquet"
        )
        for option in ("--m", "--max-length", "--weighted")
    },
    (("replay",), "--max-episodes"): argv(
        "--agent random --runs 2 --threads 1 --out rp --method model --max-episodes 2 -- log.parquet"
    ),
    (("value-error", "references"), "--accept-truncated"): argv(
        "--env mountain-car --states 2 --epsilon 0.3 --threads 1 --out ver --gamma 1 --max-rollout-steps 4000"
    ),
}


def context(command: Command, action: argparse.Action) -> list[str]:
    """The valid command line ``action`` is swept in."""
    key = (command.path, _sweep.key_of(action))
    if key in VARIANTS:
        return list(VARIANTS[key])
    baseline = list(BASELINES[command.path])
    if key[1].startswith("--race-") and "--race" not in baseline:
        baseline.insert(0, "--race")
    return baseline


#: Commands that run their real study in a subprocess case under ``BBRL_SMOKE`` (in-process, the
#: tiny studies of :func:`tiny_studies` stand for them).
SMOKED = {("quick",), ("paper",), ("regret-study",), ("replay-study",)}

# -- what may be accepted, what runs long, what still fails -------------------------------------

#: Values of a numeric option that its help gives a meaning (so accepting them is no nonsense),
#: with the words of the help that say so (checked against the help).
DOCUMENTED: dict[tuple[tuple[str, ...], str, str], str] = {}

#: Valid values that make a run genuinely long (a huge count of work): skipped in-process with the
#: reason; a subprocess case (``BBRL_SWEEP_SUBPROCESS=1``) passes when it is still running at its
#: time limit with nothing printed that marks a crash.
LONG: dict[str, str] = {}

#: The cases that still fail, by id, with what they do (strict xfails).
KNOWN: dict[str, str] = {}

#: Cases of :data:`KNOWN` that abort the process: run in a subprocess of their own even in-process.
ABORTS: set[str] = set()


def cli_case_id(command: Command, action: argparse.Action, label: str | None) -> str:
    name = " ".join(command.path) or "bbrl"
    key = _sweep.key_of(action)
    return f"{name} {key}" if label is None else f"{name} {key}={label}"


def _cases() -> list[Any]:
    cases = []
    for command in COMMANDS.values():
        for action in command.actions:
            labels = [(None, "")] if _sweep.is_flag(action) else list(HOSTILE)
            for label, value in labels:
                case_id = cli_case_id(command, action, label)
                marks = [pytest.mark.xfail(strict=True, reason=KNOWN[case_id])] if case_id in KNOWN else []
                cases.append(pytest.param(command.path, _sweep.key_of(action), label, value, id=case_id, marks=marks))
    return cases


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the baselines read: a tiny grid configuration, its results folder, a folder
    submitted to SLURM (dry run), a replay log, a trained agent, and a tiny stand-in for the
    shipped quick configuration (see :func:`tiny_studies`)."""
    from rich.console import Console

    from bbrl import agents, grid, replay

    folder = tmp_path_factory.mktemp("sweep-fixtures")
    (folder / "tiny.toml").write_text(TINY_GRID)
    config = grid.load_config(folder / "tiny.toml")
    grid.run_grid(config, folder / "results", threads=1, console=Console(quiet=True))
    shutil.copytree(folder / "results", folder / "submitted")  # as submitted: one array task of its cells
    (folder / "submitted" / "slurm").mkdir(exist_ok=True)
    (folder / "submitted" / "slurm" / "tasks.json").write_text(json.dumps([[c.id for c in config.cells]]))
    data = replay.Dataset.collect("SixArms", np.full((7, 6), 1 / 6), 5, seed=6)
    data.write_parquet(folder / "log.parquet")
    agents.create("random").train("GC", 0.95, 2, 0).save(folder / "agent.json")
    (folder / "shipped").mkdir()
    (folder / "shipped" / "quick.toml").write_text(TINY_GRID)
    return folder


@pytest.fixture
def case_folder(fixtures: Path, tmp_path: Path) -> Path:
    """A fresh copy of the fixtures for one case (a case may write anywhere in its folder)."""
    target = tmp_path / "case"
    shutil.copytree(fixtures, target, symlinks=True)
    return target


@pytest.fixture
def tiny_studies(fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, the study commands run tiny studies: ``paper --quick`` the tiny grid in place
    of the shipped quick.toml, ``quick`` two agents on one case, ``replay-study --quick`` a few
    logs and runs, ``regret-study`` its smoke sizes. Their options are parsed and checked as
    ever; only the work behind them shrinks (the real studies run in a subprocess case)."""
    from bbrl import agents, grid
    from bbrl.analysis import replay_study
    from bbrl.cli import quick

    shipped = grid.shipped_config

    def tiny_shipped(name: str) -> Path | None:
        return fixtures / "shipped" / "quick.toml" if name.removesuffix(".toml") == "quick" else shipped(name)

    monkeypatch.setattr(grid, "shipped_config", tiny_shipped)
    monkeypatch.setattr(quick, "quick_cases", lambda: (("GC", "GC"),))
    monkeypatch.setattr(quick, "quick_agents", lambda: (agents.Random(), agents.EGreedy(epsilon=0.1)))
    tiny = dataclasses.replace(
        replay_study.StudyConfig(),
        six_arms_logs=2,
        six_arms_samples=20,
        k=2,
        six_arms_episodes=2,
        truth_runs=4,
        river_sizes=(20,),
        river_runs=2,
        river_ks=(1,),
        max_steps=50,
    )
    monkeypatch.setattr(replay_study.StudyConfig, "quick", classmethod(lambda cls: tiny))
    monkeypatch.setenv("BBRL_SMOKE", "1")


def run_argv(argv: list[str], folder: Path, capfd: Any, monkeypatch: pytest.MonkeyPatch, isolated: bool = False):
    """Runs ``bbrl argv`` in ``folder``: in-process, or in a subprocess (``BBRL_SWEEP_SUBPROCESS``
    or ``isolated``, for a case known to abort)."""
    if SUBPROCESS or isolated:
        return _sweep.run_in_subprocess(argv, folder, env={"BBRL_SMOKE": "1"})
    monkeypatch.chdir(folder)
    return _sweep.run_in_process(argv, capfd)


# -- the command line ---------------------------------------------------------------------------


def test_every_command_has_a_valid_command_line() -> None:
    """A new command needs its tiny valid command line here before the sweep can cover it."""
    takes_something = {p for p, c in COMMANDS.items() if c.actions or c.parser.get_default("handler") is not None}
    assert takes_something <= set(BASELINES), sorted(takes_something - set(BASELINES))
    for path, baseline in BASELINES.items():
        positionals = [a for a in COMMANDS[path].actions if not a.option_strings]
        given_ = baseline[baseline.index("--") + 1 :] if "--" in baseline else []
        assert len(given_) == len(positionals), (path, [a.dest for a in positionals])


@pytest.mark.parametrize("path", [p for p in BASELINES if p], ids=" ".join)
def test_the_valid_command_lines_run(
    path: tuple[str, ...], case_folder: Path, capfd: Any, monkeypatch: pytest.MonkeyPatch, tiny_studies: None
) -> None:
    """Every baseline (and variant) runs: a case's failure is its value's."""
    lines = [BASELINES[path], *(v for (p, _), v in VARIANTS.items() if p == path)]
    for baseline in lines:
        outcome = run_argv([*path, *baseline], case_folder, capfd, monkeypatch)
        assert outcome.code == 0 and not outcome.timed_out and outcome.error is None, (
            outcome.argv,
            outcome.first_line(),
        )


def documented(path: tuple[str, ...], action: argparse.Action, label: str) -> bool:
    phrase = DOCUMENTED.get((path, _sweep.key_of(action), label))
    if phrase is None:
        return False
    assert phrase in (action.help or ""), f"{phrase!r} is not in the help of {_sweep.key_of(action)}"
    return True


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("path", "key", "label", "value"), _cases())
def test_an_option_with_a_hostile_value(
    path: tuple[str, ...],
    key: str,
    label: str | None,
    value: str,
    case_folder: Path,
    capfd: Any,
    monkeypatch: pytest.MonkeyPatch,
    tiny_studies: None,
) -> None:
    command = COMMANDS[path]
    action = next(a for a in command.actions if _sweep.key_of(a) == key)
    case_id = cli_case_id(command, action, label)
    if case_id in LONG and not SUBPROCESS:
        pytest.skip(LONG[case_id])
    argv = [*path, *_sweep.with_value(context(command, action), command, action, value)]
    outcome = run_argv(argv, case_folder, capfd, monkeypatch, isolated=case_id in ABORTS)
    nonsense = _sweep.is_numeric(action) and label in NONSENSE and not documented(path, action, label or "")
    found = _sweep.problems(outcome, _sweep.names_of(action), nonsense, long_ok=case_id in LONG)
    assert not found, f"bbrl {' '.join(argv)}: {'; '.join(found)}; first line: {outcome.first_line()}"


# -- agent parameters on the command line -------------------------------------------------------

AGENT_KINDS = {entry["kind"]: entry for entry in _core.agent_kinds()}


def _field_names(kind: str) -> dict[str, str]:
    entry = AGENT_KINDS[kind]
    return {
        p["name"]: f.name for p, f in zip(entry["params"], dataclasses.fields(bbrl.agents.kinds()[kind]), strict=True)
    }


def work_units(kind: str) -> set[str]:
    """The parameters a kind's work grows with (its registry's cost units): a huge valid value of
    one of them runs for hours."""
    entry = AGENT_KINDS[kind]
    return {name for name, _ in [*entry["online_units"], *entry["offline_units"]]}


def param_case_id(kind: str, name: str, label: str) -> str:
    return f"run --agent {kind} --param {name}={label}"


def _param_cases() -> list[Any]:
    cases = []
    for kind, entry in AGENT_KINDS.items():
        for param in entry["params"]:
            for label, value in HOSTILE:
                case_id = param_case_id(kind, param["name"], label)
                marks = [pytest.mark.xfail(strict=True, reason=KNOWN[case_id])] if case_id in KNOWN else []
                cases.append(pytest.param(kind, param["name"], label, value, id=case_id, marks=marks))
    return cases


def _param(kind: str, name: str) -> dict[str, Any]:
    return next(p for p in AGENT_KINDS[kind]["params"] if p["name"] == name)


def _nonsense(param: dict[str, Any], value: Any, label: str) -> bool:
    """Whether accepting ``value`` for registry parameter ``param`` is nonsense: a NaN, infinite or
    negative number outside its documented range."""
    if param["type"] not in ("int", "float") or label not in NONSENSE:
        return False
    return _sweep.in_documented_range(value, param) is not True


def _huge_and_long(kind: str, name: str, value: Any) -> str | None:
    """Why a huge value of a work-unit parameter is valid and runs long, or None: it is refused by
    its documented maximum or by the memory check (the registry's ``sizes_memory``)."""
    param = _param(kind, name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 10**9 or name not in work_units(kind):
        return None
    if param.get("max") is not None and value > param["max"]:
        return None
    if param.get("sizes_memory"):
        return None
    return f"{kind}'s {name} is a work unit of its registry entry: {value} of them run for hours"


def _check_agent_refuses(kind: str, params: dict[str, Any], name: str) -> bool:
    """Whether the validate-only check refuses ``params`` naming ``name`` (None: it has none)."""
    result = _sweep.call(lambda: _core.check_agent(kind, params, 5, 3, 0.95, 2))
    return result.raised is not None and result.is_documented and _sweep.names_one_of(result.message, [name])


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("kind", "name", "label", "value"), _param_cases())
def test_an_agent_parameter_with_a_hostile_value_on_the_command_line(
    kind: str,
    name: str,
    label: str,
    value: str,
    case_folder: Path,
    capfd: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``bbrl run --agent KIND --param NAME=VALUE`` (the kind's first example for the others)."""
    case_id = param_case_id(kind, name, label)
    parsed = bbrl.cli.options.parse_value(value)
    long_reason = _huge_and_long(kind, name, parsed)
    if long_reason and not SUBPROCESS:
        # Through the validate-only path first: a value it refuses is refused by the run too.
        if not hasattr(_core, "check_agent"):
            long_reason += " (no bbrl._core.check_agent to check it without running)"
        elif not _check_agent_refuses(kind, {**AGENT_KINDS[kind]["examples"][0]["params"], name: parsed}, name):
            pytest.skip(long_reason + ", and check_agent accepts it (its memory is within the limit)")
        else:
            long_reason = None
        if long_reason:
            pytest.skip(long_reason)
    example = {k: v for k, v in AGENT_KINDS[kind]["examples"][0]["params"].items() if k != name}
    fields = _field_names(kind)
    params = [f"--param={fields[k]}={v}" for k, v in example.items()]
    argv = ["run", "--experiment", "GC", "--agent", kind, *params, f"--param={name}={value}"]
    argv += ["--n-mdps", "2", "--horizon", "2", "--threads", "1"]
    outcome = run_argv(argv, case_folder, capfd, monkeypatch, isolated=case_id in ABORTS)
    nonsense = _nonsense(_param(kind, name), parsed, label)
    names = sorted({name, fields[name]})
    found = _sweep.problems(outcome, names, nonsense, long_ok=bool(long_reason))
    assert not found, f"bbrl {' '.join(argv)}: {'; '.join(found)}; first line: {outcome.first_line()}"


# -- the Python API: agents ---------------------------------------------------------------------


def api_case_id(kind: str, name: str, label: str) -> str:
    return f"agents.create({kind!r}, {name}={label})"


def _api_cases() -> list[Any]:
    cases = []
    for kind, entry in AGENT_KINDS.items():
        for param in entry["params"]:
            for label, value in HOSTILE_PY:
                case_id = api_case_id(kind, param["name"], label)
                marks = [pytest.mark.xfail(strict=True, reason=KNOWN[case_id])] if case_id in KNOWN else []
                cases.append(pytest.param(kind, param["name"], label, value, id=case_id, marks=marks))
    return cases


needs_check_agent = pytest.mark.skipif(
    not hasattr(_core, "check_agent"), reason="bbrl._core.check_agent (the validate-only memory check) is not built yet"
)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("kind", "name", "label", "value"), _api_cases())
def test_an_agent_parameter_with_a_hostile_value_in_python(kind: str, name: str, label: str, value: Any) -> None:
    """``bbrl.agents.create(kind, {field: value})`` with the kind's first example for the others,
    trained on a tiny task; a huge value of a work unit only made (and checked by check_agent)."""
    case_id = api_case_id(kind, name, label)
    params = {**AGENT_KINDS[kind]["examples"][0]["params"], name: value}
    huge = isinstance(value, int) and not isinstance(value, bool) and value >= 10**9 and name in work_units(kind)
    spec = {
        "what": "agent",
        "kind": kind,
        "params": {k: _sweep.encode(v) for k, v in params.items()},
        "build": not huge,
    }
    result = _sweep.call_in_subprocess(spec) if SUBPROCESS or case_id in ABORTS else _sweep.run_api_spec(spec)
    names = sorted({name, _field_names(kind)[name]})
    found = _sweep.call_problems(result, names, _nonsense(_param(kind, name), value, label))
    assert not found, f"{case_id}: {'; '.join(found)}; first line: {result.first_line()}"


def _memory_cases() -> list[Any]:
    return [
        pytest.param(kind, p["name"], id=f"check_agent({kind!r}, {p['name']}=10**12)")
        for kind, entry in AGENT_KINDS.items()
        for p in entry["params"]
        if p.get("sizes_memory")
    ]


@needs_check_agent
@pytest.mark.parametrize(("kind", "name"), _memory_cases() or [pytest.param(None, None, id="no-sizes-memory-yet")])
def test_a_huge_size_is_refused_by_the_memory_check_without_allocating(kind: str | None, name: str | None) -> None:
    """A parameter that sizes the agent's memory, at 10**12: check_agent refuses it, naming the
    parameter, the size and the limit (bbrl._core.memory_limit(), in bytes), without allocating."""
    if kind is None or name is None:
        pytest.skip("no registry parameter has sizes_memory yet")
    params = {**AGENT_KINDS[kind]["examples"][0]["params"], name: 10**12}
    with pytest.raises(ValueError) as refused:
        _core.check_agent(kind, params, 5, 3, 0.95, 2)
    message = str(refused.value)
    assert "\n" not in message.strip() and _sweep.names_one_of(message, [name]), message
    limit = _core.memory_limit()
    assert isinstance(limit, int) and limit > 0
    assert any(ch.isdigit() for ch in message) and "limit" in message, message


@needs_check_agent
@pytest.mark.parametrize("kind", sorted(AGENT_KINDS))
def test_check_agent_accepts_each_kinds_examples(kind: str) -> None:
    """The validate-only path passes what runs: every example setting of every kind."""
    for example in AGENT_KINDS[kind]["examples"]:
        _core.check_agent(kind, example["params"], 5, 3, 0.95, 250)


# -- the Python API: environments ---------------------------------------------------------------

ENVIRONMENTS = {entry["name"]: entry for entry in _core.environments()}


def _option(entry: dict[str, Any], option: Any) -> dict[str, Any]:
    """An environment option as a dict (the registry's typed entry, or ``{"name": ...}`` for a
    bare name)."""
    return option if isinstance(option, dict) else {"name": option}


def env_case_id(name: str, option: str, label: str) -> str:
    return f"env {name} {option}={label}"


def _env_cases() -> list[Any]:
    cases = []
    for name, entry in ENVIRONMENTS.items():
        for option in entry["options"]:
            option_name = _option(entry, option)["name"]
            for label, value in HOSTILE_PY:
                case_id = env_case_id(name, option_name, label)
                marks = [pytest.mark.xfail(strict=True, reason=KNOWN[case_id])] if case_id in KNOWN else []
                cases.append(pytest.param(name, option_name, label, value, id=case_id, marks=marks))
    return cases


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("name", "option", "label", "value"), _env_cases())
def test_an_environment_option_with_a_hostile_value(name: str, option: str, label: str, value: Any) -> None:
    """``bbrl.envs.make(name, **{option: value})`` (a continuous one: the registry's builder), and
    ``bbrl.EpisodicExperiment(name, env_options=...)`` for a finite one."""
    case_id = env_case_id(name, option, label)
    entry = ENVIRONMENTS[name]
    typed = next(_option(entry, o) for o in entry["options"] if _option(entry, o)["name"] == option)
    spec = {
        "what": "env",
        "name": name,
        "options": {option: _sweep.encode(value)},
        "experiment": entry["state_space"] == "finite",
    }
    result = _sweep.call_in_subprocess(spec) if SUBPROCESS or case_id in ABORTS else _sweep.run_api_spec(spec)
    nonsense = (
        label in NONSENSE and isinstance(value, (int, float)) and _sweep.in_documented_range(value, typed) is not True
    )
    found = _sweep.call_problems(result, [option], nonsense)
    assert not found, f"{case_id}: {'; '.join(found)}; first line: {result.first_line()}"


# -- random pairs of hostile values -------------------------------------------------------------

#: The commands of the random pairs: each runs in well under a second in-process.
CHEAP = sorted(p for p in BASELINES if p and p not in SMOKED and COMMANDS[p].actions)


def label_of(text: str) -> str:
    """The :data:`HOSTILE` label a generated value falls under (``other`` for none)."""
    for label, value in HOSTILE:
        if text == value:
            return label
    try:
        number = float(text)
    except ValueError:
        return "empty" if not text else "word"
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    if number < 0:
        return "negative"
    if number == 0:
        return "zero"
    if number >= 10**9:
        return "huge"
    return "fraction" if not number.is_integer() or "." in text else "other"


VALUES = st.one_of(
    st.sampled_from([v for _, v in HOSTILE]),
    st.integers(-3, 3).map(str),
    st.floats(-3, 3).map(repr),
    st.text(st.characters(codec="ascii", categories=["L", "N", "P"]), max_size=5),
)


@pytest.mark.timeout(600)
@settings(
    max_examples=80,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_pairs_of_hostile_values(
    data: st.DataObject, fixtures: Path, tmp_path: Path, capfd: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two options of one command given generated values at once (hostile ones, small numbers,
    short words): the outcome is as for one. A pair with a value of a failing case of
    :data:`KNOWN` or a long one of :data:`LONG` is not drawn."""
    path = data.draw(st.sampled_from(CHEAP), label="command")
    command = COMMANDS[path]
    valued = [a for a in command.actions if not _sweep.is_flag(a)]
    actions = data.draw(st.lists(st.sampled_from(valued), min_size=1, max_size=2, unique_by=id), label="options")
    argv = list(context(command, actions[0]))
    nonsense = False
    for action in actions:
        value = data.draw(VALUES, label=_sweep.key_of(action))
        label = label_of(value)
        case_id = cli_case_id(command, action, label)
        assume(case_id not in KNOWN and case_id not in LONG)
        argv = _sweep.with_value(argv, command, action, value)
        nonsense |= _sweep.is_numeric(action) and label in NONSENSE and not documented(path, action, label)
    folder = tmp_path / f"pair-{data.draw(st.integers(0, 10**9), label='folder')}"
    shutil.copytree(fixtures, folder, symlinks=True)
    outcome = run_argv([*path, *argv], folder, capfd, monkeypatch)
    names = [n for a in actions for n in _sweep.names_of(a)]
    found = _sweep.problems(outcome, names, nonsense)
    assert not found, f"bbrl {' '.join([*path, *argv])}: {'; '.join(found)}; first line: {outcome.first_line()}"
