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


def within_edits(a: str, b: str, k: int) -> int:
    """edit_distance(a, b) when it is at most k, else k + 1: only the diagonal band |i - j| <= k is
    computed, and the scan stops once a whole row is over k."""
    if abs(len(a) - len(b)) > k:
        return k + 1
    over = k + 1
    previous = [j if j <= k else over for j in range(len(b) + 1)]
    for i, ca in enumerate(a, 1):
        lo, hi = max(1, i - k), min(len(b), i + k)
        current = [over] * (len(b) + 1)
        current[0] = i if i <= k else over
        for j in range(lo, hi + 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != b[j - 1]), over)
        if min(current[lo - 1 : hi + 1]) > k:
            return over
        previous = current
    return min(previous[-1], over)


# Did-you-mean searches compare a name with every candidate: one check may make this many
# comparisons in all (a repeated name is answered from memory). Past it, findings keep their
# verdict and lose only the hint; an inventory of 100 suites affords 500 distinct unknown names.
SUGGESTION_COMPARISONS = 50_000


class NearNames:
    """Bounded, memoised did-you-mean lookups for one check (see SUGGESTION_COMPARISONS)."""

    def __init__(self, budget: int = SUGGESTION_COMPARISONS):
        self.left = budget
        self._memo: dict[tuple, object] = {}

    def lookup(self, kind: str, name: str, candidates, key, compute):
        memo_key = (kind, name, key)
        if memo_key not in self._memo:
            if len(candidates) > self.left:
                self._memo[memo_key] = compute(name, ()) if kind == "correction" else []
            else:
                self.left -= len(candidates)
                self._memo[memo_key] = compute(name, candidates)
        return self._memo[memo_key]

    def close(self, name: str, candidates, key) -> list[str]:
        return self.lookup("close", name, candidates, key, close_suites)

    def correction(self, name: str, candidates, key) -> str | None:
        # the nightly- rename needs no search: it stays offered whatever the budget
        return self.lookup("correction", name, candidates, key, lambda n, c: confident_correction(n, c) or _namespace_twin(n, candidates))


def _namespace_twin(name: str, candidates) -> str | None:
    if name.startswith(NIGHTLY_PREFIX) and name[len(NIGHTLY_PREFIX) :] in candidates:
        return name[len(NIGHTLY_PREFIX) :]
    if NIGHTLY_PREFIX + name in candidates:
        return NIGHTLY_PREFIX + name
    return None


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
    scored = sorted((d, c) for c in candidates if (d := within_edits(name, c, 2)) <= 2)
    if scored and scored[0][0] <= 2 and (len(scored) == 1 or scored[1][0] > scored[0][0]):
        return scored[0][1]
    return None
