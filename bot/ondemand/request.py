"""The request stage: a command or a click makes, approves, refuses or reports on-demand requests.

Each event's use case reads what GitHub and the default branch say now, decides, and returns what
the PR is to be told (`Answer`): `on_comment` (/run-rocm, /approve-rocm, /deny-rocm, /rocm-status),
`on_approve_button` (the request's "Approve run" button) and `on_summary_button` (the summary's
"Run ROCm suite" buttons, a maintainer's `/run-rocm SUITE`). Every refusal is decided here.

Only a human's new comment on an open pull request is read; its sender must be its author. A
comment that is not a command costs no GitHub call. An approval holds for the head SHA it was
given for: the button is checked like a comment, the clicker's permission asked of GitHub at the
click, and the PR's head now must be the request's.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.infra import payloads
from bot.ondemand import grammar, texts
from bot.ondemand.cost import cost_selection
from bot.ondemand.dispatch import dispatch, follow_through, running_for
from bot.ondemand.housekeeping import expire_old, tidy
from bot.ondemand.permissions import Authority, authority
from bot.ondemand.pull import (RETRYABLE, Answer, Pull, budget_used, close_request_check, cost_notes, iso_now, once,
                               react, requested_files, selected_rows, tolerate_gone, vanished)
from bot.ondemand.seen import parse_time, unseen_head
from bot.ondemand.selection import Selection
from bot.store import ondemand as store
from checks.reporting.render import ACTION_PREFIX, CHECK_RUN_NAME, suggestion_in_summary
from checks.target.run_cost import Costing


def details(requested: list[str], selection: Selection, costing: Costing, hardware: str) -> dict:
    """What a request keeps: the files asked for, each selected file with its est_time as
    registered, how the budget costed each (checks/target/run_cost.py) and the reply's notes on that,
    and where and how it runs (checks/target/dispatch_plan.py): the dispatch's inputs (`plan`) and the
    plan as `run-plan --format json` shows it (`run_plan`), which the replies and the completed
    check run read (its per-file timeout judges each file)."""
    return {"requested": list(requested), "selected": [[f.file, f.est_time] for f in costing.files],
            "costed": costing.as_details(), "cost_notes": notes(selection, costing),
            "gpus": selection.gpus, "plan": selection.plan.inputs(),
            "run_plan": selection.plan.as_json(costing.gpu_hours)}


def notes(selection: Selection, costing: Costing) -> list[str]:
    """The replies' notes on a selection's cost: each file's charge, then what the selection says."""
    return costing.notes() + list(selection.notes)


def open_request_check(pull: Pull, request, comment_url: str | None) -> None:
    """The "MI350 run request · <suite>" check run with its Approve button (created once)."""
    def create():
        run = pull.client.create_check_run(pull.repo, {
            "name": texts.REQUEST_CHECK.format(suite=request.suite), "head_sha": request.head_sha,
            "status": "completed", "conclusion": "action_required", "completed_at": iso_now(),
            "external_id": f"rocm-request:{request.id}", "details_url": comment_url or pull.data.get("html_url"),
            "output": texts.request_check_output(request.requester, request.suite, request.head_sha,
                                                 selected_rows(request), request.cost_gpu_hours),
            "actions": [texts.APPROVE_ACTION]})
        store.update_request(pull.store_url, request.id, request_check_run_id=run["id"])
        request.request_check_run_id = run["id"]

    once(pull, f"request:{request.id}", "request-check", create)


# -- a comment ------------------------------------------------------------------------------------
def is_human_command_comment(data: dict) -> bool:
    """The comment is a new one, by a person, sent by that person, on an open pull request."""
    comment, issue = data.get("comment") or {}, data.get("issue") or {}
    user = comment.get("user") or {}
    login = str(user.get("login") or "")
    if not issue.get("pull_request"):
        return False  # a comment on an issue
    if user.get("type") != "User" or comment.get("performed_via_github_app") or login.endswith("[bot]") or not login:
        return False  # bots and Apps (this one included) never command anything
    if (data.get("sender") or {}).get("login") != login:
        return False  # someone else acting on the comment
    return issue.get("state") == "open"


