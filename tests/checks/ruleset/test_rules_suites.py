"""Direct tests of the suite rules (checks/ruleset/reg010-reg016, reg030, reg040: once one module,
checks/rules_suites.py) for what its mutants showed the rule tests leave open (docs/mutation.md)."""

from __future__ import annotations

from checks.calibration.shards import shard_totals


def test_shard_totals_are_the_runners_split_largest_first():
    # LPT by est_time: 50 -> shard 0, 40 -> shard 1, 30 -> shard 1 (40 < 50), 20 -> shard 0
    assert shard_totals([("a", 50), ("b", 40), ("c", 30), ("d", 20)], 2) == [70, 70]
    assert shard_totals([("a", 50), ("b", 10), ("c", 5)], 2) == [50, 15]
    assert shard_totals([("a", 5)], 3) == [5]  # shards past the number of files stay empty, not kept


# -- on the miles-shaped tree of tests/checks/ruleset/ ---------------------------------------------


def test_emptied_for_reads_the_backends_a_diff_emptied():
    from checks.ruleset.reg015_consumer_without_registrations import emptied_for as _emptied_for

    assert _emptied_for({"rocm"}, "rocm") and _emptied_for({"rocm"}, None) and _emptied_for({"*"}, "cuda")
    assert not _emptied_for({"cuda"}, "rocm") and not _emptied_for(set(), None) and not _emptied_for(None, "rocm")
