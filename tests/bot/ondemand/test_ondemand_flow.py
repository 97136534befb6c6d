"""/run-rocm end to end on the simulator: dispatch, approval by comment and by button, staleness, completion."""

from __future__ import annotations

import json

import pytest

from bot.store import ondemand as store

from tests import FIXTURES
from tests.fixtures.miles import test_file
from tests.ondemand_support import ALL_PASS_LOG, EXTRA_TEST, SUITE, build_ondemand
from tests.patience import PATIENCE
from tests.simulator.fixtures import github_sim  # noqa: F401


# where and how SUITE runs, as the default branch's CI (and sglang's nightly, its consumer) says
PLAN = {"runs_on": ["self-hosted", "amd", "mi350", "4gpu"], "shards": 1, "image": "rocm/sgl-dev:miles-rocm720-mi35x-{date}",
        "image_days": 7, "timeout_per_file_s": 1800, "job_timeout_min": 180,
        "runner_flags": ["--cadence", "nightly", "--continue-on-error"], "install": [], "env": [], "cache": "read-only"}


@pytest.fixture()
def od(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    return build_ondemand(github_sim, tmp_path)


def test_a_maintainers_command_dispatches_the_exact_head_at_once(od):
    c, _ = od.comment(f"/run-rocm {SUITE}", author="maint")
    [d] = od.dispatches()
    assert d["workflow"] == "rocm-on-demand.yml" and d["ref"] == "main"
    # where and how it runs: the job that runs it, sglang's nightly for miles (read at sglang's default
    # branch), on the runner of miles' own fleet with the GPUs it needs (sglang's pool is not miles')
    assert set(d["inputs"]) == {"suite", "head_sha", "pull_number", "test_files", "plan"}
    assert (d["inputs"]["suite"], d["inputs"]["head_sha"], d["inputs"]["pull_number"], d["inputs"]["test_files"]) == (
        SUITE, od.pr.head_sha, str(od.pr.number), "")
    assert json.loads(d["inputs"]["plan"]) == PLAN
    assert od.sim.reactions(od.repo, c["id"]) == ["eyes", "rocket"]
    [reply] = od.replies()
    assert "Dispatched" in reply and od.pr.head_sha in reply and "/actions/runs/" in reply
    # three enabled registrations of the suite at the head, est_time 90, 2400 and 300 s: each charged
    # what the runner lets it run, max(1800, 1.25 x est_time) = 1800 + 3000 + 1800 s on 4 GPUs
    assert "tests/e2e/test_new.py" in reply and EXTRA_TEST in reply and "test_disabled_rocm" not in reply
    assert "7.34 GPU-hours" in reply
    assert "`tests/e2e/test_new.py`: est_time=90, charged 1800 s, the runner's per-file timeout" in reply
    # the reply shows the plan, as `ci-registrar run-plan` prints it
    assert "Run plan:" in reply and "copied from `sgl-project/sglang:.github/workflows/nightly-test-amd-miles-rocm720.yml:34`" in reply
    assert "`python3 tests/ci/run_suite.py --hw rocm --suite nightly-stage-c-4-gpu-mi350 --cadence nightly " \
           "--continue-on-error --timeout-per-file 1800`" in reply
    [run] = od.check_runs("MI350 · ")
    assert run["name"] == f"MI350 · {SUITE}" and run["status"] == "in_progress" and run["head_sha"] == od.pr.head_sha
    actions = [e.action for e in store.audit_entries(od.world.settings.database_url)]
    assert actions[::-1] == ["command", "request", "dispatch"]


def test_listed_files_are_passed_and_costed(od):
    od.comment(f"/run-rocm {SUITE} tests/e2e/test_new.py", author="admin1")
    [d] = od.dispatches()
    assert d["inputs"]["test_files"] == "tests/e2e/test_new.py"
    [reply] = od.replies()
    assert "2.00 GPU-hours" in reply and EXTRA_TEST not in reply  # 1800 s, not est_time's 90 s, on 4 GPUs


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
    from bot.durations.export import export_records

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
    before = len(od.sim.requests_log)
    a, _ = od.comment("/approve-rocm", author="maint")
    # an approval reads no selection: its one request is the configuration and the comment only
    [asked] = [r["variables"] for r in od.sim.requests_log[before:] if r["operation"] == "graphql"]
    assert sorted(asked.values()) == sorted([".github/ci-registrar.yml", a["node_id"], "miles", "radixark", "refs/heads/main"])
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
    [request] = store.requests_for_pull(od.world.settings.database_url, "radixark/miles", od.pr.number)
    [refusal] = [e for e in store.audit_entries(od.world.settings.database_url, repository="radixark/miles")
                 if e.action == "refusal" and e.actor == "reader"]
    assert (refusal.detail, refusal.request_id, refusal.suite, refusal.head_sha) == (
        "button click by role read: not a maintainer", request.id, SUITE, od.pr.head_sha)
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
    out = subprocess.run([CLI, "audit", "--repository", "radixark/miles", "--pr", str(od.pr.number), "--format", "json"],
                         env=env, capture_output=True, text=True, check=True).stdout
    entries = json.loads(out)
    assert [e["action"] for e in entries][::-1] == ["command", "request", "command", "approval", "dispatch"]
    dispatch = entries[0]
    assert dispatch["actor"] == "maint" and dispatch["suite"] == SUITE and dispatch["head_sha"] == od.pr.head_sha
    assert dispatch["run_id"] == od.dispatches()[0]["run_id"] and dispatch["cost_gpu_hours"] == 7.34
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
            details={"requested": []}, requester="bob", comment_id=comment_id, event="request_at_once",
            audit={"actor": "bob"}, cost_gpu_hours=1.0, dispatch_repository="acme/race", workflow="w.yml")
        assert created
        made.append(request)
    assert store.create_request(pg_url, repository="acme/race", pull_number=7, head_sha="a" * 40, suite=SUITE,
                                details={}, requester="bob", comment_id=1, event="request_at_once", audit={},
                                cost_gpu_hours=1.0, dispatch_repository="acme/race", workflow="w.yml")[1] is False
    wins = []

    def claim(request):
        # the budget's claim: under the budget lock, and the partial unique index admits one in flight
        if store.reserve(pg_url, request.id, since=store.now() - store.REQUEST_TTL, limit=100.0,
                         dispatched_at=store.now()).outcome == store.RESERVED:
            wins.append(request.id)

    threads = [threading.Thread(target=claim, args=(r,)) for r in made]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE)
    assert len(wins) == 1
    assert store.in_flight(pg_url, "acme/race", 7, SUITE, "a" * 40).id == wins[0]
    assert store.gpu_hours_since(pg_url, "acme/race", store.now() - store.REQUEST_TTL) == 1.0
    assert store.claim_step(pg_url, "k", "reply") and not store.claim_step(pg_url, "k", "reply")


