"""REG030 (suite over budget), checks/ruleset/reg030_suite_over_budget.py: driven by its fixtures,
REG030/ beside this module (test_rule_fixtures.py describes them), and its cases on miles-shaped
source written here.

Spans are 1-based, end_column exclusive. Each positive case asserts the exact line and column.

REG030 splits what each run's runner selects (checks/target/suite_runs.py `selection`: its
backend, cadence and label policy), not every registration of the suite: a differential test on
sglang's vendored tree at 382343f against the model's own selection.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from checks.calibration.shards import Item, heaviest, partition
from checks.engine import build_context, check_tree
from checks.limits import Budget
from checks.model import Severity
from checks.scanning.tree import DirectoryTree, MemoryTree
from checks.config.schema import load_config
from checks.workflows.runs import GITHUB_DEFAULT_TIMEOUT_MINUTES

from tests import FIXTURES, REPO
from tests.checks.ruleset.rule_support import (
    check,
    check_fixture,
    fixture_files,
    fixture_id,
    only,
    rules_of,
    span,
)
from tests.fixtures.miles import PR_TEST_ROCM, miles_tree, test_file


@pytest.mark.parametrize("fixture", fixture_files("REG030"), ids=fixture_id)
def test_fixture(fixture: Path):
    """Each fixture in REG030/ beside this module gets exactly the findings its `# expect:` lines state."""
    check_fixture(fixture)


def _rocm_files(n: int, est: int, suite: str = "stage-c-4-gpu-mi350"):
    return {f"tests/e2e/test_big{i}.py": test_file(f'register_rocm_ci(est_time={est}, suite="{suite}", labels=["long"])') for i in range(n)}


def test_reg030_over_budget_with_auto_partition_shards():
    # pr-test-rocm.yml: timeout-minutes 180, --auto-partition-size 2 -> 4 x 6000 s = 12000 s per shard > 10800 s
    report = check(**_rocm_files(4, 6000))
    f = only(report.findings, "REG030")
    assert f.file == "tests/ci/run_suite.py"
    assert span(f) == (17, 9, 17, 30)  # the suite's entry in CI_SUITES
    assert f.severity is Severity.WARNING
    assert "2 shards" in f.message and "12000 s" in f.message and "180 min" in f.message


def test_reg030_one_finding_per_suite_naming_every_workflow_it_overruns():
    # the same 4 x 6000 s suite in three workflows: 2 shards / 180 min (12000 s > 10800 s), one
    # shard / 300 min (24000 s > 18000 s) and 4 shards / 120 min (6000 s < 7200 s: it fits there)
    base = miles_tree()[".github/workflows/pr-test-rocm.yml"]
    one = base.replace("timeout-minutes: 180", "timeout-minutes: 300").replace(
        " --auto-partition-id ${{ matrix.part }} --auto-partition-size 2", "").replace("part: [0, 1]", "part: [0]")
    four = base.replace("timeout-minutes: 180", "timeout-minutes: 120").replace(
        "--auto-partition-size 2", "--auto-partition-size 4").replace("part: [0, 1]", "part: [0, 1, 2, 3]")
    report = check(**_rocm_files(4, 6000), **{".github/workflows/nightly-rocm.yml": one, ".github/workflows/weekly-rocm.yml": four})
    f = only(report.findings, "REG030")
    assert span(f) == (17, 9, 17, 30)
    assert "it overruns the job timeout in 2 workflows: " in f.message, f.message
    assert ".github/workflows/nightly-rocm.yml (longest of 1 shard 24000 s, timeout 300 min)" in f.message
    assert ".github/workflows/pr-test-rocm.yml (longest of 2 shards 12000 s, timeout 180 min)" in f.message
    assert "weekly-rocm.yml" not in f.message
    assert "(s)" not in f.message


def test_reg030_under_budget_thanks_to_shards():
    # 4 x 5000 s = 20000 s would overflow one shard; two shards hold 10000 s each < 10800 s
    assert "REG030" not in rules_of(check(**_rocm_files(4, 5000)).findings)


def test_reg030_external_consumer_timeout():
    # the sglang nightly, read from its file: a 180-minute step timeout (it was 120 when the
    # consumer was typed by hand), 1 shard; the fixture already has 2400 s in nightly-stage-c-4-gpu-mi350
    report = check(**_rocm_files(2, 5000, "nightly-stage-c-4-gpu-mi350"))
    f = only(report.findings, "REG030")
    assert span(f) == (20, 9, 20, 38)
    assert "180 min" in f.message and "sgl-project/sglang:.github/workflows/nightly-test-amd-miles-rocm720.yml" in f.message
    assert "REG030" not in rules_of(check(**_rocm_files(1, 5000, "nightly-stage-c-4-gpu-mi350")).findings)  # 7400 s < 10800 s


def test_reg030_disabled_registrations_do_not_count():
    files = {
        f"tests/e2e/test_big{i}.py": test_file(f'register_rocm_ci(est_time=6000, suite="stage-c-4-gpu-mi350", labels=["long"], disabled="off")') for i in range(4)
    }
    assert "REG030" not in rules_of(check(**files).findings)


def _rocm(n: int, est: int, suite: str = "stage-c-4-gpu-mi350") -> dict[str, str]:
    return {f"tests/e2e/test_big{i}.py": test_file(f'register_rocm_ci(est_time={est}, suite="{suite}", labels=["long"])')
            for i in range(n)}


def test_reg030_skips_a_job_whose_shard_count_is_decided_at_run_time():
    # 4 x 6000 s over 2 shards: over 180 min (tests/checks/ruleset/); the same with the count computed
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


TARGETS = FIXTURES / "targets"
SGLANG = TARGETS / "sglang" / "ci-382343f"
SGLANG_CONFIG = (REPO / "docs" / "configs" / "sglang.yml").read_bytes()


def _over(model, regs) -> dict[str, float]:
    """suite -> the est_time total of the selection of the run it overruns most, computed from the
    model's selection with the runner's split (no durations: est_time only)."""
    out: dict[str, tuple[float, float]] = {}
    for run in model.runs:
        if run.shards < 1:
            continue
        chosen = [r for r in model.selection(run, regs) if r.est_time is not None]
        if not chosen:
            continue
        timeout = (run.timeout_minutes or GITHUB_DEFAULT_TIMEOUT_MINUTES) * 60
        worst = heaviest(partition([Item(r.file, r.est_time, r.est_time) for r in chosen], run.shards))
        ratio = worst.predicted / timeout
        if worst.predicted > timeout and ratio > out.get(run.suite, (0, 0))[0]:
            out[run.suite] = (ratio, sum(r.est_time for r in chosen))
    return {suite: total for suite, (_ratio, total) in out.items()}


def _findings(report) -> dict[str, float]:
    out = {}
    for f in report.findings:
        if f.rule == "REG030":
            suite, total = re.match(r"suite `([^`]+)` holds (\d+) s", f.message).groups()
            out[suite] = float(total)
    return out


def test_reg030_is_what_each_runs_selection_overruns():
    tree = DirectoryTree(SGLANG)
    config, _ = load_config(SGLANG_CONFIG)
    report = check_tree(tree, config_text=SGLANG_CONFIG)
    ctx = build_context(tree, config, Budget())[0]
    regs = [r for r in report.registrations if r.suite and r.disabled is None]
    expected = _over(ctx.suite_runs, regs)
    assert expected, "the vendored tree has a suite over its job's timeout"
    assert _findings(report) == expected

    # a nightly=True file in a suite only a PR job runs (no --nightly): that job does not select it,
    # so however long it is, the PR job's shards do not carry it
    runs = ctx.suite_runs.runs
    suite = next(r.suite for r in runs if r.nightly is False and r.hw in (None, "amd") and r.shards >= 1
                 and r.suite not in expected and all(o.nightly is False for o in ctx.suite_runs.of_suite(r.suite)))
    files = {p: tree.read(p) for p in tree.paths()}
    files["test/registered/amd/test_added_nightly.py"] = (
        "from sglang.test.ci.ci_register import register_amd_ci\n\n"
        f'register_amd_ci(est_time=50000, suite="{suite}", nightly=True)\n').encode()
    again = check_tree(MemoryTree(files), config_text=SGLANG_CONFIG)
    added = [r for r in again.registrations if r.file == "test/registered/amd/test_added_nightly.py"]
    assert added and added[0].suite == suite and added[0].nightly
    assert suite not in _findings(again)
    # the same file without nightly=True is selected, and overruns the job
    files["test/registered/amd/test_added_nightly.py"] = files["test/registered/amd/test_added_nightly.py"].replace(
        b", nightly=True", b"")
    assert suite in _findings(check_tree(MemoryTree(files), config_text=SGLANG_CONFIG))
