"""REG030 splits what each run's runner selects (checks/target/suite_runs.py `selection`: its
backend, cadence and label policy), not every registration of the suite: a differential test on
sglang's vendored tree at 382343f against the model's own selection."""

from __future__ import annotations

import re
from pathlib import Path

from checks.calibration.shards import Item, heaviest, partition
from checks.engine import build_context, check_tree
from checks.limits import Budget
from checks.scanning.tree import DirectoryTree, MemoryTree
from checks.config.schema import load_config
from checks.workflows.runs import GITHUB_DEFAULT_TIMEOUT_MINUTES

TARGETS = Path(__file__).parent / "fixtures" / "targets"
SGLANG = TARGETS / "sglang" / "ci-382343f"
SGLANG_CONFIG = (Path(__file__).resolve().parents[1] / "docs" / "configs" / "sglang.yml").read_bytes()


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
