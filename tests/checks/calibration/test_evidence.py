"""Evidence for each newly enabled ROCm registration (checks/calibration/evidence.py, the summary's
section checks/reporting/evidence.py, the store's on-demand runs bot/store/evidence.py): the seed
PR (miles #2480) with default-branch MI355X passes for some of its files, through the command line
(`--durations-file` and `--durations`), and what is never evidence."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import pytest

from checks.calibration import evidence
from checks.calibration.durations_index import durations_index
from checks.model import Change
from checks.config.schema import Calibration
from tests.bot.test_cli import cli
from tests.checks.reporting.test_pr_summary import NIGHTLY, seed_pr  # noqa: F401 - the seed PR's repository (module fixture)
from tests.bot.commands.test_seed_pr import git

PPO = "tests/e2e/megatron/test_qwen3_4B_ppo.py"
DUMPER = "tests/e2e/short/test_dumper.py"
FSDP = "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py"
# files with runs that are no evidence, one way each
OTHER_HARDWARE = "tests/e2e/megatron/test_qwen3_4B_offload_disk.py"
PR_HEAD_RUN = "tests/e2e/megatron/test_qwen3_4B_variable_gbs.py"
FORK = "tests/e2e/sglang/test_chat_input_ids_equivalence.py"
OTHER_BRANCH = "tests/e2e/megatron/test_qwen3_4B_disk_delta.py"
ON_DEMAND_IMPORT = "tests/e2e/short/test_qwen2.5_0.5B_compact_rollout.py"
NOT_EVIDENCE = (OTHER_HARDWARE, PR_HEAD_RUN, FORK, OTHER_BRANCH, ON_DEMAND_IMPORT)


def rec(file, elapsed, at, outcome="PASS", hardware="MI355X", event="schedule", branch="main",
        head_repo="radixark/miles", run=1000, source="workflow_run:radixark/miles", job=1) -> dict:
    """One `durations export` object."""
    return {"repository": "radixark/miles", "file": file, "backend": "rocm", "suite": None, "hardware": hardware,
            "elapsed_s": elapsed, "outcome": outcome, "attempt": 1, "exit_code": None, "timeout_after_s": None,
            "est_time": None, "run_id": run, "job_id": job, "head_sha": "a" * 40, "workflow": "nightly.yml",
            "measured_at": at, "source": source, "event": event, "head_branch": branch, "head_repository": head_repo}


def _recent(days_ago: float) -> str:
    at = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=days_ago)
    return at.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def export_rows() -> list[dict]:
    return [
        rec(PPO, 650, _recent(5), run=101),
        rec(PPO, 700, _recent(3), run=102, job=2),  # the newest pass is the one shown
        rec(DUMPER, 1500, _recent(4), run=103),
        rec(FSDP, 2000, _recent(4), run=104),
        rec(FSDP, 2500, _recent(2), outcome="FAIL", run=105),  # a newer failure outranks the pass
        rec(OTHER_HARDWARE, 200, _recent(4), hardware="MI300X", run=106),
        rec(PR_HEAD_RUN, 200, _recent(4), event="pull_request", branch="x", run=107),
        rec(FORK, 60, _recent(4), head_repo="mallory/miles", event="push", run=108),
        rec(OTHER_BRANCH, 60, _recent(4), event="push", branch="feature", run=109),
        rec(ON_DEMAND_IMPORT, 60, _recent(4), source="on-demand:3", event="workflow_dispatch", run=110),
    ]


def _check(repo: Path, *args: str, env=None):
    done = cli("check", "--repo", str(repo), "--base", "HEAD~1", "--consumers-from", str(NIGHTLY), *args, env=env)
    assert done.returncode in (0, 1), done.stderr
    return done


def _evidence_rows(summary: str) -> dict[str, str]:
    """file -> the evidence cell of the summary's evidence table."""
    table = summary.split("#### Evidence on each suite's hardware", 1)[1]
    out = {}
    for line in table.splitlines():
        m = re.match(r"\| `([^`:]+):\d+` \| `[^`]+` \| (\S+) \| (.*) \|$", line)
        if m:
            out[m.group(1)] = m.group(3)
    return out


# -- the pure part ----------------------------------------------------------------------------------
def test_only_merged_runs_on_the_calibration_hardware_are_evidence():
    params = Calibration(include_unmerged=True)  # lets unmerged runs into windows: never into evidence
    newest = evidence.newest_runs(export_rows(), params, default_branch="main")
    assert set(f for f, _b, h in newest if h == "MI355X") == {PPO, DUMPER, FSDP}
    # an MI300X run is kept for the MI300X suites (hardware_by_suite), never for an MI350 one
    assert set(newest) - {(f, "rocm", "MI355X") for f in (PPO, DUMPER, FSDP)} == {(OTHER_HARDWARE, "rocm", "MI300X")}
    assert newest[(PPO, "rocm", "MI355X")]["pass"]["run"] == "https://github.com/radixark/miles/actions/runs/102"
    assert newest[(FSDP, "rocm", "MI355X")]["failure"]["outcome"] == "FAIL"
    # a branch unknown (a durations file) is `main`, never "any branch"
    assert (OTHER_BRANCH, "rocm", "MI355X") not in evidence.newest_runs(export_rows(), params)


