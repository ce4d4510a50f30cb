"""``bbrl agents`` and ``bbrl distributions``: what is built in."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
from typing import Any

from rich.console import Console

from .. import agents, distributions

__all__ = ["describe_agent", "register"]


def register(commands: Any) -> None:
    """Adds ``agents`` and ``distributions`` to the CLI's subcommands."""
    commands.add_parser("agents", help="list the agents, their parameters, defaults and ranges").set_defaults(
        handler=_command_agents
    )
    commands.add_parser("distributions", help="list the built-in distributions").set_defaults(
        handler=_command_distributions
    )


def describe_agent(cls: type) -> tuple[str, list[str]]:
    """The description of an agent class (its docstring up to ``Args:``, on one line) and one line
    per parameter: name, default (or "required") and the docstring's words on it (its range)."""
    doc = inspect.getdoc(cls) or ""
    text, _, args_text = doc.partition("Args:")
    # The docstrings cite sections of a specification that is not part of the package.
    summary = re.sub(r"\s*\(SPEC [0-9.]+\)|;\s*SPEC [0-9.]+", "", " ".join(text.split()))
    explained: dict[str, str] = {}
    current = None
    for line in args_text.splitlines():
        stripped = line.strip()
        name, sep, rest = stripped.partition(":")
        if sep and name.isidentifier() and line.startswith("    ") and not line.startswith("     "):
            current = name
            explained[name] = rest.strip()
        elif current and stripped:
            explained[current] += " " + stripped
    lines = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f"default {f.default!r}"
        elif f.default_factory is not dataclasses.MISSING:
            default = f"default {f.default_factory()!r}"
        else:
            default = "required"
        lines.append(f"{f.name} ({default}): {explained.get(f.name, '')}".rstrip(": "))
    return summary, lines


def _command_agents(args: argparse.Namespace, console: Console) -> int:
    for name, cls in agents.kinds().items():
        summary, parameters = describe_agent(cls)
        console.print(f"[bold]{name}[/bold]: {cls.display}. {summary}", highlight=False)
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
