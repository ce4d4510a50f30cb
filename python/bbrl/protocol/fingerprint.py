"""Fingerprints: a short, stable name for the content of a JSON document, and the one rule that
names an experiment's test MDPs by it.

A fingerprint is the first 16 hex digits of the SHA-256 of the document's canonical JSON (keys
sorted, no spaces, ASCII, floats in Python's shortest round-trip spelling): the same document
gives the same fingerprint on every machine and version, and any change of a value changes it.

An experiment's fingerprint is that of its test distribution's content (the Dirichlet counts, the
rewards and the start state; not its names, which do not change the MDPs) together with N, gamma,
T and the seed: two runs with the same fingerprint ran on the same test MDPs under the same
protocol, so their returns pair MDP by MDP.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["FINGERPRINT_HEX_DIGITS", "document_fingerprint", "experiment_fingerprint"]

#: Hex digits kept of the SHA-256 (64 bits: no accidental collision among any realistic number of
#: experiments, short enough to read in a message).
FINGERPRINT_HEX_DIGITS = 16

#: The keys of a distribution's document that name it without changing its MDPs.
_NAME_KEYS = ("name", "long_name")


def document_fingerprint(document: Any) -> str:
    """The fingerprint of a JSON-serialisable document (dicts, lists, strings, numbers, bools,
    None): 16 hex digits.

    Raises:
        ValueError: the document holds a value JSON cannot represent exactly (NaN, infinity) or
            a type JSON does not have.
    """
    try:
        text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot fingerprint the document: {exc}") from None
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:FINGERPRINT_HEX_DIGITS]


def experiment_fingerprint(test_document: dict[str, Any], n_mdps: int, gamma: float, horizon: int, seed: int) -> str:
    """The fingerprint of an experiment: its test distribution's document (as
    :meth:`bbrl.distributions.FDM.to_document` gives it, names left out) with the number of test
    MDPs ``n_mdps``, the discount ``gamma``, the horizon ``horizon`` (decisions per trajectory) and
    the ``seed``."""
    content = {k: v for k, v in test_document.items() if k not in _NAME_KEYS}
    return document_fingerprint(
        {"test": content, "n_mdps": int(n_mdps), "gamma": float(gamma), "horizon": int(horizon), "seed": int(seed)}
    )