def _reg(file: str, suite: str = "nightly-stage-c-4-gpu-mi350", change=Change.ADDED):
    """What judge() reads of a registration."""
    from types import SimpleNamespace

    from checks.model import Backend

    return SimpleNamespace(file=file, backend=Backend.ROCM, span=SimpleNamespace(line=3), suite=suite, est_time=800.0,
                           change=change, disabled=None, implicit=False)


def test_one_state_per_registration_in_the_documented_order():
    params = Calibration()
    rows = evidence.attach([], evidence.newest_runs(export_rows(), params, default_branch="main"))
    index = durations_index(rows, params)
    none = evidence.HeadRuns("h2")
    assert evidence.judge(_reg(PPO), index, none, params).state == evidence.PASSED_DEFAULT
    assert evidence.judge(_reg(OTHER_HARDWARE), index, none, params).state == evidence.NOT_VERIFIED
    assert evidence.judge(_reg(OTHER_HARDWARE, "nightly-stage-c-4-gpu-mi300"), index, none, params).state == evidence.PASSED_DEFAULT
    assert evidence.judge(_reg(FSDP), index, none, params).state == evidence.FAILED
    assert evidence.judge(_reg("tests/e2e/x.py"), index, none, params).state == evidence.NOT_VERIFIED
    run = {"file": "tests/e2e/x.py", "backend": "rocm", "hardware": "MI355X", "outcome": "PASS", "elapsed": 700,
           "at": _recent(1), "run": "https://github.com/radixark/miles/actions/runs/7", "on_demand": True}
    earlier = evidence.HeadRuns("h2", ({**run, "head_sha": "h1"},))
    judged = evidence.judge(_reg("tests/e2e/x.py"), index, earlier, params)
    assert judged.state == evidence.NOT_VERIFIED and judged.earlier["head_sha"] == "h1"  # shown, not counted
    at_head = evidence.HeadRuns("h2", ({**run, "head_sha": "h2"},))
    assert evidence.judge(_reg("tests/e2e/x.py"), index, at_head, params).state == evidence.PASSED_HEAD
    # this head's failure outranks the default branch's pass
    failed = evidence.HeadRuns("h2", ({**run, "file": PPO, "head_sha": "h2", "outcome": "TIMEOUT"},))
    assert evidence.judge(_reg(PPO), index, failed, params).state == evidence.FAILED
    # another hardware's run at this head is no evidence
    elsewhere = evidence.HeadRuns("h2", ({**run, "head_sha": "h2", "hardware": "MI300X"},))
    assert evidence.judge(_reg("tests/e2e/x.py"), index, elsewhere, params).state == evidence.NOT_VERIFIED


# -- the seed PR, through the command line ----------------------------------------------------------
def test_the_seed_pr_shows_each_registrations_evidence_and_counts_it(seed_pr, tmp_path):  # noqa: F811
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export_rows()))
    summary = _check(seed_pr, "--durations-file", str(path), "--format", "summary").stdout
    doc = json.loads(_check(seed_pr, "--durations-file", str(path), "--format", "json").stdout)
    needing = [r for r in doc["registrations"] if r["backend"] == "rocm" and r["change"] in ("added", "changed")
               and r["disabled"] is None]
    assert len(doc["evidence"]) == len(needing) == 34
    header = f"**Verified on MI355X: 2 of {len(needing)} newly enabled or changed registrations"
    assert header in summary.split("#### ")[0]  # in the header, before the tables
    rows = _evidence_rows(summary)
    assert len(rows) == len(needing)
    assert re.fullmatch(r"passed on the default branch \d{4}-\d\d-\d\d: 700 s of est_time 800 s "
                        r"\(\[run\]\(https://github\.com/radixark/miles/actions/runs/102\)\)", rows[PPO])
    assert rows[DUMPER].startswith("passed on the default branch") and "1500 s of est_time 1800 s" in rows[DUMPER]
    assert rows[FSDP].startswith("**failed** on the default branch") and "runs/105" in rows[FSDP]
    for file in NOT_EVIDENCE:
        assert rows[file].startswith("not verified"), (file, rows[file])
    # the not-verified row's suggestion is the summary's own: same number, same charge (a suite the
    # run plan refuses, such as the 8-GPU one on miles' 4-GPU fleet, has none, so its rows cite none)
    suggestions = dict(re.findall(r"^(\d+)\. `/run-rocm ([^`]+)`: ", summary, re.M))
    cited = [m.group(2, 1, 3) for f in NOT_EVIDENCE
             if (m := re.search(r"`/run-rocm ([^`]+)` \(suggestion (\d+) below, charged ([\d.]+) GPU-hours\)", rows[f]))]
    assert cited, "a not-verified registration of a suite the plan runs cites its suggestion"
    for n, suite, hours in cited:
        assert suggestions[n] == suite
        assert re.search(rf"^{n}\. `/run-rocm {re.escape(suite)}`: .*charged {re.escape(hours)} GPU-hours", summary, re.M)
    uncited = [f for f in NOT_EVIDENCE if "suggestion" not in rows[f]]
    assert all(rows[f] == "not verified" or rows[f].startswith("not verified; ") for f in uncited)
    by_file = {e["file"]: e for e in doc["evidence"]}
    assert by_file[PPO]["state"] == "passed-default-branch" and by_file[PPO]["run"]["elapsed"] == 700
    assert by_file[FSDP]["state"] == "failed" and not by_file[FSDP]["verified"]
    assert all(by_file[f]["state"] == "not-verified" for f in NOT_EVIDENCE)


