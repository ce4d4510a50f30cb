"""Grid configuration: a TOML file of experiments and agent parameter grids, parsed, validated and
expanded into cells (experiment x agent x parameters).

A configuration::

    [defaults]              # optional: settings every experiment inherits
    n_mdps = 500
    gamma = 0.95
    horizon = 250
    seed = 0
    record_rewards = false  # true: keep every step's reward (the cumulative-regret figure)

    [[experiment]]
    name = "GC"             # experiments are identified by (name, prior)
    test = "GC"             # a built-in distribution name, a finite environment of the registry
                            # (as a distribution: docs/problems.md) or a file (relative to the config)
    prior = "UGC"           # default: the test distribution (the accurate case)

    [[agent]]
    kind = "egreedy"        # a kind of bbrl.agents.kinds()
    block = "e-Greedy"      # optional: a name for the block
    optional = false        # true: skip the block (with a notice) if this installation lacks the kind
    # kind = "python" with class = "my_agent.py:MyPSRL" (relative to this file) or "module:Class"
    # runs a Python agent (a subclass of bbrl.agents.Agent) like the built-ins
    epsilon = [0.0, 0.5, 1.0]   # a list is a grid; a scalar a single value

    [[agent]]
    kind = "baselines"      # every exploration baseline of the agent registry (episodic_baseline)
                            # that no other block names, each at its first example setting;
                            # kind = "quick": every kind `bbrl quick` runs, the same way


Every agent block is the Cartesian product of its parameter lists, the last parameter varying
fastest (as the original's Lua scripts). An OPPS-DS formula set is a shipped set number
(``formula_set = [2, 3]`` for F2 and F3) or one string of formulas separated by ``;``.

A cell's id names every parameter of the agent, defaults included, so that a result computed
before a default changed is never taken for one of the new default (see :mod:`bbrl.grid.store`
for where a cell's files live). An experiment with ``record_rewards = true`` keeps the reward of
every step in its cell files; its cells' ids (and file names) end in ``+rewards``, so that they are
never taken for cells without them. Ids and files of experiments without the option are unchanged.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from .. import _core, agents, distributions, smoke
from .. import names as name_rule
from ..fileio import read_text_file, regular_file

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from ..distributions import FDM
from .classes import load_python_agent_class
from .ids import params_id
from .model import (
    DEFAULT_KEYS,
    DEFAULTS,
    EXPERIMENT_KEYS,
    RECORDING_KEYS,
    Cell,
    ExperimentConfig,
    GridConfig,
    RecordedAgent,
)

__all__ = [
    "AGENT_RESERVED",
    "BASELINES",
    "QUICK",
    "ConfigError",
    "baseline_blocks",
    "load_config",
    "parse_config",
    "python_record",
    "registry_blocks",
]

#: Keys of an [[agent]] table that are not parameters of the agent.
AGENT_RESERVED = ("kind", "block", "optional", "class")
#: The ``kind`` of an ``[[agent]]`` table that stands for the registry's exploration baselines
#: (:func:`registry_blocks`), in the form :mod:`bbrl.names` compares names in.
BASELINES = "baselines"
#: The ``kind`` of an ``[[agent]]`` table that stands for every kind ``bbrl quick`` runs.
QUICK = "quick"
GROUPS = (BASELINES, QUICK)


class ConfigError(ValueError):
    """A configuration error; the message names the file, the line and the offending key."""


class _Lines:
    """Finds the line of a key in the TOML text, for errors tomllib cannot know about."""

    _header = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")

    def __init__(self, text: str) -> None:
        self.sections: list[tuple[tuple[Any, ...], int, int]] = []  # (path, first line, last line)
        counts: dict[str, int] = {}
        current: tuple[Any, ...] = ()
        start = 1
        lines = text.splitlines()
        for number, line in enumerate(lines, start=1):
            match = self._header.match(line)
            if match:
                self.sections.append((current, start, number - 1))
                name = match.group(2).strip().strip("\"'")
                if match.group(1) == "[[":
                    counts[name] = counts.get(name, -1) + 1
                    current = (name, counts[name])
                else:
                    current = (name,)
                start = number
        self.sections.append((current, start, len(lines)))
        self.lines = lines

    def find(self, section: tuple[Any, ...], key: str | None = None) -> int | None:
        pattern = (
            re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""") if key else None
        )
        for path, first, last in self.sections:
            if path != section:
                continue
            if pattern is None:
                return first
            for number in range(first, last + 1):
                if pattern.match(self.lines[number - 1]):
                    return number
            return first if first > 0 else None
        return None


