"""The App's summary follows the evidence (docs/evidence.md) on the simulated GitHub: a maintainer's
`/run-rocm` for the unverified file completes with a pass, and the same "CI registrations" check
run then counts it as verified at this head; a push starts the count over."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.worker.handlers.pull_requests import CHECK_NAME
from tests.fixtures.miles import test_file
from tests.ondemand_support import CONFIG, EXTRA_TEST, SUITE, build_ondemand
from tests.simulator.fixtures import github_sim  # noqa: F401

NEW = "tests/e2e/test_new.py"  # the PR's newly enabled ROCm registration (tests/ondemand_support.py)


@pytest.fixture(params=["notice"])
def od(github_sim, tmp_path, monkeypatch, request):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    od = build_ondemand(github_sim, tmp_path, config=CONFIG + f"verification: {request.param}\n")
    # the default branch's nightly passed the file the PR leaves alone: the store has durations
    from bot.store.measurements import ensure_store, insert_rows

    url = od.world.settings.database_url
    ensure_store(url)
    insert_rows(url, [{"repository": "radixark/miles", "file": EXTRA_TEST, "backend": "rocm", "suite": SUITE,
                       "hardware": "MI355X", "elapsed_s": 280.0, "outcome": "PASS", "attempt": 1, "exit_code": None,
                       "timeout_after_s": None, "est_time": 300.0, "run_id": 77, "job_id": 78, "head_sha": "c" * 40,
                       "workflow": "nightly.yml", "runner_labels": "mi350",
                       "measured_at": dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1),
                       "source": "workflow_run:radixark/miles", "event": "schedule", "head_branch": "main",
                       "head_repository": "radixark/miles"}])
    return od


def _open(od):
    d = od.sim.webhook("pull_request", "opened", app=od.world.app, repo=od.repo, pull=od.pr, sender="bob")
    assert od.world.deliver(d).status_code == 202
    od.world.drain()


def _registrations_runs(od, sha):
    return od.sim.check_runs(od.repo, sha=sha, name=CHECK_NAME)


def _row(summary: str, file: str) -> str:
    section = summary.split("#### Evidence")[1].split("####")[0].split("<details>")[0]  # up to what follows
    [line] = [line for line in section.splitlines() if line.startswith(f"| `{file}:")]
    return line


def test_an_on_demand_pass_updates_the_same_summary_and_a_push_starts_over(od):
    _open(od)
    first_head = od.pr.head_sha
    [run] = _registrations_runs(od, first_head)
    assert run["status"] == "completed"
    summary = run["output"]["summary"]
    assert "**Verified on MI355X: 0 of 1 newly enabled registration (0 on the default branch, 0 at this head).**" in summary
    assert f"not verified: `/run-rocm {SUITE}` (suggestion 1 below" in _row(summary, NEW)
    comments_before = len(od.sim.comments(od.repo, od.pr.number))

    od.comment(f"/run-rocm {SUITE} {NEW}", author="maint")
    [d] = od.dispatches()
    assert d["inputs"]["head_sha"] == first_head
    comments_after_command = len(od.sim.comments(od.repo, od.pr.number))  # the command and its reply
    od.finish_run(d, [f"2026-12-01T04:05:06.1234567Z [1/1] {NEW}  PASS  elapsed=80s\n"])

    [same] = _registrations_runs(od, first_head)  # no new check run
    assert same["id"] == run["id"]
    summary = same["output"]["summary"]
    assert "**Verified on MI355X: 1 of 1 newly enabled registration (0 on the default branch, 1 at this head).**" in summary
    row = _row(summary, NEW)
    assert f"passed at this head (`{first_head[:7]}`)" in row and "80 s of est_time 90 s" in row
    assert f"/actions/runs/{d['run_id']}" in row
    assert f"`/run-rocm {SUITE}`" not in summary and not same["actions"]  # nothing left to suggest
    assert len(od.sim.comments(od.repo, od.pr.number)) == comments_after_command > comments_before  # no new comment

    # a push: the new head's check counts nothing from the old head, and says what it saw
    second_head = od.push({NEW: test_file('register_cuda_ci(est_time=60, suite="stage-c-4-gpu-h200", labels=["short"])',
                                          f'register_rocm_ci(est_time=95, suite="{SUITE}", labels=["short"])')})
    [new_run] = _registrations_runs(od, second_head)
    summary = new_run["output"]["summary"]
    assert "**Verified on MI355X: 0 of 1 newly enabled registration (0 on the default branch, 0 at this head).**" in summary
    row = _row(summary, NEW)
    assert row.count("not verified") == 1 and f"passed at an earlier head (`{first_head[:7]}`), not counted" in row
    # the old head's run keeps what it said
    [old] = _registrations_runs(od, first_head)
    assert "1 of 1 newly enabled" in old["output"]["summary"]


def test_a_run_that_completes_after_a_push_leaves_the_new_heads_check_alone(od):
    _open(od)
    first_head = od.pr.head_sha
    od.comment(f"/run-rocm {SUITE} {NEW}", author="maint")
    [d] = od.dispatches()
    [before] = _registrations_runs(od, first_head)
    # GitHub's view moves on (the push's webhook not delivered yet): the run's head is no longer the PR's
    second_head = od.push({"README.md": "moved on\n"}, deliver=False)
    od.finish_run(d, [f"2026-12-01T04:05:06.1234567Z [1/1] {NEW}  PASS  elapsed=80s\n"])
    [after] = _registrations_runs(od, first_head)
    assert after["output"]["summary"] == before["output"]["summary"]  # not this PR's head any more
    assert _registrations_runs(od, second_head) == []


@pytest.mark.parametrize("od", ["required"], indirect=True)
def test_with_verification_required_the_verdict_follows_the_evidence_in_place(od):
    _open(od)
    head = od.pr.head_sha
    [run] = _registrations_runs(od, head)
    assert run["conclusion"] == "failure"  # REG022: the newly enabled registration is not verified
    assert "[REG022]" in run["output"]["summary"] and "| failure |" in run["output"]["summary"]
    od.comment(f"/run-rocm {SUITE} {NEW}", author="maint")
    [d] = od.dispatches()
    od.finish_run(d, [f"2026-12-01T04:05:06.1234567Z [1/1] {NEW}  PASS  elapsed=80s\n"])
    [same] = _registrations_runs(od, head)
    assert same["id"] == run["id"] and same["conclusion"] == "success"
    assert "[REG022]" not in same["output"]["summary"]


@pytest.mark.parametrize("od", ["required"], indirect=True)
def test_a_failing_run_at_this_head_keeps_the_gate_shut(od):
    _open(od)
    head = od.pr.head_sha
    od.comment(f"/run-rocm {SUITE} {NEW}", author="maint")
    [d] = od.dispatches()
    od.finish_run(d, [f"2026-12-01T04:05:06.1234567Z [1/1] {NEW}  FAIL  elapsed=30s\n"], conclusion="failure")
    [run] = _registrations_runs(od, head)
    assert run["conclusion"] == "failure"
    row = _row(run["output"]["summary"], NEW)
    assert f"**failed** at this head (`{head[:7]}`)" in row
    assert "its newest run at this head failed" in run["output"]["summary"]
