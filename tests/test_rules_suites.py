"""Direct tests of the suite rules (checks/ruleset/reg010-reg016, reg030, reg040: once one module,
checks/rules_suites.py) for what its mutants showed the rule tests leave open (docs/mutation.md)."""

from __future__ import annotations

from checks.calibration.shards import shard_totals


def test_shard_totals_are_the_runners_split_largest_first():
    # LPT by est_time: 50 -> shard 0, 40 -> shard 1, 30 -> shard 1 (40 < 50), 20 -> shard 0
    assert shard_totals([("a", 50), ("b", 40), ("c", 30), ("d", 20)], 2) == [70, 70]
    assert shard_totals([("a", 50), ("b", 10), ("c", 5)], 2) == [50, 15]
    assert shard_totals([("a", 5)], 3) == [5]  # shards past the number of files stay empty, not kept


# -- on the miles-shaped tree of tests/test_rules.py ---------------------------------------------
from tests.fixtures.miles import PR_TEST_ROCM, miles_tree, test_file  # noqa: E402
from tests.test_rules import check, only, rules_of  # noqa: E402

test_file.__test__ = False


def _rocm(n: int, est: int, suite: str = "stage-c-4-gpu-mi350") -> dict[str, str]:
    return {f"tests/e2e/test_big{i}.py": test_file(f'register_rocm_ci(est_time={est}, suite="{suite}", labels=["long"])')
            for i in range(n)}


def test_reg013_names_the_hw_a_consumer_runs_the_suite_with():
    """A job runs the suite, but only with `--hw cuda`: the ROCm registration has no consumer, and
    the finding says which --hw does run it."""
    wf = PR_TEST_ROCM.replace("--hw rocm", "--hw cuda")
    report = check(**{".github/workflows/pr-test-rocm.yml": wf},
                   **{"tests/e2e/test_gate.py": test_file('register_rocm_ci(est_time=60, suite="stage-c-4-gpu-mi350", labels=["amd"])')})
    f = only([f for f in report.findings if f.file == "tests/e2e/test_gate.py"], "REG013")
    assert "runs `stage-c-4-gpu-mi350` only with `--hw cuda`, which does not select ROCm registrations" in f.message


def test_reg015_leaves_a_suite_outside_the_inventory_to_reg014():
    wf = PR_TEST_ROCM.replace("--suite stage-c-4-gpu-mi350", "--suite stage-c-4-gpu-mi999")
    report = check(**{".github/workflows/pr-test-rocm.yml": wf})
    assert [f.rule for f in report.findings if f.file == ".github/workflows/pr-test-rocm.yml"] == ["REG014"]


def test_reg015_is_quiet_when_a_registration_of_that_backend_names_its_suite_unreadably():
    """A ROCm registration whose suite is no literal may be the one the job's suite names."""
    files = miles_tree()
    # nothing registers stage-c-4-gpu-mi350 in the fixture: REG015 on pr-test-rocm.yml ...
    assert any(f.rule == "REG015" and "stage-c-4-gpu-mi350" in f.message for f in check(files).findings)
    # ... unless a rocm registration's suite cannot be read
    unread = 'SUITE = "stage-c-4-gpu-" + "mi350"\nregister_rocm_ci(est_time=60, suite=SUITE, labels=["amd"])'
    files["tests/e2e/test_unread.py"] = test_file(unread)
    report = check(files)
    assert not any(f.rule == "REG015" and "stage-c-4-gpu-mi350" in f.message for f in report.findings)
    # and a cuda registration's unreadable suite does not silence the rocm job's
    files["tests/e2e/test_unread.py"] = test_file(unread.replace("register_rocm_ci", "register_cuda_ci").replace('["amd"]', '["long"]'))
    assert any(f.rule == "REG015" and "stage-c-4-gpu-mi350" in f.message for f in check(files).findings)


def test_reg030_skips_a_job_whose_shard_count_is_decided_at_run_time():
    # 4 x 6000 s over 2 shards: over 180 min (tests/test_rules.py); the same with the count computed
    wf = PR_TEST_ROCM.replace("--auto-partition-size 2", "--auto-partition-size ${{ env.SHARDS }}")
    assert "REG030" in rules_of(check(**_rocm(4, 6000)).findings)
    assert "REG030" not in rules_of(check(**_rocm(4, 6000), **{".github/workflows/pr-test-rocm.yml": wf}).findings)


def test_reg030_predicts_with_measured_durations_where_there_are_some():
    """est_time says 4 x 2000 s fits two 180-minute shards; the stored runs say 6000 s each."""
    from checks.engine import check_tree
    from checks.scanning.tree import MemoryTree
    from tests.fixtures import miles

    files = {**miles_tree(), **_rocm(4, 2000)}
    rows = [{"file": f, "backend": "rocm", "hardware": "MI355X", "n": 10, "median": 6000, "p90": 6000, "max": 6100}
            for f in _rocm(4, 2000)]
    assert "REG030" not in rules_of(check_tree(MemoryTree(files), consumers_from=miles.CONSUMERS).findings)
    report = check_tree(MemoryTree(files), consumers_from=miles.CONSUMERS, durations=rows)
    f = only(report.findings, "REG030")
    assert "measured p90 for every file" in f.message


