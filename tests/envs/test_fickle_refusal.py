"""Importing Gymnasium's fickle Taxi is refused, and the refusal says what P does not list: the
passenger's destination, changed inside step()."""

from __future__ import annotations

import pytest

from bbrl import envs

gym = pytest.importorskip("gymnasium")


def test_the_refusal_of_the_fickle_taxi_says_the_destination_changed() -> None:
    with pytest.raises(ValueError) as info:
        envs.from_gymnasium(gym.make("Taxi-v4", fickle_passenger=True), checks=200)
    message = str(info.value)
    assert message.startswith("Taxi-v4: step() from state "), message
    assert "the simulator does more than its tables say: state " in message, message
    assert message.endswith("): step() changed the passenger's destination (Taxi's fickle passenger)"), message
    assert "\n" not in message
    # The destinations are named by Gymnasium's landmarks, the new one first.
    destinations = message.split("with another destination (")[1].split(")")[0]
    new, old = destinations.split(", not ")
    assert {new, old} <= set("RGYB") and new != old, message


def test_the_fickle_taxi_of_the_registry_says_the_destination_changes() -> None:
    summary = envs.registry.entry("Taxi-Fickle")["summary"]
    assert "change destination" in summary, summary
