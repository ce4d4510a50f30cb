"""Errors of agent files that name the problem: a file missing a field names the file and the field."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bbrl import agents


def _drop(document: Any, key: str) -> bool:
    """Removes the first ``key`` found in the document (depth first); whether there was one."""
    if isinstance(document, dict):
        if key in document:
            del document[key]
            return True
        return any(_drop(value, key) for value in document.values())
    if isinstance(document, list):
        return any(_drop(value, key) for value in document)
    return False


def test_an_agent_file_missing_its_params_names_the_file_and_the_field(tmp_path: Path) -> None:
    # Before: "malformed agent file: 'params'" (a KeyError's text), which did not say it was missing.
    path = tmp_path / "agent.json"
    agents.EGreedy(0.1).train("GC", 0.95, 20, 0).save(path)
    document = json.loads(path.read_text())
    assert _drop(document, "params")
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError) as raised:
        agents.load(path)
    message = str(raised.value)
    assert str(path) in message, message
    assert re.search(r"\bmissing\b.*\bparams\b|\bparams\b.*\bmissing\b", message), message
