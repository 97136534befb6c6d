"""Suite names: what a name says about its hardware and GPU count, and near-miss corrections."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from checks.model import Backend

NIGHTLY_PREFIX = "nightly-"
_NAME = re.compile(r"^(?P<nightly>nightly-)?stage-(?P<tier>[a-z])-(?:(?P<gpus>\d+)-gpu-(?P<hw>[a-z0-9]+)|(?P<cpu>cpu))$")
_AMD_HW = re.compile(r"^mi\d")
_NVIDIA_HW = re.compile(r"^(?:[abhlv]\d+|gb\d+|h\d+)")


@dataclass(frozen=True)
class SuiteName:
    name: str
    nightly: bool
    tier: str
    gpus: int | None  # None for a -cpu suite
    hardware: str  # "cpu", "h200", "mi350" ...

    @property
    def backend_class(self) -> Backend | None:
        """The backend the hardware belongs to, when the name says so."""
        if self.hardware == "cpu":
            return Backend.CPU
        if _AMD_HW.match(self.hardware):
            return Backend.ROCM
        if _NVIDIA_HW.match(self.hardware):
            return Backend.CUDA
        return None


def parse_suite_name(name: str) -> SuiteName | None:
    match = _NAME.match(name)
    if not match:
        return None
    if match.group("cpu"):
        return SuiteName(name, bool(match.group("nightly")), match.group("tier"), None, "cpu")
    return SuiteName(name, bool(match.group("nightly")), match.group("tier"), int(match.group("gpus")), match.group("hw"))


def is_nightly(name: str) -> bool:
    return name.startswith(NIGHTLY_PREFIX)


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (suite names are short; the quadratic table is cheap)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def close_suites(name: str, candidates, n: int = 3) -> list[str]:
    """Near names, nearest first."""
    near = difflib.get_close_matches(name, sorted(candidates), n=max(n, 6), cutoff=0.75)
    return sorted(near, key=lambda c: (edit_distance(name, c), c))[:n]


def confident_correction(name: str, candidates) -> str | None:
    """A correction safe to offer as a one-click fix, or None when it would be a guess.

    Confident: the same name across the nightly- namespace boundary (the rename that breaks
    untouched files), or a single near-identical spelling (a typo).
    """
    candidates = set(candidates)
    if name.startswith(NIGHTLY_PREFIX) and name[len(NIGHTLY_PREFIX) :] in candidates:
        return name[len(NIGHTLY_PREFIX) :]
    if NIGHTLY_PREFIX + name in candidates:
        return NIGHTLY_PREFIX + name
    # A typo: one candidate strictly nearest, within two edits.
    scored = sorted((edit_distance(name, c), c) for c in candidates)
    if scored and scored[0][0] <= 2 and (len(scored) == 1 or scored[1][0] > scored[0][0]):
        return scored[0][1]
    return None
