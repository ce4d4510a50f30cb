"""BBRL_SMOKE: long commands at tiny sizes (how the documentation's long examples are tested)."""

from __future__ import annotations

import pytest

from bbrl import smoke
from bbrl.grid.config import parse_config

CONFIG = """
[[experiment]]
name = "GC"
test = "GC"
n_mdps = 500
horizon = 250

[[agent]]
kind = "random"
"""


@pytest.mark.parametrize("value", ["", "0", "false", "no"])
def test_sizes_are_unchanged_unless_asked(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(smoke.ENV, value)
    assert not smoke.active()
    assert smoke.experiment_size(500, 250) == (500, 250)
    assert smoke.value_error_states(None) is None and smoke.value_error_states(100) == 100
    experiment = parse_config(CONFIG).experiments[0]
    assert (experiment.n_mdps, experiment.horizon) == (500, 250)


def test_smoke_caps_grids_and_value_error_states_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(smoke.ENV, "1")
    monkeypatch.setattr(smoke, "_told", False)
    assert smoke.active()
    experiment = parse_config(CONFIG).experiments[0]
    assert (experiment.n_mdps, experiment.horizon) == (smoke.N_MDPS, smoke.HORIZON)
    # Sizes already smaller stay as they are.
    assert smoke.experiment_size(2, 5) == (2, 5)
    assert smoke.value_error_states(None) == smoke.VALUE_ERROR_STATES
    assert smoke.value_error_states(1) == 1
    err = capsys.readouterr().err
    assert err.count(smoke.ENV) == 1 and "mean nothing" in err
