"""``bbrl agents``, ``bbrl distributions`` and ``bbrl envs``: what is built in."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

from .convert import add_convert

__all__ = ["PYTHON_KIND", "describe_agent", "plain_text", "register"]

#: The ``python`` kind of a grid configuration: an agent written in Python, listed by ``bbrl agents``.
PYTHON_KIND = (
    "python: an agent written in Python (a subclass of bbrl.agents.Agent). In a grid configuration: "
    'kind = "python" and class = "file.py:ClassName" (the file relative to the configuration) or '
    '"module:ClassName"; the other keys of the [[agent]] block are its dataclass fields, as for a built-in. '
    'In Python: bbrl.Experiment("GC").run(MyAgent(), prior="UGC"). How to write one: docs/adding-an-agent.md '
    "of the source repository."
)


def plain_text(text: str) -> str:
    """A docstring's reStructuredText as plain text: ``:class:`~bbrl.Run``` as ``Run``,
    ``:func:`bbrl.envs.make``` as ``bbrl.envs.make``, double backquotes as nothing."""
    text = re.sub(
        r":[a-z]+:`~?([^`]*?)`", lambda m: m.group(1).rpartition(".")[2] if "~" in m.group(0) else m.group(1), text
    )
    return text.replace("``", "").replace("`", "")


def register(commands: Any) -> None:
    """Adds ``agents``, ``distributions`` and ``envs`` to the CLI's subcommands."""
    listing = commands.add_parser("agents", help="list the agents, their parameters, defaults and ranges")
    listing.set_defaults(handler=_command_agents)
    add_convert(listing.add_subparsers(dest="agents_action", metavar="ACTION", required=False))
    commands.add_parser("distributions", help="list the built-in distributions").set_defaults(
        handler=_command_distributions
    )
    envs_parser = commands.add_parser(
        "envs",
        help="list the problems: the distributions and the named environments, with the hardness measures of the "
        "finite ones",
    )
    envs_parser.add_argument(
        "--no-hardness",
        dest="hardness",
        action="store_false",
        help="skip the hardness measures (about a second of CPU for the Taxi variants together)",
    )
    envs_parser.set_defaults(handler=_command_envs)


def describe_agent(kind: str) -> tuple[str, list[str]]:
    """The description of an agent kind (its record's docstring up to ``Args:``, on one line) and
    one line per parameter from the core's registry: name, type, default (or "required"), range
    and what it is."""
    from .. import agents

    cls = agents.kinds()[kind]
    text = (inspect.getdoc(cls) or "").partition("Args:")[0]
    # The docstrings cite sections of a specification that is not part of the package.
    summary = plain_text(re.sub(r"\s*\(SPEC [0-9.]+\)|;\s*SPEC [0-9.]+", "", " ".join(text.split())))
    lines = []
    # Named as --param and a grid spell them: the record's fields, the registry's parameters in its
    # order (OPPS-DS's formula_set is the core's "formulas").
    for field, param in zip(dataclasses.fields(cls), agents.spec(kind)["params"], strict=True):
        default = "required" if param["required"] else f"default {param['default']!r}"
        lines.append(plain_text(f"{field.name} ({param['type']}, {default}; {param['range']}): {param['doc']}"))
    return summary, lines


def _command_agents(args: argparse.Namespace, console: Console) -> int:
    from .. import agents

    for kind, cls in agents.kinds().items():
        summary, parameters = describe_agent(kind)
        console.print(f"[bold]{kind}[/bold]: ", end="", highlight=False)
        console.print(f"{cls.display}. {summary}", highlight=False, markup=False)
        if not parameters:
            console.print("    no parameters", highlight=False)
        for parameter in parameters:
            console.print(f"    {parameter}", highlight=False, markup=False)
        for index, example in enumerate(agents.spec(kind)["examples"]):
            setting = ", ".join(f"{k}={v!r}" for k, v in agents.registry.example_params(kind, index).items())
            console.print(f"    example ({example['doc']}): {setting or 'the defaults'}", highlight=False, markup=False)
    name, _, text = PYTHON_KIND.partition(": ")
    console.print(f"[bold]{name}[/bold]: ", end="", highlight=False)
    console.print(text, highlight=False, markup=False)
    return 0


def _command_distributions(args: argparse.Namespace, console: Console) -> int:
    from .. import distributions

    for name in distributions.names():
        fdm = distributions.get(name)
        console.print(f"[bold]{name}[/bold]: {fdm.long_name}, S={fdm.n_states}, A={fdm.n_actions}")
    return 0


#: A start law with more states than this is summarised (Taxi's spans hundreds).
_LAW_SHOWN = 8


def _start(start: dict[str, Any]) -> str:
    if start["kind"] == "state":
        return f"state {start['state']}"
    if start["kind"] == "law":
        support = {s: p for s, p in enumerate(start["probabilities"]) if p > 0}
        if len(support) <= _LAW_SHOWN:
            return "law " + ", ".join(f"{p:g} on {s}" for s, p in support.items())
        same = "uniform " if len(set(support.values())) == 1 else ""
        return f"law {same}over {len(support)} states, {min(support)} to {max(support)}"
    return "uniform" if start["kind"] == "uniform" else "the simulator's reset"


def _command_envs(args: argparse.Namespace, console: Console) -> int:
    from .. import envs, problems
    from ..envs import registry

    # Every problem of the registry: the distributions, then every environment (each is a problem).
    for problem in problems.REGISTRY:
        low, high = problem["reward_range"]
        facts = (
            f"rewards in [{low:g}, {high:g}], horizon {problem['horizon'] or 'none'}, start {_start(problem['start'])}"
        )
        if problem["source"] == "distribution":
            where = f"priors {', '.join(problem['priors'])}"
        else:
            entry = registry.entry(problem["name"])
            options = ", ".join(option["name"] for option in entry["options"])
            where = f"{entry['state_space']}, discount {entry['default_discount']}; options: {options}"
            if entry["default_policy"] is not None:
                policy = entry["default_policy"]
                share = f" ({policy['random_share']:g} random)" if "random_share" in policy else ""
                where += f"; default policy {policy['kind']}{share}"
        console.print(
            f"[bold]{problem['name']}[/bold] ({problem['long_name']}): {problem['summary']}; {facts}; {where}",
            highlight=False,
        )
        if args.hardness and problem["source"] != "distribution" and entry["state_space"] == "finite":
            console.print(f"    hardness: {_hardness_line(envs.make(entry['name']).hardness())}", highlight=False)
    return 0


def _hardness_line(h: dict[str, float]) -> str:
    """The measures of :meth:`bbrl.envs.FiniteEnv.hardness` on one line."""
    return (
        f"diameter {h['diameter']:.6g}, gap sum {h['gap_sum']:.6g} (Colosseum's {h['gap_sum_colosseum']:.6g}), "
        f"value norm {h['value_norm']:.6g} (Colosseum's {h['value_norm_colosseum']:.6g}); "
        f"{h['n_states']} reachable states, gamma {h['discount']}"
    )