def _measured(est_and_p90: dict[str, tuple[int, int]]):
    files = {**miles_tree(), **{f: test_file(f'register_rocm_ci(est_time={est}, suite="stage-c-4-gpu-mi350", labels=["long"])')
                                for f, (est, _p90) in est_and_p90.items()}}
    rows = [{"file": f, "backend": "rocm", "hardware": "MI355X", "n": 10, "median": p90, "p90": p90, "max": p90}
            for f, (_est, p90) in est_and_p90.items()]
    from checks.engine import check_tree
    from checks.scanning.tree import MemoryTree
    from tests.fixtures import miles

    return only(check_tree(MemoryTree(files), consumers_from=miles.CONSUMERS, durations=rows).findings, "REG030")


def test_reg030_shows_the_runners_split_and_the_est_times_that_rebalance_it():
    """By est_time the runner puts the two slow files in one shard (12000 s measured, 180 min job);
    calibrated est_times split them: 10000 s each."""
    f = _measured({"tests/e2e/test_a.py": (3000, 6000), "tests/e2e/test_b.py": (2900, 6000),
                   "tests/e2e/test_c.py": (5000, 4000), "tests/e2e/test_d.py": (100, 4000)})
    assert "--auto-partition-id 1" in f.message and "`tests/e2e/test_a.py`, `tests/e2e/test_b.py` in shard 1" in f.message
    assert "`tests/e2e/test_a.py` 3000 -> " in f.message and "`tests/e2e/test_b.py` 2900 -> " in f.message
    assert "rebalance it: predicted shards" in f.message


def test_reg030_says_when_no_est_time_can_rebalance_it():
    # two files per shard: 10900 s, 100 s over the 180-minute job; with one to three per shard, the
    # heaviest of three shards still holds two: four shards fit
    f = _measured({f"tests/e2e/test_{c}.py": (5450, 5450) for c in "abcd"})
    assert "no est_time rebalances it: 4 shards would fit" in f.message


def test_emptied_for_reads_the_backends_a_diff_emptied():
    from checks.ruleset.reg015_consumer_without_registrations import emptied_for as _emptied_for

    assert _emptied_for({"rocm"}, "rocm") and _emptied_for({"rocm"}, None) and _emptied_for({"*"}, "cuda")
    assert not _emptied_for({"cuda"}, "rocm") and not _emptied_for(set(), None) and not _emptied_for(None, "rocm")


def test_reg015_in_a_diff_reports_the_jobs_of_the_workflows_it_changed_only():
    """Nothing in the fixture registers stage-c-4-gpu-mi350: REG015 on pr-test-rocm.yml's job. A
    diff that edits that workflow is told; a diff elsewhere is not (the job was like that before)."""
    from checks.engine import check_tree
    from checks.scanning.tree import MemoryTree
    from tests.fixtures import miles

    base = miles_tree()
    edited = {**base, ".github/workflows/pr-test-rocm.yml": PR_TEST_ROCM.replace("timeout-minutes: 180", "timeout-minutes: 170")}
    # another workflow: the diff re-reads every registration (a complete picture), yet did not touch this job
    elsewhere = {**base, ".github/workflows/pr-test.yml": base[".github/workflows/pr-test.yml"] + "\n# note\n"}

    def reg015(head: dict, changed: set[str]) -> list:
        report = check_tree(MemoryTree(head), MemoryTree(base), {p: p for p in changed}, consumers_from=miles.CONSUMERS)
        return [f for f in report.findings if f.rule == "REG015" and "stage-c-4-gpu-mi350" in f.message]

    assert reg015(edited, {".github/workflows/pr-test-rocm.yml"})
    assert not reg015(elsewhere, {".github/workflows/pr-test.yml"})


def test_reg010_messages_for_a_validated_and_a_disabled_unvalidated_backend(tmp_path):
    import shutil
    from pathlib import Path

    from checks.engine import check_tree
    from checks.scanning.tree import DirectoryTree
    from tests.fixtures.sglang import SGLANG_CONFIG

    # miles validates rocm suites: the runner rejects the name
    report = check(**{"tests/e2e/test_typo.py": test_file('register_rocm_ci(est_time=60, suite="stage-c-4-gpu-mi35", labels=["amd"])')})
    f = only([f for f in report.findings if f.file == "tests/e2e/test_typo.py"], "REG010")
    assert f.severity.value == "failure" and "so the runner rejects this registration" in f.message
    assert "never runs" not in f.message  # REG013 is the one finding that says so
    assert "does not validate" not in f.message
    # sglang (August 2026) validates no AMD suite: a disabled registration there is a warning that says so
    tree = tmp_path / "sglang"
    shutil.copytree(Path(__file__).parent / "fixtures" / "targets" / "sglang" / "r2026-08-22-382343f", tree)
    (tree / "test/registered/amd").mkdir(parents=True, exist_ok=True)
    (tree / "test/registered/amd/test_off.py").write_text(
        'from sglang.test.ci.ci_register import register_amd_ci\n\n'
        'register_amd_ci(est_time=60, suite="nightly-amd-off-1-gpu", disabled="no runner yet")\n')
    found = [f for f in check_tree(DirectoryTree(tree), config_text=SGLANG_CONFIG).findings
             if f.rule == "REG010" and f.file == "test/registered/amd/test_off.py"]
    assert [f.severity.value for f in found] == ["warning"]
    assert "the runner does not validate AMD suites against it" in found[0].message
