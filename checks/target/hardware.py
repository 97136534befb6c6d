"""Which hardware model ran a job, from its runner labels through the configured label globs."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Iterable, Mapping

UNKNOWN = "unknown"
DEFAULT_MAPPING: dict[str, str] = {"mi350": "MI355X", "linux-mi35x-gpu-*": "MI355X"}


def hardware_for_labels(labels: Iterable[str] | None, mapping: Mapping[str, str] | None = None) -> str | None:
    """The hardware model the labels name, or None when none or several models match (never guessed).

    Globs (fnmatch) match case-insensitively, as GitHub matches runner labels.
    """
    rules = [(glob.lower(), model) for glob, model in (DEFAULT_MAPPING if mapping is None else mapping).items()]
    found: set[str] = set()
    for label in labels or ():
        label = str(label).strip().lower()
        for glob, model in rules:
            if fnmatchcase(label, glob):
                found.add(model)
    if len(found) == 1:
        return found.pop()
    return None


def same_hardware_key(model: str | None) -> str | None:
    """A hardware model as compared: `mi355x`, `MI355X` and ` MI355X ` are one model."""
    if model is None:
        return None
    key = str(model).strip().casefold()
    return key or None
