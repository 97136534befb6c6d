"""Shards predicted the way the runner splits a suite, and est_times that rebalance an overloaded one.

Both targets' runners split a suite over `--auto-partition-size` jobs with the same greedy
longest-processing-time heuristic (`auto_partition` in radixark/miles' tests/ci/run_suite.py and in
sgl-project/sglang's python/sglang/test/ci/ci_register.py): files sorted by est_time, longest
first, ties by file name; each goes to the partition with the smallest est_time sum so far, the
lowest partition id among equals. The partition is decided by est_time alone; how long a shard
then runs is the sum of its files' real durations. An est_time far from the real duration can so
put the two slowest files in one shard (sglang's stage-c-test-large-8-gpu-amd-mi35x in June 2026:
every heavy file at est_time=3600, one shard 52-68 min against a 60 min timeout, the other 17).

Pure: est_times and measured seconds arrive as numbers.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Mapping, Sequence


@dataclass(frozen=True)
class Item:
    file: str
    est_time: float  # what the runner partitions by
    seconds: float  # the predicted wall time: a measured statistic, else est_time
    measured: bool = False


@dataclass(frozen=True)
class Shard:
    index: int  # the runner's 0-based --auto-partition-id
    files: tuple[str, ...]
    est_total: float
    predicted: float  # sum of the files' predicted seconds


def partition(items: Sequence[Item], size: int) -> list[Shard]:
    """The runner's auto_partition for every rank at once."""
    # A heap of (sum, index) pops the smallest sum, the lowest index among equals: the runner's
    # `min(range(size), key=sums.__getitem__)`. Shards past the number of files stay empty, so
    # only that many are kept and the cost does not grow with the shard count.
    used = max(min(int(size), len(items)), 1)
    files: list[list[Item]] = [[] for _ in range(used)]
    heap = [(0.0, k) for k in range(used)]
    for item in sorted(items, key=lambda i: (-i.est_time, i.file)):
        total, k = heapq.heappop(heap)
        files[k].append(item)
        heapq.heappush(heap, (total + item.est_time, k))
    sums = {k: total for total, k in heap}
    return [Shard(k, tuple(i.file for i in files[k]), sums[k], sum(i.seconds for i in files[k])) for k in range(used)]


def heaviest(shards: Sequence[Shard]) -> Shard:
    return max(shards, key=lambda s: (s.predicted, -s.index))


@dataclass(frozen=True)
class Rebalance:
    est_times: dict[str, float]  # file -> proposed est_time (only those that change)
    shards: list[Shard]  # the partition those est_times give, with predicted times

    @property
    def fits(self) -> bool:
        return bool(self.shards)


def rebalance(items: Sequence[Item], size: int, timeout_s: float, proposals: Mapping[str, float]) -> Rebalance | None:
    """est_times that bring every predicted shard under timeout_s, or None when none do.

    First the calibration's own proposals (checks/calibration/policy.py) for the files that have them;
    the runner then partitions by numbers close to the real durations. Where that still leaves
    a shard over the timeout, no est_time can help (LPT on true durations is within 4/3 of the
    best split): the caller says more shards or a longer timeout are needed.
    """
    moved = [Item(i.file, proposals.get(i.file, i.est_time), i.seconds, i.measured) for i in items]
    shards = partition(moved, size)
    if heaviest(shards).predicted > timeout_s:
        return None
    changed = {i.file: proposals[i.file] for i in items if i.file in proposals and proposals[i.file] != i.est_time}
    return Rebalance(changed, shards)


def shards_needed(items: Sequence[Item], timeout_s: float, proposals: Mapping[str, float], limit: int = 64) -> int | None:
    """The fewest shards whose predicted heaviest fits timeout_s with the proposed est_times."""
    moved = [Item(i.file, proposals.get(i.file, i.est_time), i.seconds, i.measured) for i in items]
    if any(i.seconds > timeout_s for i in moved):
        return None  # one file alone is longer than the job
    for size in range(1, limit + 1):
        if heaviest(partition(moved, size)).predicted <= timeout_s:
            return size
    return None


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min"


def shard_totals(est_times: list[tuple[str, float]], shards: int) -> list[float]:
    """The runner's split of est_times alone: each shard's est_time sum, largest first."""
    return sorted((s.est_total for s in partition([Item(f, e, e) for f, e in est_times], shards)), reverse=True)
