"""checks/calibration/shards.py on its own: how the runner splits a suite's files over its shards."""

from __future__ import annotations

from checks.calibration.shards import shard_totals


def test_shard_totals_are_the_runners_split_largest_first():
    # LPT by est_time: 50 -> shard 0, 40 -> shard 1, 30 -> shard 1 (40 < 50), 20 -> shard 0
    assert shard_totals([("a", 50), ("b", 40), ("c", 30), ("d", 20)], 2) == [70, 70]
    assert shard_totals([("a", 50), ("b", 10), ("c", 5)], 2) == [50, 15]
    assert shard_totals([("a", 5)], 3) == [5]  # shards past the number of files stay empty, not kept