def on_comment(job, data: dict) -> Answer | None:
    """An `issue_comment` (created): the command it holds, if any, carried out; what to post."""
    if not is_human_command_comment(data):
        return None
    comment = data["comment"]
    first = grammar.parse(comment.get("body"))
    if first is None or (isinstance(first, grammar.Command) and first.word == grammar.CALIBRATE):
        return None  # not an on-demand command: no reaction, no call (the calibration handler takes its own)
    repo = data["repository"]["full_name"]
    number = int(data["issue"]["number"])
    login = comment["user"]["login"]
    client = job.client
    key = f"comment:{repo}:{comment['id']}"
    pr_data = tolerate_gone(lambda: client.pull(repo, number))
    if pr_data is None:  # the pull request (or its repository) is gone: nothing to act on or answer
        vanished(job, repo, number, actor=login, detail=f"comment {comment['id']}: the pull request is gone")
        return None
    pull = Pull(job, repo, number, pr_data, config=None)
    if not pull.open:
        return None  # closed while the delivery waited
    # The eyes acknowledge the command at once, before anything is read or decided (the one post a
    # use case takes itself); the answer follows when it is decided.
    react(pull, comment["id"], "eyes")
    answer = Answer(pull)
    with answer.kept():
        # an approval or a denial reads no selection (the request keeps its plan): its request reads
        # the configuration and the comment only
        decides = isinstance(first, grammar.Command) and first.word in (grammar.APPROVE, grammar.DENY)
        problems = pull.read_trusted(data["repository"].get("default_branch") or "main", comment, ahead=not decides)
        if pull.config is None:
            answer.refuse(comment["id"], key, texts.config_invalid(login, problems))
            return answer
        paths = pull.config.paths
        command = grammar.parse(comment.get("body"), roots=paths.test_roots, pattern=paths.test_pattern)
        if isinstance(command, grammar.Refusal):
            pull.audit_once(key, "audit", "refusal", actor=login, detail=f"grammar: {command.reason}")
            answer.refuse(comment["id"], key, texts.grammar_reply(login, command.reason, _suites_or_none(pull)))
            return answer
        if not still_says(pull, comment, command, paths):
            return answer
        pull.audit_once(key, "audit", "command", actor=login, suite=command.suite, files=list(command.files) or None,
                        detail=command.line[:200])
        handler = {grammar.RUN: run_rocm, grammar.APPROVE: approve_rocm, grammar.DENY: deny_rocm,
                   grammar.STATUS: rocm_status}[command.word]
        handler(pull, command, comment, key, answer)
    return answer


def still_says(pull: Pull, comment: dict, command, paths=None) -> bool:
    """The comment re-read from GitHub just before acting on it: deleted, or edited so that it no
    longer holds this command, it acts on nothing (the delivery's copy is what was written then)."""
    now = pull.comment_body_now(comment)
    roots = dict(roots=paths.test_roots, pattern=paths.test_pattern) if paths is not None else {}
    if now is not None and grammar.parse(now, **roots) == command:
        return True
    pull.job.log.info("command comment deleted or edited before it was acted on", comment_id=comment["id"])
    return False


def _suites_or_none(pull: Pull) -> list[str] | None:
    try:
        return pull.runnable_suites()
    except Exception:  # the grammar reply must not fail because the head could not be read
        return None


def _refuse(pull: Pull, answer: Answer, comment: dict, key: str, body: str, detail: str, **audit) -> None:
    pull.audit_once(key, "audit-refusal", "refusal", actor=comment["user"]["login"], detail=detail, **audit)
    answer.refuse(comment["id"], key, body)


def written_at(comment: dict):
    """GitHub's time of the comment (the webhook's `comment.created_at`)."""
    return parse_time(comment.get("created_at"))