def test_a_warm_maintainer_command_costs_eight_github_calls(od):
    """Pinned: the PR's check has read the head; the command then needs its head, one GraphQL
    request (bot.ondemand.pull.Pull.read_trusted: the trusted configuration with the default
    branch's commit, whose CI the run plan copies, so no ref request; the comment as it is now, so
    a deleted or edited command acts on nothing (issue 25); the default branch's workflows and root
    listing, so no recursive listing of it; the contracts), the permission, the dispatch, and the
    four writes the PR sees. The external consumer was kept by the check."""
    od.world.deliver(od.sim.webhook("pull_request", "opened", app=od.world.app, repo=od.repo, pull=od.pr, sender="bob"))
    od.world.drain()
    before = len(od.sim.requests_log)
    od.comment(f"/run-rocm {SUITE}", author="maint")
    calls = [r["operation"] for r in od.sim.requests_log[before:]]
    assert calls == ["pulls/get", "reactions/create-for-issue-comment", "graphql",
                     "repos/get-collaborator-permission-level", "actions/create-workflow-dispatch", "checks/create",
                     "reactions/create-for-issue-comment", "issues/create-comment"]
    [d] = od.dispatches()
    assert d["ref"] == "main" and json.loads(d["inputs"]["plan"]) == PLAN


def test_a_command_that_is_the_first_delivery_for_its_pr_costs_ten_github_calls(od):
    """Pinned (issue 38: at most 10): no check has read the head yet, and this process has not read
    the repository before. Beyond the warm command's calls: the head's listing, and one bulk read
    of the suite's test files. The first GraphQL request read, beside the configuration, what
    its defaults name (bot.ondemand.pull.ReadAhead): the head's contract, the default branch's
    contract and workflows, the external consumer's workflow. No file is read on its own."""
    before = len(od.sim.requests_log)
    od.comment(f"/run-rocm {SUITE}", author="maint")
    calls = [r["operation"] for r in od.sim.requests_log[before:] if r["operation"] != "apps/create-installation-access-token"]
    assert calls == ["pulls/get", "reactions/create-for-issue-comment", "graphql", "git/get-tree", "graphql",
                     "repos/get-collaborator-permission-level", "actions/create-workflow-dispatch", "checks/create",
                     "reactions/create-for-issue-comment", "issues/create-comment"]
    [d] = od.dispatches()
    assert json.loads(d["inputs"]["plan"]) == PLAN


