"""``bbrl agents``, ``bbrl distributions`` and ``bbrl envs``: what is built in."""

from __future__ import annotations

import argparse
import inspect
import re
from typing import Any

from rich.console import Console

from .. import agents, distributions
from ..envs import registry

__all__ = ["describe_agent", "register"]


def register(commands: Any) -> None:
    """Adds ``agents``, ``distributions`` and ``envs`` to the CLI's subcommands."""
    commands.add_parser("agents", help="list the agents, their parameters, defaults and ranges").set_defaults(
        handler=_command_agents
    )
    commands.add_parser("distributions", help="list the built-in distributions").set_defaults(
        handler=_command_distributions
    )
    commands.add_parser("envs", help="list the named environments and their options").set_defaults(
        handler=_command_envs
    )


def describe_agent(kind: str) -> tuple[str, list[str]]:
    """The description of an agent kind (its record's docstring up to ``Args:``, on one line) and
    one line per parameter from the core's registry: name, type, default (or "required"), range
    and what it is."""
    cls = agents.kinds()[kind]
    text = (inspect.getdoc(cls) or "").partition("Args:")[0]
    # The docstrings cite sections of a specification that is not part of the package.
    summary = re.sub(r"\s*\(SPEC [0-9.]+\)|;\s*SPEC [0-9.]+", "", " ".join(text.split()))
    lines = []
    for param in agents.spec(kind)["params"]:
        default = "required" if param["required"] else f"default {param['default']!r}"
        lines.append(f"{param['name']} ({param['type']}, {default}; {param['range']}): {param['doc']}")
    return summary, lines


def _command_agents(args: argparse.Namespace, console: Console) -> int:
    for kind, cls in agents.kinds().items():
        summary, parameters = describe_agent(kind)
        console.print(f"[bold]{kind}[/bold]: {cls.display}. {summary}", highlight=False)
        if not parameters:
            console.print("    no parameters", highlight=False)
        for parameter in parameters:
            console.print(f"    {parameter}", highlight=False, markup=False)
    return 0


def _command_distributions(args: argparse.Namespace, console: Console) -> int:
    for name in distributions.names():
        fdm = distributions.get(name)
        console.print(f"[bold]{name}[/bold]: {fdm.long_name}, S={fdm.n_states}, A={fdm.n_actions}")
    return 0


def _command_envs(args: argparse.Namespace, console: Console) -> int:
    for entry in registry.REGISTRY:
        console.print(
            f"[bold]{entry['name']}[/bold] ({entry['state_space']}, discount {entry['default_discount']}): "
            f"{entry['summary']}; options: {', '.join(entry['options'])}",
            highlight=False,
        )
    return 0