def head_not_seen(pull: Pull, answer: Answer, comment: dict, key: str, what: str) -> bool:
    """True (and answered) when the PR's head now is not the head the commenter saw (bot/ondemand/seen.py)."""
    unseen = unseen_head(pull.store_url, pull.repo, pull.number, pull.data, written_at(comment))
    if unseen is None:
        return False
    login = comment["user"]["login"]
    _refuse(pull, answer, comment, key, texts.head_unseen(login, what, unseen.head_sha, unseen.moved),
            f"{what} written before the head {unseen.head_sha} " + ("was pushed" if unseen.moved else "was recorded"))
    return True


# -- /run-rocm -----------------------------------------------------------------------------------
def run_rocm(pull: Pull, command: grammar.Command, comment: dict, key: str, answer: Answer) -> None:
    login = comment["user"]["login"]
    existing = store.request_by_comment(pull.store_url, pull.repo, comment["id"])
    if existing is not None:
        resume(pull, existing, comment, answer, key=key)
        return
    if head_not_seen(pull, answer, comment, key, "/run-rocm"):
        return
    limit_files = pull.config.budgets.max_files_per_command
    if len(command.files) > limit_files:
        _refuse(pull, answer, comment, key, texts.too_many_files(login, len(command.files), limit_files),
                f"{len(command.files)} files listed, limit {limit_files}", suite=command.suite)
        return
    outcome = pull.analyse(command.suite, command.files)
    if outcome.selection is None:
        _refuse(pull, answer, comment, key, texts.not_selectable(login, outcome.refusal, outcome.runnable),
                outcome.refusal[:300], suite=command.suite, files=list(command.files))
        return
    selection = outcome.selection
    # the head's contract was read in the analysis child: its runner facts came back with the outcome
    costing = cost_selection(selection, outcome)
    if costing.refusal:
        _refuse(pull, answer, comment, key, texts.not_selectable(login, costing.refusal, outcome.runnable),
                f"cost: {costing.refusal}"[:300], suite=command.suite, files=list(command.files))
        return
    cost = costing.gpu_hours
    who = authority(pull.client, pull.repo, login, pull.config.approvers)
    running = running_for(pull, command.suite, pull.head_sha)
    if running is not None and running.comment_id == comment["id"]:
        # this comment's own request: another worker on the same delivery made it while the
        # selection was read (seconds, in the analysis child)
        resume(pull, running, comment, answer, key=key)
        return
    if running is not None:
        _refuse(pull, answer, comment, key, texts.in_flight(login, command.suite, running.run_url, running.requester),
                f"already in flight: request {running.id}", suite=command.suite, run_id=running.workflow_run_id)
        return
    limit = float(pull.config.budgets.daily_gpu_hours)
    used = budget_used(pull.store_url, pull.repo)
    if used + cost > limit + 1e-9:  # answered early; the dispatch decides again, atomically (store.reserve)
        _refuse(pull, answer, comment, key, texts.over_budget(login, command.suite, cost, used, limit, notes(selection, costing)),
                f"over budget: {used:.2f} used + {cost:.2f} > {limit:.2f}", suite=command.suite, cost_gpu_hours=cost)
        return
    dispatch_cfg = selection.dispatch
    # Two-person rule: even a maintainer's own command waits for another maintainer.
    at_once = who.maintainer and not pull.config.approvers.two_person
    # The request and its "request" entry are one transaction (bot/store/ondemand_states.py).
    request, _created = store.create_request(
        pull.store_url, event="request_at_once" if at_once else "request",
        audit=dict(actor=login, files=list(command.files), cost_gpu_hours=cost, delivery_id=pull.job.delivery_id,
                   detail=f"by a maintainer ({who.via}): dispatched at once" if at_once
                   else f"role {who.role}: waits for {'another' if who.maintainer else 'a'} maintainer"),
        repository=pull.repo, pull_number=pull.number, head_sha=pull.head_sha, suite=command.suite,
        details=details(list(command.files), selection, costing, pull.config.calibration.hardware),
        requester=login, comment_id=comment["id"], commented_at=written_at(comment), cost_gpu_hours=cost,
        dispatch_repository=dispatch_cfg.repository or pull.repo, workflow=dispatch_cfg.workflow,
        decided_by=login if at_once else None)
    resume(pull, request, comment, answer, note=who.note, key=key)


