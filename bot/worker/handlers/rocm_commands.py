"""Comment commands on pull requests: /run-rocm, /approve-rocm, /deny-rocm, /rocm-status.

Only a human's new comment on an open pull request is read; its sender must be its author. A
comment that is not a command costs no GitHub call. Everything else (who may do what, which suite
may run) is decided with what GitHub and the default branch say now.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.ondemand import flow, grammar, texts
from bot.ondemand.cost import cost_selection
from bot.ondemand.flow import Pull, react, reply, requested_files
from bot.ondemand.permissions import authority
from bot.ondemand.seen import parse_time, unseen_head
from bot.store import ondemand as store

router = Router()


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


@router.register("issue_comment", action="created")
async def comment_created(event, ctx):
    data = event.data
    if not is_human_command_comment(data):
        return
    comment = data["comment"]
    first = grammar.parse(comment.get("body"))
    if first is None or (isinstance(first, grammar.Command) and first.word == grammar.CALIBRATE):
        return  # not a command of this handler: no reaction, no call (calibration.py takes its own)
    repo = data["repository"]["full_name"]
    number = int(data["issue"]["number"])
    login = comment["user"]["login"]
    client = ctx.client
    key = f"comment:{repo}:{comment['id']}"
    pr_data = flow.tolerate_gone(lambda: client.pull(repo, number))
    if pr_data is None:  # the pull request (or its repository) is gone: nothing to act on or answer
        flow.vanished(ctx, repo, number, actor=login, detail=f"comment {comment['id']}: the pull request is gone")
        return
    pull = Pull(ctx, repo, number, pr_data, config=None)
    if not pull.open:
        return  # closed while the delivery waited
    react(pull, comment["id"], "eyes")
    pull.config, problems = flow.trusted_config(client, repo, data["repository"].get("default_branch") or "main")
    if pull.config is None:
        react(pull, comment["id"], "confused")
        reply(pull, key, texts.config_invalid(login, problems))
        return
    paths = pull.config.paths
    command = grammar.parse(comment.get("body"), roots=paths.test_roots, pattern=paths.test_pattern)
    if isinstance(command, grammar.Refusal):
        pull.audit_once(key, "audit", "refusal", actor=login, detail=f"grammar: {command.reason}")
        react(pull, comment["id"], "confused")
        reply(pull, key, texts.grammar_reply(login, command.reason, _suites_or_none(pull)))
        return
    if not still_says(pull, comment, command, paths):
        return
    pull.audit_once(key, "audit", "command", actor=login, suite=command.suite, files=list(command.files) or None,
                    detail=command.line[:200])
    handler = {grammar.RUN: run_rocm, grammar.APPROVE: approve_rocm, grammar.DENY: deny_rocm,
               grammar.STATUS: rocm_status}[command.word]
    handler(pull, command, comment, key)


def still_says(pull: Pull, comment: dict, command, paths=None) -> bool:
    """The comment re-read from GitHub just before acting on it: deleted, or edited so that it no
    longer holds this command, it acts on nothing (the delivery's copy is what was written then)."""
    now = flow.tolerate_gone(lambda: pull.client.issue_comment(pull.repo, comment["id"]))
    roots = dict(roots=paths.test_roots, pattern=paths.test_pattern) if paths is not None else {}
    if now is not None and grammar.parse(now.get("body"), **roots) == command:
        return True
    pull.job.log.info("command comment deleted or edited before it was acted on", comment_id=comment["id"])
    return False


def _suites_or_none(pull: Pull) -> list[str] | None:
    try:
        return pull.runnable_suites()
    except Exception:  # the grammar reply must not fail because the head could not be read
        return None


def _refuse(pull: Pull, comment: dict, key: str, body: str, detail: str, **audit) -> None:
    pull.audit_once(key, "audit-refusal", "refusal", actor=comment["user"]["login"], detail=detail, **audit)
    react(pull, comment["id"], "confused")
    reply(pull, key, body)


def written_at(comment: dict):
    """GitHub's time of the comment (the webhook's `comment.created_at`)."""
    return parse_time(comment.get("created_at"))


def head_not_seen(pull: Pull, comment: dict, key: str, what: str) -> bool:
    """True (and answered) when the PR's head now is not the head the commenter saw (bot/ondemand/seen.py)."""
    unseen = unseen_head(pull.store_url, pull.repo, pull.number, pull.data, written_at(comment))
    if unseen is None:
        return False
    login = comment["user"]["login"]
    _refuse(pull, comment, key, texts.head_unseen(login, what, unseen.head_sha, unseen.moved),
            f"{what} written before the head {unseen.head_sha} " + ("was pushed" if unseen.moved else "was recorded"))
    return True


# -- /run-rocm -----------------------------------------------------------------------------------
def run_rocm(pull: Pull, command: grammar.Command, comment: dict, key: str) -> None:
    login = comment["user"]["login"]
    existing = store.request_by_comment(pull.store_url, pull.repo, comment["id"])
    if existing is not None:
        resume(pull, existing, comment, key=key)
        return
    if head_not_seen(pull, comment, key, "/run-rocm"):
        return
    limit_files = pull.config.budgets.max_files_per_command
    if len(command.files) > limit_files:
        _refuse(pull, comment, key, texts.too_many_files(login, len(command.files), limit_files),
                f"{len(command.files)} files listed, limit {limit_files}", suite=command.suite)
        return
    outcome = pull.analyse(command.suite, command.files)
    if outcome.selection is None:
        _refuse(pull, comment, key, texts.not_selectable(login, outcome.refusal, outcome.runnable), outcome.refusal[:300],
                suite=command.suite, files=list(command.files))
        return
    selection = outcome.selection
    # the head's contract was read in the analysis child: its runner facts came back with the outcome
    costing = cost_selection(selection, outcome)
    if costing.refusal:
        _refuse(pull, comment, key, texts.not_selectable(login, costing.refusal, outcome.runnable),
                f"cost: {costing.refusal}"[:300], suite=command.suite, files=list(command.files))
        return
    cost = costing.gpu_hours
    who = authority(pull.client, pull.repo, login, pull.config.approvers)
    running = flow.running_for(pull, command.suite, pull.head_sha)
    if running is not None and running.comment_id == comment["id"]:
        # this comment's own request: another worker on the same delivery made it while the
        # selection was read (seconds, in the analysis child)
        resume(pull, running, comment, key=key)
        return
    if running is not None:
        _refuse(pull, comment, key, texts.in_flight(login, command.suite, running.run_url, running.requester),
                f"already in flight: request {running.id}", suite=command.suite, run_id=running.workflow_run_id)
        return
    limit = float(pull.config.budgets.daily_gpu_hours)
    used = flow.budget_used(pull.store_url, pull.repo)
    if used + cost > limit + 1e-9:  # answered early; the dispatch decides again, atomically (store.reserve)
        _refuse(pull, comment, key, texts.over_budget(login, command.suite, cost, used, limit)
                + texts.cost_notes(costing.notes()),
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
        details=flow.details(list(command.files), selection, costing, pull.config.calibration.hardware),
        requester=login, comment_id=comment["id"], commented_at=written_at(comment), cost_gpu_hours=cost,
        dispatch_repository=dispatch_cfg.repository or pull.repo, workflow=dispatch_cfg.workflow,
        decided_by=login if at_once else None)
    resume(pull, request, comment, note=who.note, key=key)


def resume(pull: Pull, request, comment: dict, note: str | None = None, key: str | None = None) -> None:
    """Carry a request on from wherever an earlier attempt of this job left it. `key`: the
    command's reply key (a summary button's click has no comment id of its own)."""
    if request.status == store.APPROVED:
        flow.dispatch(pull, request, actor=comment["user"]["login"], approved_by=None, comment_id=comment["id"])
    elif request.status in (store.DISPATCHING, store.DISPATCHED):
        flow.follow_through(pull, request, approved_by=None)
    elif request.status == store.PENDING and request.head_sha == pull.head_sha:
        flow.open_request_check(pull, request, comment.get("html_url"))
        reply(pull, key or f"comment:{pull.repo}:{comment['id']}",
              texts.waiting(request.requester, request.suite, request.head_sha, flow.selected_rows(request),
                            request.cost_gpu_hours, request.details.get("gpus", 1), note, flow.cost_notes(request),
                            request.details.get("run_plan")))


# -- /approve-rocm, /deny-rocm, /rocm-status ------------------------------------------------------
def _maintainer(pull: Pull, comment: dict, key: str, what: str):
    """The commenter's authority if they are a maintainer; otherwise refused, answered, and None."""
    login = comment["user"]["login"]
    who = authority(pull.client, pull.repo, login, pull.config.approvers)
    if who.maintainer:
        return who
    _refuse(pull, comment, key, texts.not_a_maintainer(login, what, who.role, who.note),
            f"{what} by role {who.role}: not a maintainer")
    return None


def approve_rocm(pull: Pull, command, comment: dict, key: str) -> None:
    login = comment["user"]["login"]
    who = _maintainer(pull, comment, key, "approve on-demand runs")
    if who is None:
        return
    if head_not_seen(pull, comment, key, "approval"):
        return
    expired, _stale = flow.tidy(pull)
    approved_at = written_at(comment)
    # Only what the approver could see: requests on this head, made before the approval was written.
    waiting = [r for r in store.requests_for_pull(pull.store_url, pull.repo, pull.number, flow.RETRYABLE)
               if r.head_sha == pull.head_sha
               and (r.commented_at is None or approved_at is None or r.commented_at <= approved_at)]
    if not waiting:
        react(pull, comment["id"], "confused")
        body = texts.expired(login, [r.suite for r in expired]) if expired else texts.nothing_pending(login, pull.head_sha)
        reply(pull, key, body)
        return
    outcomes = flow.approve(pull, waiting, who, comment_id=comment["id"], key=key)
    if "dispatched" in outcomes.values():
        react(pull, comment["id"], "rocket")


def deny_rocm(pull: Pull, command, comment: dict, key: str) -> None:
    login = comment["user"]["login"]
    if _maintainer(pull, comment, key, "refuse on-demand runs") is None:
        return
    denied = []
    for request in store.requests_for_pull(pull.store_url, pull.repo, pull.number, flow.RETRYABLE):
        if pull.change(request, "deny", dict(actor=login, files=requested_files(request), detail=command.reason),
                       decided_by=login, reason=command.reason):
            flow.close_request_check(pull, request, f"Refused by @{login}",
                                     f"Reason: {texts.code(command.reason)}" if command.reason else "No reason given.")
            denied.append(request)
    if not denied:
        react(pull, comment["id"], "confused")
        reply(pull, key, texts.nothing_pending(login, pull.head_sha))
        return
    reply(pull, key, texts.denied(login, [r.suite for r in denied], command.reason))


def rocm_status(pull: Pull, command, comment: dict, key: str) -> None:
    flow.expire_old(pull)
    requests = store.requests_for_pull(pull.store_url, pull.repo, pull.number)
    reply(pull, key, texts.status(pull.number, requests, flow.budget_used(pull.store_url, pull.repo),
                                  float(pull.config.budgets.daily_gpu_hours)))