def test_a_wrong_read_ahead_costs_reads_not_another_plan(od, monkeypatch):
    """Differential: when the first request guessed wrong (a configuration that names other paths
    and consumers than this process remembers), the command reads what the guess missed (the
    default branch's listing, the contract, the consumer) and plans and replies exactly as when the
    guess was right. The configuration it parsed is remembered for the next command."""
    from bot.ondemand import pull as pull_module

    wrong = pull_module.ReadAhead(contract=("nowhere/run_suite.py",), workflows_dir="nowhere", consumers=())
    monkeypatch.setattr(pull_module.ReadAhead, "remembered", classmethod(lambda cls, client, repo: wrong))
    before = len(od.sim.requests_log)
    od.comment(f"/run-rocm {SUITE}", author="maint")
    calls = [r["operation"] for r in od.sim.requests_log[before:] if r["operation"] != "apps/create-installation-access-token"]
    assert calls.count("git/get-tree") == 2 and "repos/get-content" in calls  # the default branch listed, the consumer read
    [d] = od.dispatches()
    assert json.loads(d["inputs"]["plan"]) == PLAN
    [reply] = od.replies()
    assert "7.34 GPU-hours" in reply and "Run plan:" in reply and EXTRA_TEST in reply
    monkeypatch.undo()
    from checks.config.schema import load_config

    seen = []
    monkeypatch.setattr(pull_module.ReadAhead, "remember", lambda self, client, repo: seen.append(self))
    od.comment("/rocm-status", author="maint")
    repo = od.sim.repo(od.repo)
    config, _ = load_config(repo.files(repo.branches["main"])[".github/ci-registrar.yml"])
    assert seen == [pull_module.ReadAhead.of(config)]


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
    od.sim.dispatch_max_inputs = 10  # and at most 10 inputs: the shipped workflow's 8 fit
    other = od.sim.add_workflow_run(od.repo, "rocm-on-demand.yml", event="workflow_dispatch", status="queued",
                                    conclusion=None)  # someone else's run, dispatched by hand
    od.comment(f"/run-rocm {SUITE}", author="maint")
    [d] = od.dispatches()
    [request] = store.requests_for_pull(od.world.settings.database_url, "radixark/miles", od.pr.number)
    assert request.workflow_run_id == d["run_id"] != other["id"]
    assert f"/actions/runs/{d['run_id']}" in od.replies()[-1]
    od.sim.complete_run(d["run_id"], conclusion="success", jobs=[{"name": "mi350", "labels": ["mi350"], "log": ALL_PASS_LOG}])
    od.world.deliver(od.sim.webhook("workflow_run", "completed", app=od.world.app, repo=od.repo, run=d["run_id"]))
    od.world.drain()
    [run] = od.check_runs("MI350 · ")
    assert run["conclusion"] == "success"


def test_a_run_whose_completion_never_arrived_is_settled_by_the_next_command(od):
    od.comment(f"/run-rocm {SUITE}", author="maint")
    [first] = od.dispatches()
    od.sim.complete_run(first["run_id"], conclusion="success", jobs=[{"name": "mi350", "labels": ["mi350"], "log": ALL_PASS_LOG}])
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
                                      requester="maint", comment_id=None, event="request_at_once", audit={},
                                      cost_gpu_hours=1.0, dispatch_repository="radixark/miles",
                                      workflow="rocm-on-demand.yml")
    assert store.reserve(url, request.id, since=store.now() - dt.timedelta(hours=24), limit=64.0,
                         dispatched_at=store.now() - dt.timedelta(minutes=5)).outcome == store.RESERVED
    od.comment(f"/run-rocm {SUITE}", author="maint")
    assert od.dispatches() == [] and "already running" in od.replies()[-1]  # maybe still dispatching
    store.update_request(url, request.id, dispatched_at=store.now() - dt.timedelta(minutes=11))
    od.comment(f"/run-rocm {SUITE}", author="maint")
    assert len(od.dispatches()) == 1
    assert store.get_request(url, request.id).status == "failed"


def test_the_workers_periodic_pass_expires_old_requests_everywhere(od):
    import datetime as dt

    from bot.ondemand.housekeeping import sweep_expired
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


