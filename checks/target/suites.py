"""Suite names: what a name says about its hardware and GPU count, and near-miss corrections."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from checks.model import Backend

NIGHTLY_PREFIX = "nightly-"
# Whole names (fullmatch) and hardware prefixes (match): no anchors needed.
_NAME = re.compile(r"(?P<nightly>nightly-)?stage-(?P<tier>[a-z])-(?:(?P<gpus>\d+)-gpu-(?P<hw>[a-z0-9]+)|(?P<cpu>cpu))")
_AMD_HW = re.compile(r"mi\d")
_NVIDIA_HW = re.compile(r"[abhlv]\d+|gb\d+")


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
    match = _NAME.fullmatch(name)
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
        self.refused = 0  # lookups answered without a search (past the budget)
        self._refused_keys: set[tuple] = set()
        self._memo: dict[tuple, object] = {}

    def lookup(self, kind: str, name: str, candidates, key, compute):
        memo_key = (kind, name, key)
        if memo_key not in self._memo:
            if len(candidates) > self.left:
                self._refused_keys.add(memo_key)
                self._memo[memo_key] = compute(name, ()) if kind == "correction" else []
            else:
                self.left -= len(candidates)
                self._memo[memo_key] = compute(name, candidates)
        if memo_key in self._refused_keys:
            self.refused += 1  # this answer lacks its search (a scan cache must not keep it)
        return self._memo[memo_key]

    def close(self, name: str, candidates, key, keep=None) -> list[str]:
        """Near names among `candidates`; `keep(name, candidates)` narrows them first (inside the
        budget), e.g. HardwareIndex.same_hardware."""
        return self.lookup("close", name, candidates, key, lambda n, c: close_suites(n, keep(n, c) if keep and c else c))

    def correction(self, name: str, candidates, key, keep=None) -> str | None:
        # the nightly- rename needs no search: it stays offered whatever the budget
        return self.lookup(
            "correction", name, candidates, key,
            lambda n, c: confident_correction(n, keep(n, c) if keep and c else c) or _namespace_twin(n, candidates),
        )


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
    if scored and (len(scored) == 1 or scored[1][0] > scored[0][0]):
        return scored[0][1]
    return None


# -- hardware a suite name claims ---------------------------------------------------------------
# A did-you-mean or a fix never moves a registration to other hardware: a suite name's GPU count
# (`-8-gpu-`, `-2-npu-`) and hardware tokens (`h200`, `mi350`, `b200`, `cpu`, `amd`, `small`,
# `large` ...) must be the candidate's too. A token of the typed name that is no known hardware
# model and appears in no inventory name (`mi35`, `smal`) is taken for a typo: the candidate may
# state a hardware token there that is within two edits of it (`mi350`, `small`).

_DEVICES = {"gpu": "gpu", "gpus": "gpu", "npu": "npu", "npus": "npu"}
_MODEL = re.compile(r"mi\d+[a-z]*|gb\d+[a-z]*|[abhlvt]\d{1,4}[a-z]*|rtx\d+[a-z]*|\d{4}[a-z]*")
HARDWARE_CLASSES = frozenset({"cpu", "amd", "nvidia", "intel", "xpu", "musa", "mlx", "ascend", "small", "large"})
# Real accelerator models (a name naming one claims that hardware even when no inventory lists it).
KNOWN_MODELS = frozenset({
    "v100", "t4", "a10", "a10g", "a30", "a40", "a100", "a800", "l4", "l20", "l40", "l40s",
    "h20", "h100", "h200", "h800", "h20e", "b100", "b200", "b300", "gb200", "gb300", "rtx4090", "rtx5090", "5090", "4090",
    "mi100", "mi200", "mi210", "mi250", "mi250x", "mi300", "mi300a", "mi300x", "mi308", "mi308x", "mi30x",
    "mi325", "mi325x", "mi350", "mi350x", "mi355", "mi355x", "mi35x", "mi400", "mi450",
    "a2", "a3", "910b",
})


@dataclass(frozen=True)
class HardwareClaim:
    count: tuple[int, str] | None  # (8, "gpu") for `-8-gpu-`
    hardware: frozenset[str]  # the hardware tokens the name states
    typos: tuple[str, ...]  # tokens that are neither hardware nor any inventory name's word


class HardwareIndex:
    """What suite names claim about hardware, read against one inventory's vocabulary."""

    def __init__(self, inventory_names):
        self.vocabulary = {t for n in inventory_names for t in n.split("-")}
        self.models = KNOWN_MODELS | {t for t in self.vocabulary if _MODEL.fullmatch(t)}
        self._memo: dict[str, HardwareClaim] = {}

    def claim(self, name: str) -> HardwareClaim:
        found = self._memo.get(name)
        if found is None:
            tokens = name.split("-")
            count = None
            hardware, typos = set(), []
            for i, tok in enumerate(tokens):
                if tok.isdigit() and i + 1 < len(tokens) and tokens[i + 1] in _DEVICES:
                    count = (int(tok), _DEVICES[tokens[i + 1]])
                elif tok in self.models or tok in HARDWARE_CLASSES:
                    hardware.add(tok)
                elif tok not in self.vocabulary and tok not in _DEVICES and not tok.isdigit():
                    typos.append(tok)
            found = self._memo[name] = HardwareClaim(count, frozenset(hardware), tuple(typos))
        return found

    def compatible(self, name: str, candidate: str) -> bool:
        """`candidate` keeps the GPU count and hardware `name` states."""
        a, b = self.claim(name), self.claim(candidate)
        if a.count != b.count or not a.hardware <= b.hardware:
            return False
        extra = b.hardware - a.hardware  # allowed only as the correction of a misspelt token
        return len(extra) <= len(a.typos) and all(any(within_edits(t, x, 2) <= 2 for t in a.typos) for x in extra)

    def same_hardware(self, name: str, candidates) -> set[str]:
        return {c for c in candidates if self.compatible(name, c)}