def test_a_durations_file_the_diff_changes_is_no_evidence(seed_pr, tmp_path):  # noqa: F811
    repo = tmp_path / "miles"
    shutil.copytree(seed_pr, repo)
    (repo / "durations.json").write_text(json.dumps(export_rows()))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the PR brings its own evidence")
    done = cli("check", "--repo", str(repo), "--base", "HEAD~2", "--consumers-from", str(NIGHTLY),
               "--durations-file", str(repo / "durations.json"), "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    assert "is changed by the diff: its runs are no evidence" in done.stderr
    assert {e["state"] for e in json.loads(done.stdout)["evidence"]} == {"not-verified"}


def test_the_store_gives_the_same_view_and_only_the_apps_own_on_demand_runs(seed_pr, tmp_path):  # noqa: F811
    from bot.store import ondemand
    from bot.store.db import session_scope
    from bot.store.measurements import ensure_store, insert_rows

    url = f"sqlite:///{tmp_path / 'store.db'}"
    ensure_store(url)
    rows = []
    for r in export_rows():
        rows.append({**{k: r[k] for k in r}, "measured_at": dt.datetime.fromisoformat(r["measured_at"].replace("Z", "+00:00")),
                     "runner_labels": None})
    head = git(seed_pr, "rev-parse", "HEAD").strip()
    now = dt.datetime.now(dt.timezone.utc)
    with session_scope(url) as session:
        made = []
        for status, run_id in ((ondemand.COMPLETED, 500), (ondemand.COMPLETED, 501), (ondemand.DISPATCHED, 502)):
            request = ondemand.RocmRequest(repository="radixark/miles", pull_number=2480, head_sha=head,
                                           suite="nightly-stage-c-4-gpu-mi350", files_json="{}", requester="maint",
                                           status=status, created_at=now, updated_at=now, cost_gpu_hours=1.0,
                                           dispatch_repository="radixark/miles", workflow="ondemand.yml",
                                           workflow_run_id=run_id, run_url=f"https://github.com/radixark/miles/actions/runs/{run_id}")
            session.add(request)
            session.flush()
            made.append(request.id)

    def on_demand(file, request_id, run_id, outcome="PASS", head_sha=head):
        return {**rows[0], "file": file, "run_id": run_id, "job_id": run_id, "source": f"on-demand:{request_id}",
                "event": "workflow_dispatch", "head_sha": head_sha, "outcome": outcome, "measured_at": now}

    insert_rows(url, rows + [
        on_demand(OTHER_HARDWARE, made[0], 500),  # the App's completed run of this head: evidence
        on_demand(PR_HEAD_RUN, made[1], 999),  # names a request but not its run: no evidence
        on_demand(FORK, made[2], 502),  # a request still dispatched: no evidence yet
        on_demand(OTHER_BRANCH, made[0], 500, head_sha="b" * 40),  # another head's: no evidence
    ])
    env = {"DATABASE_URL": url}
    done = _check(seed_pr, "--durations", "--format", "json", env=env)
    by_file = {e["file"]: e for e in json.loads(done.stdout)["evidence"]}
    assert by_file[OTHER_HARDWARE]["state"] == "passed-at-head"
    assert by_file[OTHER_HARDWARE]["run"]["run"].endswith("/runs/500")
    assert by_file[PPO]["state"] == "passed-default-branch" and by_file[FSDP]["state"] == "failed"
    for file in (PR_HEAD_RUN, FORK, OTHER_BRANCH, ON_DEMAND_IMPORT):
        assert by_file[file]["state"] == "not-verified", file
    summary = _check(seed_pr, "--durations", "--format", "summary", env=env).stdout
    assert "**Verified on MI355X: 3 of 34 newly enabled or changed registrations (2 on the default branch, 1 at this head, 1 failed)" in summary


@pytest.mark.parametrize("fmt", ["summary", "json"])
def test_without_durations_nothing_changes(seed_pr, fmt):  # noqa: F811
    out = _check(seed_pr, "--format", fmt).stdout
    assert "Verified on" not in out and '"evidence"' not in out
