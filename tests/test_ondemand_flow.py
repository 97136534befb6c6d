"""/run-rocm end to end on the simulator: dispatch, approval by comment and by button, staleness, completion."""

from __future__ import annotations

import pytest

from bot.store import ondemand as store
from tests.ondemand_support import EXTRA_TEST, SUITE, build_ondemand
from tests.simulator.fixtures import github_sim  # noqa: F401


@pytest.fixture()
def od(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    return build_ondemand(github_sim, tmp_path)


def test_a_maintainers_command_dispatches_the_exact_head_at_once(od):
    c, _ = od.comment(f"/run-rocm {SUITE}", author="maint")
    [d] = od.dispatches()
    assert d["workflow"] == "rocm-on-demand.yml" and d["ref"] == "main"
    assert d["inputs"] == {"suite": SUITE, "head_sha": od.pr.head_sha, "pull_number": str(od.pr.number),
                           "test_files": ""}
    assert od.sim.reactions(od.repo, c["id"]) == ["eyes", "rocket"]
    [reply] = od.replies()
    assert "Dispatched" in reply and od.pr.head_sha in reply and "/actions/runs/" in reply
    # three enabled registrations of the suite at the head: 90 + 2400 + 300 s on 4 GPUs
    assert "tests/e2e/test_new.py" in reply and EXTRA_TEST in reply and "test_disabled_rocm" not in reply
    assert "3.10 GPU-hours" in reply
    [run] = od.check_runs("MI350 · ")
    assert run["name"] == f"MI350 · {SUITE}" and run["status"] == "in_progress" and run["head_sha"] == od.pr.head_sha
    actions = [e.action for e in store.audit_entries(od.world.settings.database_url)]
    assert actions[::-1] == ["command", "request", "dispatch"]


def test_listed_files_are_passed_and_costed(od):
    od.comment(f"/run-rocm {SUITE} tests/e2e/test_new.py", author="admin1")
    [d] = od.dispatches()
    assert d["inputs"]["test_files"] == "tests/e2e/test_new.py"
    [reply] = od.replies()
    assert "0.10 GPU-hours" in reply and EXTRA_TEST not in reply


def test_completion_lands_on_the_pr_and_in_the_store(od):
    od.comment(f"/run-rocm {SUITE}", author="maint")
    [d] = od.dispatches()
    log = ("2026-12-01T04:05:06.1234567Z [1/3] tests/e2e/test_new.py  PASS  elapsed=80s\n"
           f"2026-12-01T04:25:06.1234567Z [2/3] {EXTRA_TEST}  PASS  elapsed=420s\n"
           "2026-12-01T05:05:06.1234567Z [3/3] tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py  TIMEOUT  elapsed=3000s\n")
    od.sim.complete_run(d["run_id"], conclusion="failure",
                        jobs=[{"name": "mi350", "labels": ["self-hosted", "amd", "mi350"], "conclusion": "failure",
                               "log": log}])
    od.world.deliver(od.sim.webhook("workflow_run", "completed", app=od.world.app, repo=od.repo, run=d["run_id"]))
    od.world.drain()
    [run] = od.check_runs("MI350 · ")
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    summary = run["output"]["summary"]
    assert "within est_time" in summary and "over est_time" in summary and "timed out" in summary
    assert run["output"]["title"].startswith("failure: 2 of 3")
    from bot.durations import export_records

    rows = export_records(od.world.settings.database_url, repository="radixark/miles")
    assert {r["file"] for r in rows} == {"tests/e2e/test_new.py", EXTRA_TEST,
                                         "tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py"}
    assert {r["head_sha"] for r in rows} == {od.pr.head_sha} and {r["hardware"] for r in rows} == {"MI355X"}
    [request] = store.requests_for_pull(od.world.settings.database_url, "radixark/miles", od.pr.number)
    assert request.status == "completed"
    # a redelivered completion changes nothing
    od.world.deliver(od.sim.webhook("workflow_run", "completed", app=od.world.app, repo=od.repo, run=d["run_id"]))
    od.world.drain()
    assert len(export_records(od.world.settings.database_url, repository="radixark/miles")) == 3
    assert [e.action for e in store.audit_entries(od.world.settings.database_url)].count("completion") == 1


def test_a_contributors_request_waits_and_is_approved_by_comment(od):
    c, _ = od.comment(f"/run-rocm {SUITE}", author="bob")
    assert od.dispatches() == []
    [waiting] = od.replies()
    assert "waiting for a maintainer" in waiting
    [check] = od.check_runs("MI350 run request")
    assert check["name"] == f"MI350 run request · {SUITE}" and check["conclusion"] == "action_required"
    assert check["actions"][0]["identifier"] == "approve-run"
    assert od.sim.reactions(od.repo, c["id"]) == ["eyes"]
    a, _ = od.comment("/approve-rocm", author="maint")
    [d] = od.dispatches()
    assert d["inputs"]["head_sha"] == od.pr.head_sha
    assert od.sim.reactions(od.repo, c["id"]) == ["eyes", "rocket"]
    assert "rocket" in od.sim.reactions(od.repo, a["id"])
    [check] = od.check_runs("MI350 run request")
    assert check["conclusion"] == "success" and "maint" in check["output"]["title"]
    assert "approved by @maint" in od.replies()[-1]


def test_a_contributors_request_is_approved_by_the_button(od):
    od.comment(f"/run-rocm {SUITE}", author="bob")
    [check] = od.check_runs("MI350 run request")
    od.click(check["id"], sender="reader")
    assert od.dispatches() == []
    assert "only maintainers can approve this run" in od.replies()[-1]
    od.click(check["id"], sender="maint")
    [d] = od.dispatches()
    assert d["inputs"]["suite"] == SUITE


def test_a_push_makes_a_pending_request_stale(od):
    od.comment(f"/run-rocm {SUITE}", author="bob")
    [check] = od.check_runs("MI350 run request")
    od.push({"tests/e2e/test_new.py": "x = 1\n"})
    [check] = od.check_runs("MI350 run request")
    assert check["conclusion"] == "cancelled" and check["output"]["title"] == "Stale"
    assert "will not run" in od.replies()[-1]
    od.comment("/approve-rocm", author="maint")
    od.click(check["id"], sender="maint")
    assert od.dispatches() == []
    [request] = store.requests_for_pull(od.world.settings.database_url, "radixark/miles", od.pr.number)
    assert request.status == "stale"


def test_deny_closes_pending_requests_with_the_reason(od):
    od.comment(f"/run-rocm {SUITE}", author="bob")
    od.comment("/deny-rocm `@radixark/everyone` too costly", author="maint")
    [check] = od.check_runs("MI350 run request")
    assert check["conclusion"] == "cancelled" and "Refused by @maint" == check["output"]["title"]
    reply = od.replies()[-1]
    assert "too costly" in reply and "``@radixark/everyone``" not in reply.replace("`` `", "``")
    od.comment("/approve-rocm", author="maint")
    assert od.dispatches() == []


def test_status_lists_the_requests(od):
    od.comment(f"/run-rocm {SUITE}", author="bob")
    od.comment("/rocm-status", author="reader")
    assert f"`{SUITE}`" in od.replies()[-1] and "pending" in od.replies()[-1]


def test_the_audit_log_is_printed_and_shown_on_the_status_page(od):
    import json
    import os
    import subprocess

    from tests.conftest import CLI

    od.comment(f"/run-rocm {SUITE}", author="bob")
    od.comment("/approve-rocm", author="maint")
    env = {**os.environ, "DATABASE_URL": od.world.settings.database_url,
           "CI_REGISTRAR_DATA_DIR": str(od.world.settings.data_dir)}
    out = subprocess.run([CLI, "audit", "--repo", "radixark/miles", "--pr", str(od.pr.number), "--format", "json"],
                         env=env, capture_output=True, text=True, check=True).stdout
    entries = json.loads(out)
    assert [e["action"] for e in entries][::-1] == ["command", "request", "command", "approval", "dispatch"]
    dispatch = entries[0]
    assert dispatch["actor"] == "maint" and dispatch["suite"] == SUITE and dispatch["head_sha"] == od.pr.head_sha
    assert dispatch["run_id"] == od.dispatches()[0]["run_id"] and dispatch["cost_gpu_hours"] == 3.1
    text = subprocess.run([CLI, "audit"], env=env, capture_output=True, text=True, check=True).stdout
    assert "approval  @maint" in text
    from tests.signin_support import sign_in

    client = od.world.client
    sign_in(client, od.world.flask, "maint", ["radixark/miles"], [od.world.installation.id])
    page = client.get("/").data.decode()
    assert SUITE in client.get("/audit").data.decode()
    assert "On-demand runs" in page and "dispatch" in page and SUITE in page


def test_requests_on_postgresql_keep_one_run_in_flight(pg_url):
    """The partial unique index and compare-and-set hold on PostgreSQL too, under racing threads."""
    import threading

    from bot.store.measurements import ensure_store

    ensure_store(pg_url)
    made = []
    for comment_id in (1, 2, 3, 4):
        request, created = store.create_request(
            pg_url, repository="acme/race", pull_number=7, head_sha="a" * 40, suite=SUITE,
            details={"requested": []}, requester="bob", comment_id=comment_id, status="approved",
            cost_gpu_hours=1.0, dispatch_repository="acme/race", workflow="w.yml")
        assert created
        made.append(request)
    assert store.create_request(pg_url, repository="acme/race", pull_number=7, head_sha="a" * 40, suite=SUITE,
                                details={}, requester="bob", comment_id=1, status="approved", cost_gpu_hours=1.0,
                                dispatch_repository="acme/race", workflow="w.yml")[1] is False
    wins = []

    def claim(request):
        if store.transition(pg_url, request.id, ["approved"], "dispatching", dispatched_at=store.now()):
            wins.append(request.id)

    threads = [threading.Thread(target=claim, args=(r,)) for r in made]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(wins) == 1
    assert store.in_flight(pg_url, "acme/race", 7, SUITE, "a" * 40).id == wins[0]
    assert store.gpu_hours_since(pg_url, "acme/race", store.now() - store.REQUEST_TTL) == 1.0
    assert store.claim_step(pg_url, "k", "reply") and not store.claim_step(pg_url, "k", "reply")


def test_a_warm_maintainer_command_costs_eight_github_calls(od):
    """Pinned: the PR's check has read the head; the command then needs its head, the trusted
    configuration, the permission, the dispatch, and the four writes the PR sees."""
    od.world.deliver(od.sim.webhook("pull_request", "opened", app=od.world.app, repo=od.repo, pull=od.pr, sender="bob"))
    od.world.drain()
    before = len(od.sim.requests_log)
    od.comment(f"/run-rocm {SUITE}", author="maint")
    calls = [r["operation"] for r in od.sim.requests_log[before:]]
    assert calls == ["pulls/get", "reactions/create-for-issue-comment", "repos/get-content",
                     "repos/get-collaborator-permission-level", "actions/create-workflow-dispatch", "checks/create",
                     "reactions/create-for-issue-comment", "issues/create-comment"]


def test_a_comment_that_is_not_a_command_costs_no_call(od):
    before = len(od.sim.requests_log)
    od.comment("LGTM, but can someone /run-rocm this later?", author="maint")
    assert od.sim.requests_log[before:] == []


def test_without_run_details_the_run_is_found_by_its_name(github_sim, tmp_path, monkeypatch):
    """GitHub Enterprise Server 3.17-3.19 answer a dispatch with 204: the App lists the runs and finds
    its own by the run-name the shipped workflow sets (suite and head SHA), then completes it."""
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    od = build_ondemand(github_sim, tmp_path)
    od.sim.dispatch_run_details = False
    od.repo.workflows.clear()
    od.repo.add_workflow("rocm-on-demand.yml", run_name="MI350 · ${{ inputs.suite }} · PR #${{ inputs.pull_number }}"
                                                        " · ${{ inputs.head_sha }}")
    other = od.sim.add_workflow_run(od.repo, "rocm-on-demand.yml", event="workflow_dispatch", status="queued",
                                    conclusion=None)  # someone else's run, dispatched by hand
    od.comment(f"/run-rocm {SUITE}", author="maint")
    [d] = od.dispatches()
    [request] = store.requests_for_pull(od.world.settings.database_url, "radixark/miles", od.pr.number)
    assert request.workflow_run_id == d["run_id"] != other["id"]
    assert f"/actions/runs/{d['run_id']}" in od.replies()[-1]
    od.sim.complete_run(d["run_id"], conclusion="success", jobs=[{"name": "mi350", "labels": ["mi350"], "log":
                        "2026-12-01T04:05:06.1234567Z [1/1] tests/e2e/test_new.py  PASS  elapsed=80s\n"}])
    od.world.deliver(od.sim.webhook("workflow_run", "completed", app=od.world.app, repo=od.repo, run=d["run_id"]))
    od.world.drain()
    [run] = od.check_runs("MI350 · ")
    assert run["conclusion"] == "success"


def test_a_run_whose_completion_never_arrived_is_settled_by_the_next_command(od):
    od.comment(f"/run-rocm {SUITE}", author="maint")
    [first] = od.dispatches()
    od.sim.complete_run(first["run_id"], conclusion="success", jobs=[{"name": "mi350", "labels": ["mi350"], "log":
                        "2026-12-01T04:05:06.1234567Z [1/1] tests/e2e/test_new.py  PASS  elapsed=80s\n"}])
    # no workflow_run webhook: it was lost
    od.comment(f"/run-rocm {SUITE}", author="maint")
    assert len(od.dispatches()) == 2
    checks = sorted(od.check_runs("MI350 · "), key=lambda r: r["id"])
    assert checks[0]["conclusion"] == "success" and checks[1]["status"] == "in_progress"


def test_a_dispatch_whose_worker_died_does_not_block_the_suite_for_ever(od):
    import datetime as dt

    url = od.world.settings.database_url
    request, _ = store.create_request(url, repository="radixark/miles", pull_number=od.pr.number,
                                      head_sha=od.pr.head_sha, suite=SUITE, details={"requested": []},
                                      requester="maint", comment_id=None, status="approved", cost_gpu_hours=1.0,
                                      dispatch_repository="radixark/miles", workflow="rocm-on-demand.yml")
    assert store.transition(url, request.id, ["approved"], "dispatching",
                            dispatched_at=store.now() - dt.timedelta(minutes=5))
    od.comment(f"/run-rocm {SUITE}", author="maint")
    assert od.dispatches() == [] and "already running" in od.replies()[-1]  # maybe still dispatching
    store.update_request(url, request.id, dispatched_at=store.now() - dt.timedelta(minutes=11))
    od.comment(f"/run-rocm {SUITE}", author="maint")
    assert len(od.dispatches()) == 1
    assert store.get_request(url, request.id).status == "failed"


def test_the_workers_periodic_pass_expires_old_requests_everywhere(od):
    import datetime as dt

    from bot.ondemand.flow import sweep_expired
    from bot.store import service

    od.world.deliver(od.sim.webhook("installation", "created", app=od.world.app, installation=od.world.installation))
    od.world.drain()
    od.comment(f"/run-rocm {SUITE}", author="bob")
    url = od.world.settings.database_url
    [request] = store.requests_for_pull(url, "radixark/miles", od.pr.number)
    assert sweep_expired(od.world.queue.runtime.github, url, service.installation_for) == 0
    store.update_request(url, request.id, created_at=store.now() - dt.timedelta(days=8))
    assert sweep_expired(od.world.queue.runtime.github, url, service.installation_for) == 1
    assert store.get_request(url, request.id).status == "expired"
    [check] = od.check_runs("MI350 run request")
    assert check["conclusion"] == "cancelled" and check["output"]["title"] == "Expired"
    assert sweep_expired(od.world.queue.runtime.github, url, service.installation_for) == 0


# -- PR content is analysed in the bounded child only ------------------------------------------------
@pytest.fixture()
def no_parsing_here(monkeypatch):
    """ast.parse raises in this process (the worker's threads run here): only the analysis child may parse.

    The child is a fresh interpreter (bot/analysis.py), so the patch does not reach it.
    """
    import ast

    calls = []

    def refuse(*args, **kwargs):
        calls.append(args[1] if len(args) > 1 else kwargs.get("filename"))
        raise AssertionError("ast.parse on a worker thread: PR content must be analysed in the analysis child")

    monkeypatch.setattr(ast, "parse", refuse)
    return calls


def test_command_selection_parses_nothing_in_the_worker(od, no_parsing_here):
    od.comment(f"/run-rocm {SUITE}", author="maint")
    [d] = od.dispatches()
    assert d["inputs"]["suite"] == SUITE and "3.10 GPU-hours" in od.replies()[-1]
    od.comment(f"/run-rocm {SUITE} tests/e2e/megatron/test_qwen3_4B_ppo.py", author="maint")
    assert "has no ROCm registration in" in od.replies()[-1]
    assert "ROCm suites this PR can run on demand: `nightly-stage-c-4-gpu-mi350`" in od.replies()[-1]
    od.comment("/run-rocm nightly-stage-c-4-gpu-mi300", author="maint")
    assert "is not a ROCm suite" in od.replies()[-1]
    od.comment("/run-rocm `id`", author="maint")  # a grammar refusal lists the runnable suites too
    assert "ROCm suites this PR can run on demand" in od.replies()[-1]
    assert no_parsing_here == []


def test_the_patch_would_catch_a_worker_that_parses(no_parsing_here):
    # the child's side of a selection, run in this process as the worker once did: the patch trips
    from bot.ondemand.selection import analyse
    from checks.config import load_config
    from checks.tree import MemoryTree
    from tests.ondemand_support import CONFIG, ondemand_files

    config, _ = load_config(CONFIG)
    with pytest.raises(AssertionError, match="ast.parse on a worker thread"):
        analyse(MemoryTree(ondemand_files()), config=config, suite=SUITE, head_sha="0" * 40)
    assert no_parsing_here


def test_a_selection_past_the_analysis_limits_is_refused_with_the_limit(od, monkeypatch):
    from tests.fixtures.miles import test_file

    padded = "tests/e2e/test_padded.py"
    od.push({padded: test_file(f'register_rocm_ci(est_time=30, suite="{SUITE}", labels=["short"])') + "#" * 8000 + "\n"})
    monkeypatch.setenv("CI_REGISTRAR_LIMIT_FILE_BYTES", "4000")
    od.comment(f"/run-rocm {SUITE} {padded}", author="maint")
    od.comment(f"/run-rocm {SUITE}", author="maint")  # the whole suite holds the file too
    assert od.dispatches() == []
    for reply in od.replies()[-2:]:
        assert f"not dispatched: `{padded}` was not read at" in reply and "file_bytes" in reply, reply