def resume(pull: Pull, request, comment: dict, answer: Answer, note: str | None = None, key: str | None = None) -> None:
    """Carry a request on from wherever an earlier attempt of this job left it. `key`: the
    command's reply key (a summary button's click has no comment id of its own)."""
    if request.status == store.APPROVED:
        dispatch(pull, request, answer, actor=comment["user"]["login"], approved_by=None, comment_id=comment["id"])
    elif request.status in (store.DISPATCHING, store.DISPATCHED):
        follow_through(pull, request, answer, approved_by=None)
    elif request.status == store.PENDING and request.head_sha == pull.head_sha:
        open_request_check(pull, request, comment.get("html_url"))
        answer.say(key or f"comment:{pull.repo}:{comment['id']}",
                   texts.waiting(request.requester, request.suite, request.head_sha, selected_rows(request),
                                 request.cost_gpu_hours, request.details.get("gpus", 1), note, cost_notes(request),
                                 request.details.get("run_plan")))


# -- /approve-rocm, /deny-rocm, /rocm-status ------------------------------------------------------
def _maintainer(pull: Pull, answer: Answer, comment: dict, key: str, what: str):
    """The commenter's authority if they are a maintainer; otherwise refused, answered, and None."""
    login = comment["user"]["login"]
    who = authority(pull.client, pull.repo, login, pull.config.approvers)
    if who.maintainer:
        return who
    _refuse(pull, answer, comment, key, texts.not_a_maintainer(login, what, who.role, who.note),
            f"{what} by role {who.role}: not a maintainer")
    return None


def approve_rocm(pull: Pull, command, comment: dict, key: str, answer: Answer) -> None:
    login = comment["user"]["login"]
    who = _maintainer(pull, answer, comment, key, "approve on-demand runs")
    if who is None:
        return
    if head_not_seen(pull, answer, comment, key, "approval"):
        return
    expired, _stale = tidy(pull)
    approved_at = written_at(comment)
    # Only what the approver could see: requests on this head, made before the approval was written.
    waiting = [r for r in store.requests_for_pull(pull.store_url, pull.repo, pull.number, RETRYABLE)
               if r.head_sha == pull.head_sha
               and (r.commented_at is None or approved_at is None or r.commented_at <= approved_at)]
    if not waiting:
        body = texts.expired(login, [r.suite for r in expired]) if expired else texts.nothing_pending(login, pull.head_sha)
        answer.refuse(comment["id"], key, body)
        return
    outcomes = approve(pull, waiting, who, answer, comment_id=comment["id"], key=key)
    if "dispatched" in outcomes.values():
        answer.react(comment["id"], "rocket")


def deny_rocm(pull: Pull, command, comment: dict, key: str, answer: Answer) -> None:
    login = comment["user"]["login"]
    if _maintainer(pull, answer, comment, key, "refuse on-demand runs") is None:
        return
    denied = []
    for request in store.requests_for_pull(pull.store_url, pull.repo, pull.number, RETRYABLE):
        if pull.change(request, "deny", dict(actor=login, files=requested_files(request), detail=command.reason),
                       decided_by=login, reason=command.reason):
            close_request_check(pull, request, *texts.request_denied(login, command.reason))
            denied.append(request)
    if not denied:
        answer.refuse(comment["id"], key, texts.nothing_pending(login, pull.head_sha))
        return
    answer.say(key, texts.denied(login, [r.suite for r in denied], command.reason))