class _Checker:
    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self.lines = _Lines(text)

    def error(self, section: tuple[Any, ...], key: str | None, message: str) -> ConfigError:
        line = self.lines.find(section, key)
        where = f"{self.source}:{line}" if line else self.source
        what = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in section).replace(".[", "[")
        if key:
            what = f"{what}.{key}" if what else key
        return ConfigError(f"{where}: {what}: {message}")


def _check_int(checker: _Checker, section: tuple[Any, ...], key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise checker.error(section, key, f"must be an integer, got {value!r}")
    if value < minimum:
        raise checker.error(section, key, f"must be >= {minimum}, got {value}")
    return value


def environment_name(value: str, base: Path | None) -> str | None:
    """The registry's name of the finite environment ``value`` names when it names no built-in
    distribution and no file (relative to ``base``): the grid then uses the environment as a
    distribution (:func:`bbrl.envs.distribution_named`, docs/problems.md)."""
    from ..envs import environment_named

    if Path(value).suffix or os.path.sep in value or (base is not None and (base / value).exists()):
        return None
    return environment_named(value)


def _distribution(checker: _Checker, section: tuple[Any, ...], key: str, value: Any, base: Path | None) -> FDM:
    if not isinstance(value, str) or not value:
        raise checker.error(
            section, key, f"must be a distribution name such as 'GC', a finite environment or a file, got {value!r}"
        )
    environment = environment_name(value, base)
    if environment is not None:
        from ..envs import distribution_named

        try:
            return distribution_named(environment)
        except (ValueError, TypeError) as exc:
            raise checker.error(section, key, str(exc)) from None
    name = value
    if distributions.builtin_name(value) is None and base is not None and not Path(value).is_absolute():
        name = str(base / value)
    try:
        return distributions.get(name)
    except (ValueError, TypeError, FileNotFoundError, OSError) as exc:
        raise checker.error(section, key, str(exc)) from None


def _record_section(section: tuple[Any, ...], raw: dict[str, Any]) -> tuple[Any, ...]:
    """The table ``record_rewards`` was read from: the experiment's own, else ``[defaults]``."""
    return section if "record_rewards" in raw else ("defaults",)


def parse_config(
    text: str,
    source: str = "<config>",
    base: Path | None = None,
    check_agents: bool = True,
    python_agents: Sequence[dict[str, Any]] | None = None,
) -> GridConfig:
    """Parses and validates a grid configuration (see the module docstring) and expands its cells.

    Args:
        text: the TOML text.
        source: the file name used in error messages.
        base: the folder relative distribution files are read from.
        check_agents: reject kinds unknown to :func:`bbrl.agents.kinds` (looked up at call time,
            so agents added later are known). With ``False`` such blocks are only expanded (their
            cells keep the parameters as given and cannot run), e.g. to count a grid or show its
            status; agents of known kinds are always built and validated.
        python_agents: ``None`` for a configuration the user names (its Python agents' classes
            are imported); else the Python agents as a results folder records them
            (:attr:`GridConfig.python_agents`): their cells get :class:`RecordedAgent` specs and no
            module is imported, whatever the text names.

    Raises:
        ConfigError: naming the file, the line and the offending key.
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: invalid TOML: {exc}") from None
    checker = _Checker(source, text)
    for key in document:
        if key not in ("defaults", "experiment", "agent"):
            raise checker.error((), key, "unknown key; expected [defaults], [[experiment]] and [[agent]] tables")
    defaults = dict(DEFAULTS)
    raw_defaults = document.get("defaults", {})
    if not isinstance(raw_defaults, dict):
        raise checker.error((), "defaults", "must be a table [defaults]")
    defaults["record_rewards"] = False
    for key, value in raw_defaults.items():
        if key not in DEFAULT_KEYS + RECORDING_KEYS:
            raise checker.error(("defaults",), key, f"unknown key; known: {', '.join(DEFAULT_KEYS + RECORDING_KEYS)}")
        defaults[key] = value

    raw_experiments = document.get("experiment")
    if not isinstance(raw_experiments, list) or not raw_experiments:
        raise checker.error((), "experiment", "the configuration needs at least one [[experiment]] table")
    experiments: list[ExperimentConfig] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_experiments):
        section = ("experiment", i)
        for key in raw:
            if key not in EXPERIMENT_KEYS + RECORDING_KEYS:
                known_keys = ", ".join(EXPERIMENT_KEYS + RECORDING_KEYS)
                raise checker.error(section, key, f"unknown key; known: {known_keys}")
        for key in ("name", "test"):
            if key not in raw:
                raise checker.error(section, None, f"missing key {key!r}")
        name = raw["name"]
        if not isinstance(name, str) or not name.strip() or "/" in name:
            raise checker.error(section, "name", f"must be a non-empty string without '/', got {name!r}")
        test_fdm = _distribution(checker, section, "test", raw["test"], base)
        prior = raw.get("prior", raw["test"])
        prior_fdm = _distribution(checker, section, "prior" if "prior" in raw else "test", prior, base)
        if (prior_fdm.n_states, prior_fdm.n_actions) != (test_fdm.n_states, test_fdm.n_actions):
            raise checker.error(
                section,
                "prior",
                f"{prior!r} has {prior_fdm.n_states} states and {prior_fdm.n_actions} actions but the test "
                f"distribution {raw['test']!r} has {test_fdm.n_states} and {test_fdm.n_actions}",
            )
        settings = {k: raw.get(k, defaults[k]) for k in DEFAULT_KEYS}
        where = {k: (section if k in raw else ("defaults",)) for k in DEFAULT_KEYS}
        n_mdps = _check_int(checker, where["n_mdps"], "n_mdps", settings["n_mdps"], 2)
        horizon = _check_int(checker, where["horizon"], "horizon", settings["horizon"], 1)
        seed = _check_int(checker, where["seed"], "seed", settings["seed"], 0)
        n_mdps, horizon = smoke.experiment_size(n_mdps, horizon)
        record_rewards = raw.get("record_rewards", defaults["record_rewards"])
        if not isinstance(record_rewards, bool):
            raise checker.error(
                _record_section(section, raw), "record_rewards", f"must be true or false, got {record_rewards!r}"
            )
        if record_rewards:
            try:
                _core.reward_buffer_entries(n_mdps, horizon)
            except ValueError as exc:
                raise checker.error(_record_section(section, raw), "record_rewards", str(exc)) from None
        gamma = settings["gamma"]
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 <= gamma < 1.0:
            raise checker.error(where["gamma"], "gamma", f"must be a number in [0, 1), got {gamma!r}")
        # A file's stem names it in cell ids (``priors/my-prior.json`` -> ``my-prior``).
        # An environment as a distribution is named by the registry's spelling of its name.
        prior_name = environment_name(prior, base) or (
            Path(prior).stem if distributions.builtin_name(prior) is None else prior
        )
        experiment = ExperimentConfig(
            name=name,
            test=raw["test"],
            prior=prior_name,
            n_mdps=n_mdps,
            gamma=float(gamma),
            horizon=horizon,
            seed=seed,
            test_fdm=test_fdm,
            prior_fdm=prior_fdm,
            record_rewards=record_rewards,
        )
        if experiment.key in seen:
            raise checker.error(section, "name", f"experiment {name!r} with prior {prior_name!r} is defined twice")
        seen[experiment.key] = i
        experiments.append(experiment)

    raw_agents = document.get("agent")
    if not isinstance(raw_agents, list) or not raw_agents:
        raise checker.error((), "agent", "the configuration needs at least one [[agent]] table")
    known = agents.kinds()
    settings_list: list[tuple[str, dict[str, Any], str, agents.AgentSpec | None]] = []
    skipped: list[str] = []
    records: list[dict[str, Any]] = []  # the Python agents' settings, as data (GridConfig.python_agents)
    ids: dict[tuple[str, str], int] = {}
    for i, raw in _expand_groups(checker, raw_agents, known):
        section = ("agent", i)
        kind = raw.get("kind")
        if not isinstance(kind, str):
            raise checker.error(
                section, "kind" if "kind" in raw else None, "every [[agent]] needs a kind, e.g. kind = 'egreedy'"
            )
        # The one name rule (bbrl.names): any spelling of a registered kind is the registry's.
        kind = name_rule.find(known, kind) or kind
        python_class = None
        is_python = name_rule.key(kind) == "python"
        reference = ""
        if is_python:
            reference = raw.get("class")
            if not isinstance(reference, str):
                raise checker.error(
                    section, "class" if "class" in raw else "kind", "a Python agent needs class = 'file.py:ClassName'"
                )
            if python_agents is None:
                try:
                    python_class = load_python_agent_class(reference, base)
                except ValueError as exc:
                    raise checker.error(section, "class", str(exc)) from None
                kind = f"python-{python_class.kind.lower()}"
            else:
                kind = _recorded_kind(checker, section, python_agents, reference)
        optional = raw.get("optional", False)
        if not isinstance(optional, bool):
            raise checker.error(section, "optional", f"must be true or false, got {optional!r}")
        if optional and kind not in known and not is_python:
            skipped.append(f"{raw['kind']} (line {checker.lines.find(section, 'kind')})")
            continue
        if check_agents and kind not in known and not is_python:
            raise checker.error(section, "kind", f"unknown agent {raw['kind']!r}; known agents: {', '.join(known)}")
        block = raw.get("block", f"{kind} #{i}")
        if not isinstance(block, str):
            raise checker.error(section, "block", f"must be a string, got {block!r}")
        names = [k for k in raw if k not in AGENT_RESERVED]
        if python_class is not None and dataclasses.is_dataclass(python_class):
            allowed = {f.name for f in dataclasses.fields(python_class) if f.init}
            for key in names:
                if key not in allowed:
                    raise checker.error(
                        section, key, f"agent {reference!r} has no such parameter; its parameters: {sorted(allowed)}"
                    )
        if kind in known:
            allowed = {f.name for f in fields(known[kind])}
            for key in names:
                if key not in allowed:
                    raise checker.error(
                        section, key, f"agent {kind!r} has no such parameter; its parameters: {sorted(allowed)}"
                    )
        values = []
        for key in names:
            value = raw[key]
            if isinstance(value, list):
                if not value:
                    raise checker.error(section, key, "an empty list gives no settings")
                values.append(value)
            elif isinstance(value, dict):
                raise checker.error(section, key, "a parameter is a value or a list of values, not a table")
            else:
                values.append([value])
        for combination in itertools.product(*values):
            params = dict(zip(names, combination, strict=True))
            spec: Any = None
            if python_class is not None:
                try:
                    spec = python_class(**params)
                except (ValueError, TypeError) as exc:
                    raise checker.error(section, None, f"{exc} (setting {params})") from None
                records.append(python_record(reference, kind, params, spec))
            elif is_python:
                spec = _recorded_spec(checker, section, python_agents or (), reference, params)
            elif kind in known:
                try:
                    spec = agents.create(kind, params)
                except (ValueError, TypeError) as exc:
                    bad = next((k for k in names if k in str(exc)), None)
                    raise checker.error(section, bad, f"{exc} (setting {params})") from None
            key = (kind, params_id(spec, params))
            if key in ids:
                raise checker.error(
                    section, None, f"setting {params} of agent {kind!r} repeats one of block #{ids[key]}"
                )
            ids[key] = i
            settings_list.append((kind, params, block, spec))
    cells = [
        Cell(index=0, experiment=e, kind=k, params=p, block=b, spec=s)
        for e in experiments
        for (k, p, b, s) in settings_list
    ]
    cells = [
        Cell(index=n, experiment=c.experiment, kind=c.kind, params=c.params, block=c.block, spec=c.spec)
        for n, c in enumerate(cells)
    ]
    return GridConfig(
        path=None,
        text=text,
        experiments=tuple(experiments),
        cells=tuple(cells),
        skipped_agents=tuple(skipped),
        base=base,
        python_agents=tuple(records) if python_agents is None else tuple(python_agents),
    )


def registry_blocks(group: str, named: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The ``[[agent]]`` tables a ``kind = "baselines"`` or ``kind = "quick"`` block (``group``)
    stands for: one per kind of the agent registry in the group and not in ``named`` (kinds other
    blocks of the configuration name), in the registry's order, each at its first example setting
    (the one that runs in seconds), its block the kind's display name. ``baselines``: the kinds that
    declare themselves exploration baselines (``episodic_baseline``, docs/baselines.md); ``quick``:
    every kind ``bbrl quick`` runs (the built-ins and the baselines). A kind registered later joins
    every configuration with such a block."""
    from ..agents import registry

    kinds = registry.baseline_kinds() if group == BASELINES else registry.quick_kinds()
    return [
        {"kind": kind, "block": registry.spec(kind)["display"], **registry.example_params(kind)}
        for kind in kinds
        if kind not in named
    ]


def baseline_blocks(named: Sequence[str] = ()) -> list[dict[str, Any]]:
    """:func:`registry_blocks` of the exploration baselines."""
    return registry_blocks(BASELINES, named)


def _expand_groups(checker: _Checker, raw_agents: list[Any], known: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The ``[[agent]]`` tables with their index (errors name the table of the file), a
    ``kind = "baselines"`` or ``"quick"`` table replaced by :func:`registry_blocks` (the kinds named
    by the other tables left out, so that a grid can give such a kind settings of its own)."""
    # Only string kinds can name one; any other value is refused, naming its table, further on.
    named = [
        name_rule.find(known, r["kind"]) for r in raw_agents if isinstance(r, dict) and isinstance(r.get("kind"), str)
    ]
    expanded: list[tuple[int, dict[str, Any]]] = []
    for i, raw in enumerate(raw_agents):
        group = name_rule.key(raw["kind"]) if isinstance(raw, dict) and isinstance(raw.get("kind"), str) else None
        if group not in GROUPS:
            expanded.append((i, raw))
            continue
        extra = [k for k in raw if k != "kind"]
        if extra:
            raise checker.error(
                ("agent", i),
                extra[0],
                f'a kind = "{group}" block takes no other key (each of its kinds runs its first '
                "example setting; give a kind a block of its own for other settings)",
            )
        expanded += [(i, block) for block in registry_blocks(group, [n for n in named if n is not None])]
    return expanded


def python_record(reference: str, kind: str, params: dict[str, Any], spec: Any) -> dict[str, Any]:
    """A Python agent's setting as a results folder records it: what reading the folder needs
    (the cell's kind, id and label) without importing the class."""
    from ..agents.file_format import jsonable

    return {
        "class": reference,
        "kind": kind,
        "display": type(spec).display,
        "params": jsonable(params),
        "params_id": params_id(spec, params),
        "label": spec.label,
        "agent_params": jsonable(spec.params),
    }


def _recorded_kind(checker: _Checker, section: tuple[Any, ...], records: Sequence[Any], reference: str) -> str:
    for record in records:
        if isinstance(record, dict) and record.get("class") == reference and isinstance(record.get("kind"), str):
            return record["kind"]
    raise checker.error(
        section,
        "class",
        f"the folder does not record the Python agent {reference!r} as data (source.json), and reading a results "
        "folder never imports a class it names: run the configuration again (bbrl grid run CONFIG --out DIR) to "
        "record it, or name the configuration (bbrl grid status CONFIG --out DIR)",
    )


def _recorded_spec(
    checker: _Checker, section: tuple[Any, ...], records: Sequence[Any], reference: str, params: dict[str, Any]
) -> RecordedAgent:
    from ..agents.file_format import jsonable

    wanted = jsonable(params)
    for record in records:
        if isinstance(record, dict) and record.get("class") == reference and record.get("params") == wanted:
            try:
                return RecordedAgent.from_record(record)
            except (KeyError, TypeError, ValueError) as exc:
                raise checker.error(
                    section, "class", f"the folder's record of {reference!r} is damaged: {exc}"
                ) from None
    raise checker.error(
        section, None, f"the folder does not record setting {params} of the Python agent {reference!r} (source.json)"
    )


def load_config(
    path: str | os.PathLike[str],
    check_agents: bool = True,
    base: str | os.PathLike[str] | None = None,
    python_agents: Sequence[dict[str, Any]] | None = None,
) -> GridConfig:
    """Reads and validates a grid configuration file (see :func:`parse_config`).

    ``base``: the folder its relative files are read from (default: the file's folder); the copy an
    output folder keeps is read with the folder of the configuration it was copied from, and with
    ``python_agents``, its record of its Python agents (never importing them).
    """
    file = regular_file(path, "configuration")
    text = read_text_file(file, "configuration")
    folder = Path(base) if base is not None else file.resolve().parent
    config = parse_config(text, str(file), folder, check_agents, python_agents)
    return dataclasses.replace(config, path=file)