# -- where and how a suite runs: runner shape, shards, the runner's own options ---------------------
MILES_RUNNER = (FIXTURES / "targets" / "miles" / "ci-runner-778227d"
                / "run_suite.py").read_text()
EIGHT = "nightly-stage-c-8-gpu-mi350"
SHARDED = f"""\
dispatch:
  {EIGHT}:
    workflow: rocm-on-demand.yml
    shards: 2
"""
BIG_TEST = "tests/e2e/megatron/test_qwen3_30B_a3b_8gpu.py"
PPO_TEST = "tests/e2e/megatron/test_qwen3_4B_ppo.py"


@pytest.fixture()
def sharded(github_sim, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    # miles' real runner (its options are read statically) and a second 8-GPU registration
    return build_ondemand(github_sim, tmp_path, config=SHARDED, extra={
        "tests/ci/run_suite.py": MILES_RUNNER,
        BIG_TEST: test_file(f'register_rocm_ci(est_time=1200, suite="{EIGHT}", labels=["megatron"])')})


def _eight_gpu_files(od) -> dict[str, float]:
    from bot.ondemand.pull import selected_rows

    [request] = store.requests_for_pull(od.world.settings.database_url, "radixark/miles", od.pr.number)
    return dict(selected_rows(request))


def test_an_8_gpu_suite_in_two_shards_dispatches_once_and_both_shards_land_in_one_check_run(sharded):
    od = sharded
    od.comment(f"/run-rocm {EIGHT}", author="maint")
    [d] = od.dispatches()  # once, for both shards
    # the job that runs it (this deployment's nightly-rocm.yml): its pool, its two partitions, its flags
    plan = json.loads(d["inputs"]["plan"])
    assert (plan["runs_on"], plan["shards"], plan["runner_flags"], plan["job_timeout_min"]) == (
        ["self-hosted", "amd", "mi350", "8gpu"], 2, ["--cadence", "nightly", "--continue-on-error"], 240)
    files = _eight_gpu_files(od)
    assert len(files) == 2 and files[BIG_TEST] == 1200
    [other] = [f for f in files if f != BIG_TEST]
    # cost: 8 GPUs x 2 shards x the longer shard (each file on its own shard, charged its per-file
    # timeout: max(1800, 1.25 x 1200) = 1800 s)
    [reply] = od.replies()
    assert "8.00 GPU-hours" in reply and "2 shards of 8 GPUs" in reply
    [started] = od.check_runs("MI350 · ")
    assert "Runs on `self-hosted`, `amd`, `mi350`, `8gpu` in 2 parallel shards." in started["output"]["summary"]
    # each shard's job runs its partition and prints its own [i/n] lines
    od.finish_run(d, [f"2026-12-01T04:25:06.1234567Z [1/1] {BIG_TEST}  PASS  elapsed=1100s\n",
                      f"2026-12-01T04:20:06.1234567Z [1/1] {other}  FAIL  elapsed=760s exit=1\n"],
                  conclusion="failure", shard_conclusions=["success", "failure"])
    jobs = od.sim.workflow_runs(od.repo)[-1]["jobs"]
    assert [j["name"] for j in jobs] == ["Validate the request", "MI350 shard 0 / run", "MI350 shard 1 / run"]
    [run] = od.check_runs("MI350 · ")
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    assert run["output"]["title"] == "failure: 1 of 2 test files passed"
    summary = run["output"]["summary"]
    assert summary.count("| `tests/") == 2 and BIG_TEST in summary and other in summary  # one table, both shards
    from bot.durations.export import export_records

    rows = export_records(od.world.settings.database_url, repository="radixark/miles")
    assert {(r["file"], r["elapsed_s"], r["outcome"]) for r in rows} == {(BIG_TEST, 1100.0, "PASS"), (other, 760.0, "FAIL")}
    assert len({r["job_id"] for r in rows}) == 2 and {r["run_id"] for r in rows} == {d["run_id"]}
    assert {r["hardware"] for r in rows} == {"MI355X"} and {r["suite"] for r in rows} == {EIGHT}


def test_a_dispatch_the_shipped_workflow_does_not_declare_is_refused_by_github(github_sim, tmp_path, monkeypatch):
    # The simulator checks a dispatch against the shipped workflow's declared inputs, as GitHub does.
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    config = f"dispatch:\n  {SUITE}:\n    workflow: rocm-on-demand.yml\n    inputs: {{suite: suite, head_sha: head_sha, pull_number: pull_number, repo: repository}}\n"
    od = build_ondemand(github_sim, tmp_path, config=config)
    od.comment(f"/run-rocm {SUITE}", author="maint")
    assert od.dispatches() == []
    assert 'Unexpected inputs provided: ["repo"]' in od.replies()[-1]


def test_a_shard_that_reported_nothing_leaves_its_files_visible(sharded):
    od = sharded
    od.comment(f"/run-rocm {EIGHT}", author="maint")
    [d] = od.dispatches()
    # shard 1's machine died before the runner printed anything
    od.finish_run(d, [f"[1/1] {BIG_TEST}  PASS  elapsed=1100s\n", "Error: the runner lost communication\n"],
                  conclusion="failure", shard_conclusions=["success", "failure"])
    [other] = [f for f in _eight_gpu_files(od) if f != BIG_TEST]
    [run] = od.check_runs("MI350 · ")
    assert run["output"]["title"] == "failure: 1 of 2 test files passed"
    assert f"| `{other}` | NO RESULT |  | 800 s | not in any job's log |" in run["output"]["summary"]
    from bot.durations.export import export_records

    assert [r["file"] for r in export_records(od.world.settings.database_url, repository="radixark/miles")] == [BIG_TEST]


def test_a_shard_whose_log_answers_404_never_yields_a_successful_check(sharded):
    """The issue's case: one shard's log is gone (404). The run itself succeeded, but its results
    are missing: the check concludes neutral and names the shard, never "success"."""
    od = sharded
    od.comment(f"/run-rocm {EIGHT}", author="maint")
    [d] = od.dispatches()
    inputs = d["inputs"]
    jobs = [{"name": "Validate the request", "labels": ["ubuntu-latest"], "conclusion": "success", "log": "ok\n"},
            {"name": "MI350 shard 0 / run", "labels": ["self-hosted", "amd", "mi350", "8gpu"], "conclusion": "success",
             "log": f"[1/1] {BIG_TEST}  PASS  elapsed=1100s\n"},
            {"name": "MI350 shard 1 / run", "labels": ["self-hosted", "amd", "mi350", "8gpu"], "conclusion": "success", "log": None}]
    assert inputs["suite"] == EIGHT
    od.sim.complete_run(d["run_id"], conclusion="success", jobs=jobs)
    od.world.deliver(od.sim.webhook("workflow_run", "completed", app=od.world.app, repo=od.repo, run=d["run_id"]))
    od.world.drain()
    [run] = od.check_runs("MI350 · ")
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert run["output"]["title"] == "neutral: 1 of 2 test files passed; 1 shard log not read"
    summary = run["output"]["summary"]
    assert "MI350 shard 1 / run" in summary and "404" in summary
    assert f"| `{PPO_TEST}` | NO RESULT |  | 800 s | its shard's log could not be read (MI350 shard 1 / run) |" in summary
    [entry] = [e for e in store.audit_entries(od.world.settings.database_url) if e.action == "completion"]
    assert entry.detail.startswith("neutral: 1 of 2 passed; 1 shard log not read")


def test_a_log_that_keeps_answering_500_ends_neutral_after_bounded_retries(sharded):
    """GitHub keeps failing one shard's log download: the job retries (bounded: its attempts,
    with backoff), then the check ends neutral with the reason, never left in progress."""
    od = sharded
    od.comment(f"/run-rocm {EIGHT}", author="maint")
    [d] = od.dispatches()
    od.finish_run(d, [f"[1/1] {BIG_TEST}  PASS  elapsed=1100s\n", f"[1/1] {PPO_TEST}  PASS  elapsed=700s\n"],
                  deliver=False)
    jobs = od.sim.workflow_runs(od.repo)[-1]["jobs"]
    shard1 = next(j for j in jobs if j["name"] == "MI350 shard 1 / run")
    fault = od.sim.inject_fault("GET", rf"/actions/jobs/{shard1['id']}/logs", "500", times=None)
    od.world.deliver(od.sim.webhook("workflow_run", "completed", app=od.world.app, repo=od.repo, run=d["run_id"]))
    od.world.drain()
    [run] = od.check_runs("MI350 · ")
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert "MI350 shard 1 / run" in run["output"]["summary"] and "500" in run["output"]["summary"]
    assert 5 <= fault.hits <= 5 * 3  # every attempt of the job (5) asked, each with its few HTTP retries
    # what was read is kept: shard 0's duration is stored
    from bot.durations.export import export_records

    assert [r["file"] for r in export_records(od.world.settings.database_url, repository="radixark/miles")] == [BIG_TEST]


def test_the_plan_is_the_default_branchs_whatever_the_pr_head_changes(github_sim, tmp_path, monkeypatch):
    """A PR that rewrites the runner (new flags, no partition options) and the workflows changes
    neither the flags nor the shards nor the pool: they are read on the default branch."""
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    od = build_ondemand(github_sim, tmp_path, config=SHARDED, extra={
        "tests/ci/run_suite.py": MILES_RUNNER,
        BIG_TEST: test_file(f'register_rocm_ci(est_time=1200, suite="{EIGHT}", labels=["megatron"])')})
    od.push({"tests/ci/run_suite.py": MILES_RUNNER.replace('"--auto-partition-size"', '"--auto-partition-count"')
             .replace('"--enable-retry"', '"--yolo"'),
             ".github/workflows/nightly-rocm.yml": "on: [pull_request]\njobs:\n  x:\n    runs-on: linux-mi35x-gpu-1\n"
                                                   "    steps:\n      - run: python3 tests/ci/run_suite.py --hw rocm "
                                                   f"--suite {EIGHT} --yolo --auto-partition-size 8\n"})
    od.comment(f"/run-rocm {EIGHT}", author="maint")
    [d] = od.dispatches()
    plan = json.loads(d["inputs"]["plan"])
    assert (plan["runs_on"], plan["shards"], plan["runner_flags"]) == (
        ["self-hosted", "amd", "mi350", "8gpu"], 2, ["--cadence", "nightly", "--continue-on-error"])


def test_a_request_stored_before_plans_were_kept_is_not_dispatched_unplanned(od):
    """A request made by an older App has no run plan: it is not dispatched with guesses (its
    runner, timeouts and cost were never read from the target's CI); the requester is told to ask again."""
    url = od.world.settings.database_url
    store.create_request(url, repository="radixark/miles", pull_number=od.pr.number, head_sha=od.pr.head_sha,
                         suite=SUITE, details={"requested": [], "selected": [["tests/e2e/test_new.py", 90.0]], "gpus": 4},
                         requester="bob", comment_id=None, event="request", audit={}, cost_gpu_hours=0.1,
                         dispatch_repository="radixark/miles", workflow="rocm-on-demand.yml")
    od.comment("/approve-rocm", author="maint")
    assert od.dispatches() == []
    assert "made before run plans were kept" in od.replies()[-1] and "`/run-rocm` again" in od.replies()[-1]


# -- PR content is analysed in the bounded child only ------------------------------------------------
@pytest.fixture()
def no_parsing_here(monkeypatch):
    """ast.parse raises in this process (the worker's threads run here): only the analysis child may parse.

    The child is a fork of the analysis server, an interpreter of its own (bot/analysis/server.py),
    so the patch does not reach it.
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
    assert d["inputs"]["suite"] == SUITE and "7.34 GPU-hours" in od.replies()[-1]
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
    from checks.config.schema import load_config
    from checks.scanning.tree import MemoryTree
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


def test_the_budget_refusal_shows_the_cost_notes_at_the_command_and_at_the_dispatch(github_sim, tmp_path, monkeypatch):
    """The budget's refusal is one text (bot/ondemand/texts.py over_budget): refused at once, or by
    the dispatch when the budget was spent while the request waited, it lists each file's charge."""
    from tests.ondemand_support import CONFIG

    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")
    od = build_ondemand(github_sim, tmp_path, config=CONFIG.replace("daily_gpu_hours: 64", "daily_gpu_hours: 10"))
    od.comment(f"/run-rocm {SUITE}", author="bob")  # 7.20 h, waits
    od.comment("/run-rocm nightly-stage-c-8-gpu-mi350", author="maint")  # 8.00 h, dispatched at once
    od.comment(f"/run-rocm {SUITE}", author="triager")  # answered at once: 8.00 + 7.20 > 10
    od.comment("/approve-rocm", author="maint")  # bob's request: refused by the dispatch's reservation
    refusals = [r for r in od.replies() if "daily GPU-hours have been dispatched" in r]
    assert [r.split()[0] for r in refusals] == ["@triager", "@maint"]
    early, at_dispatch = refusals
    [request] = [r for r in store.requests_for_pull(od.world.settings.database_url, "radixark/miles", od.pr.number)
                 if r.requester == "bob"]
    notes = request.details["cost_notes"]
    assert notes and all(n in early and n in at_dispatch for n in notes)
    assert "\n\nCost: " in early and "\n\nCost: " in at_dispatch