def rocm_status(pull: Pull, command, comment: dict, key: str, answer: Answer) -> None:
    expire_old(pull)
    requests = store.requests_for_pull(pull.store_url, pull.repo, pull.number)
    answer.say(key, texts.status(pull.number, requests, budget_used(pull.store_url, pull.repo),
                                 float(pull.config.budgets.daily_gpu_hours)))


def approve(pull: Pull, requests: list, approver: Authority, answer: Answer, *, comment_id: int | None,
            key: str) -> dict:
    """Approve and dispatch `requests` (all on the PR's current head); returns request id -> outcome."""
    outcomes = {}
    two_person = pull.config.approvers.two_person
    own = [r for r in requests if two_person and r.requester.lower() == approver.login.lower()]
    if own:
        answer.refuse(comment_id, key, texts.own_request(approver.login, [r.suite for r in own]), step="own-request")
        for r in own:
            pull.audit("refusal", actor=approver.login, suite=r.suite, request_id=r.id, head_sha=r.head_sha,
                       detail="two-person approval: the requester cannot approve their own request")
            outcomes[r.id] = "own_request"
    for request in requests:
        if request.id in outcomes:
            continue
        current = None
        if request.status != store.APPROVED:
            current = pull.change(request, "approve", dict(
                actor=approver.login, files=requested_files(request), cost_gpu_hours=request.cost_gpu_hours,
                detail=approver.via),
                decided_by=approver.login)
        current = current or store.get_request(pull.store_url, request.id)
        if current.status != store.APPROVED:
            outcomes[request.id] = current.status
            continue
        outcomes[request.id] = dispatch(pull, current, answer, actor=approver.login, approved_by=approver.login,
                                        comment_id=comment_id)
    return outcomes


# -- buttons --------------------------------------------------------------------------------------
@dataclass
class _Click:
    """A button click by `login` on pull request `pull`: `who` is the clicker's authority when a
    maintainer; otherwise `answer` is all there is to post (None: nothing, the PR is gone or closed)."""

    key: str
    login: str
    answer: Answer | None = None
    pull: Pull | None = None
    who: Authority | None = None


def _maintainers_click(job, click, number: int, *, what: str, about: str, refused: str | None = None,
                       audit: dict | None = None, selects: bool = False) -> _Click:
    """What both buttons need before anything else: the pull request as GitHub has it now (a gone
    one is audited and left), the trusted configuration, and the clicker's permission asked of
    GitHub now: anyone but a maintainer is refused (`what` they may not do) and audited (`refused`,
    else `about` the click, with `audit`'s fields). `selects`: the click goes on to read a
    selection at the head, so the configuration's request reads ahead for it (Pull.read_trusted)."""
    repo, login = click.repository.full_name, click.sender.login
    clicked = _Click(key=f"click:{job.delivery_id}", login=login)
    pr_data = tolerate_gone(lambda: job.client.pull(repo, number))
    if pr_data is None:  # the pull request (or its repository) is gone
        vanished(job, repo, number, actor=login, detail=f"{about}: the pull request is gone")
        return clicked
    pull = Pull(job, repo, number, pr_data, config=None)
    if not pull.open:
        return clicked
    problems = pull.read_trusted(click.repository.default_branch or "main", ahead=selects)
    config = pull.config
    clicked.answer = answer = Answer(pull)
    with answer.kept():
        if config is None:
            answer.say(clicked.key, texts.config_invalid(login, problems))
            return clicked
        who = authority(job.client, repo, login, config.approvers)
        if not who.maintainer:
            pull.audit_once(clicked.key, "audit", "refusal", actor=login, **(audit or {}),
                            detail=f"{refused or about} by role {who.role}: not a maintainer")
            answer.say(clicked.key, texts.not_a_maintainer(login, what, who.role, who.note))
            return clicked
    clicked.pull, clicked.who = pull, who
    return clicked


