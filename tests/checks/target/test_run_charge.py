"""A number the reviewer sees twice is the same number: each `/run-rocm` suggestion of the
summary shows the run plan's charge, which `run-plan --format json` reports as `gpu_hours` and the
budget takes (bot/ondemand/cost.py). One computation (checks/target/run_cost.py `charge`), checked
differentially on the vendored revisions of both targets: the summary's figure (the check's own
output), `run-plan`'s (a separate process on a checkout of the head) and the budget's (the App's
`select` + `cost_selection`) for every suggested suite.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from bot.ondemand.cost import cost_selection
from bot.ondemand.selection import select
from checks.engine import check_tree
from checks.limits import Budget
from checks.reporting.render import check_run_summary, suggested_runs
from checks.scanning.tree import DirectoryTree, MemoryTree
from checks.config.schema import load_config
from checks.target.target_ci import read_target_ci
from tests import FIXTURES, REPO
from tests.bot.test_cli import cli
from tests.checks.reporting.test_pr_summary import NIGHTLY, _check, seed_pr  # noqa: F401 - the seed PR fixture

TARGETS = FIXTURES / "targets"
SGLANG = TARGETS / "sglang" / "ci-382343f"
SGLANG_CONFIG = REPO / "docs" / "configs" / "sglang.yml"
# miles ships no configuration: the App's default, with the `"*"` dispatch entry an installation adds
MILES_DISPATCH = 'dispatch:\n  "*":\n    workflow: rocm-on-demand.yml\n'
SUGGESTION = re.compile(r"^(\d+)\. `/run-rocm ([^`]+)`: .* charged ([\d.]+) GPU-hours against the budget", re.M)


def _suggested(summary: str) -> dict[str, float]:
    return {suite: float(hours) for _, suite, hours in SUGGESTION.findall(summary)}


def _run_plan_hours(repo: Path, suite: str, *args: str) -> float:
    done = cli("run-plan", suite, "--repo", str(repo), "--format", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["gpu_hours"]


def _budget_hours(repo: Path, config_text: bytes, suite: str, consumers_from: dict | None = None) -> float:
    """What the budget charges: the App's selection of the suite at head, costed by bot/ondemand/cost.py."""
    tree = DirectoryTree(repo)
    config, findings = load_config(config_text)
    assert not findings
    target = read_target_ci(tree, config, Budget(), consumers_from)
    selection = select(tree, config, target.contract, suite, [], "head", target=target)
    costing = cost_selection(selection, target.contract)
    assert costing.refusal is None
    return costing.gpu_hours


def test_the_seed_prs_suggestion_is_the_plans_charge(seed_pr, tmp_path):  # noqa: F811
    summary = _check(seed_pr, "summary")
    shown = _suggested(summary)
    assert list(shown) == ["nightly-stage-c-4-gpu-mi350"]  # the 2- and 8-GPU suites have no runner in miles' fleet
    config = tmp_path / "ci-registrar.yml"
    config.write_text(MILES_DISPATCH)
    for suite, hours in shown.items():
        planned = _run_plan_hours(seed_pr, suite, "--config", str(config), "--consumers-from", str(NIGHTLY))
        charged = _budget_hours(seed_pr, MILES_DISPATCH.encode(), suite, {str(NIGHTLY): NIGHTLY.read_bytes()})
        assert hours == planned == charged, (suite, hours, planned, charged)
    # not the table's figure (est_time of the nightly job's selection x its 8-GPU pool): the plan's
    # per-file timeout bounds on miles' own 4-GPU runner
    [row] = [line for line in summary.splitlines() if line.startswith("| `nightly-stage-c-4-gpu-mi350` |")]
    assert f"→ {shown['nightly-stage-c-4-gpu-mi350']:.2f} (" not in row


# Files a PR adds to sglang at 382343f: two in its 8-GPU MI35x PR-gate suite (one with an est_time
# far under the per-file timeout, where est_time x GPUs and the charge differ most).
ADDED = {
    "test/registered/amd/test_added_large.py": 'register_amd_ci(est_time=1300, suite="stage-c-test-large-8-gpu-amd-mi35x")',
    "test/registered/amd/test_added_small.py": 'register_amd_ci(est_time=20, suite="stage-c-test-large-8-gpu-amd-mi35x")',
}


def _sglang_pr(tmp_path: Path) -> tuple[dict, dict, Path]:
    base = {str(p.relative_to(SGLANG)): p.read_bytes() for p in SGLANG.rglob("*") if p.is_file()}
    added = {path: (f"from sglang.test.ci.ci_register import register_amd_ci\n\n{line}\n").encode()
             for path, line in ADDED.items()}
    head = {**base, **added}
    repo = tmp_path / "sglang"
    shutil.copytree(SGLANG, repo)
    for path, data in added.items():
        (repo / path).write_bytes(data)
    return base, head, repo


def test_sglangs_suggestions_are_the_plans_charge(tmp_path):
    base, head, repo = _sglang_pr(tmp_path)
    config_text = SGLANG_CONFIG.read_bytes()
    report = check_tree(MemoryTree(head), MemoryTree(base), {p: None for p in ADDED}, config_text=config_text)
    summary = check_run_summary(report)
    shown = _suggested(summary)
    assert list(shown) == suggested_runs(report) and shown, summary
    for suite, hours in shown.items():
        planned = _run_plan_hours(repo, suite, "--config", str(SGLANG_CONFIG))
        charged = _budget_hours(repo, config_text, suite)
        assert hours == planned == charged, (suite, hours, planned, charged)