def on_approve_button(job, data: dict) -> Answer | None:
    """A `check_run` requested_action: the "Approve run" button of a request's check run."""
    click = payloads.checked(payloads.CheckRunActionEvent, data)  # only what the intake checked
    if click.requested_action.identifier != texts.APPROVE_ACTION["identifier"]:
        return None
    app_id = str(job.settings.app_id or "")
    if app_id and str(click.check_run.app.id) != app_id:
        return None  # another App's check run
    repo = click.repository.full_name
    request = store.request_by_check_run(job.store_url, repo, click.check_run.id)
    if request is None or click.sender.type not in (None, "User"):
        return None
    clicked = _maintainers_click(job, click, request.pull_number, what="approve this run",
                                 about=f"button click on request {request.id}", refused="button click",
                                 audit=dict(suite=request.suite, request_id=request.id, head_sha=request.head_sha))
    if clicked.who is None:
        return clicked.answer
    pull, answer, who, key, login = clicked.pull, clicked.answer, clicked.who, clicked.key, clicked.login
    with answer.kept():
        tidy(pull)
        request = store.get_request(job.store_url, request.id)
        if request.status not in RETRYABLE:
            answer.say(key, texts.already_decided(login, request.status))
            return answer
        approve(pull, [request], who, answer, comment_id=None, key=key)
    return answer


def on_summary_button(job, data: dict) -> Answer | None:
    """A `check_run` requested_action: a "Run ROCm suite N" button of the CI registrations summary.

    The summary offers, as GitHub check-run actions, the `/run-rocm` runs it suggests
    (checks/render.check_run_actions). A click arrives with the button's identifier only; the suite
    is read back from the summary this App posted on that run. From there it is the comment
    command's own path (`run_rocm`): the clicker's permission asked of GitHub now, the selection
    read from the head, the cost, the budget and the two-person rule. Nothing the pull request
    wrote decides who may run what."""
    # Only what the intake checked (bot/infra/payloads.CheckRunActionEvent) is read: the App that
    # owns the run, the run's pull requests, summary and times are all typed and bounded there.
    click = payloads.checked(payloads.CheckRunActionEvent, data)
    identifier = click.requested_action.identifier
    if not identifier.startswith(ACTION_PREFIX):
        return None  # another button (the on-demand request's "Approve run")
    run = click.check_run
    app_id = str(job.settings.app_id or "")
    if run.name != CHECK_RUN_NAME or (app_id and str(run.app.id) != app_id):
        return None  # not this App's CI registrations check
    if click.sender.type not in (None, "User") or not click.sender.login:
        return None
    if not run.pull_requests:
        return None  # a check run of no open pull request in this repository
    clicked = _maintainers_click(job, click, run.pull_requests[0].number,
                                 what="start on-demand runs from the summary", about=f"summary button {identifier}",
                                 selects=True)
    if clicked.who is None:
        return clicked.answer
    pull, answer, key, login = clicked.pull, clicked.answer, clicked.key, clicked.login
    config = pull.config
    with answer.kept():
        if run.head_sha != pull.head_sha:
            # the summary described another commit: its suggestion is not for the head that would run
            answer.say(key, texts.summary_of_another_head(login, run.head_sha, pull.head_sha))
            return answer
        suite = suggestion_in_summary((run.output.summary if run.output else None) or "", identifier)
        paths = config.paths
        command = grammar.parse(f"/run-rocm {suite}", roots=paths.test_roots, pattern=paths.test_pattern) if suite else None
        if not isinstance(command, grammar.Command):
            answer.say(key, texts.button_names_no_suite(login))
            return answer
        pull.audit_once(key, "audit", "command", actor=login, suite=command.suite,
                        detail=f"summary button {identifier}: {command.line[:160]}")
        # The click stands for a comment written when the check run was completed (GitHub's clock): the
        # head must have been pushed before that (bot/ondemand/seen.py), as for a comment.
        as_comment = {"id": None, "user": {"login": login}, "created_at": run.completed_at, "html_url": None}
        run_rocm(pull, command, as_comment, key, answer)
    return answer
