"""Approval by button, and what a push does to approvals: the "Approve run" click, stale requests.

An approval holds for the head SHA it was given for. The button is checked like a comment: the
clicker's permission is asked of GitHub at the click, and the PR's head now must be the request's.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.infra import payloads
from bot.ondemand import flow, texts
from bot.ondemand.flow import Pull, reply
from bot.ondemand.permissions import authority
from bot.store import ondemand as store

router = Router()

ALREADY_DECIDED = "@{user} this request is already {status}; nothing to approve."


@router.register("check_run", action="requested_action")
async def approve_button(event, ctx):
    click = payloads.checked(payloads.CheckRunActionEvent, event.data)  # only what the intake checked
    if click.requested_action.identifier != texts.APPROVE_ACTION["identifier"]:
        return
    app_id = str(ctx.settings.app_id or "")
    if app_id and str(click.check_run.app.id) != app_id:
        return  # another App's check run
    repo = click.repository.full_name
    request = store.request_by_check_run(ctx.store_url, repo, click.check_run.id)
    if request is None or click.sender.type not in (None, "User"):
        return
    login = click.sender.login
    key = f"click:{ctx.delivery_id}"
    config, problems = flow.trusted_config(ctx.client, repo, click.repository.default_branch or "main")
    pr_data = flow.tolerate_gone(lambda: ctx.client.pull(repo, request.pull_number))
    if pr_data is None:  # the pull request (or its repository) is gone
        flow.vanished(ctx, repo, request.pull_number, actor=login, detail=f"button click on request {request.id}: "
                      "the pull request is gone")
        return
    pull = Pull(ctx, repo, request.pull_number, pr_data, config)
    if not pull.open:
        return
    if config is None:
        reply(pull, key, texts.config_invalid(login, problems))
        return
    who = authority(ctx.client, repo, login, config.approvers)
    if not who.maintainer:
        pull.audit_once(key, "audit", "refusal", actor=login, suite=request.suite, request_id=request.id,
                        head_sha=request.head_sha, detail=f"button click by role {who.role}: not a maintainer")
        reply(pull, key, texts.not_a_maintainer(login, "approve this run", who.role, who.note))
        return
    flow.tidy(pull)
    request = store.get_request(ctx.store_url, request.id)
    if request.status not in flow.RETRYABLE:
        reply(pull, key, ALREADY_DECIDED.format(user=login, status=request.status))
        return
    flow.approve(pull, [request], who, comment_id=None, key=key)


@router.register("pull_request", action="synchronize")
async def head_moved(event, ctx):
    """A push: runs of older heads are cancelled (unless `budgets.cancel_superseded_runs` is off),
    every request or approval for an older commit is stale, and the PR is told once.

    The order of pushes is GitHub's, never the order deliveries arrive in: a `synchronize` can come
    late (GitHub retries, a queue backlog) or be replayed under a new delivery id. Before anything
    is cancelled or made stale, GitHub is asked for the PR's head now (GET pulls/{n}); a delivery
    for any other head changes nothing. The current head's own delivery does the work (or did)."""
    pr = event.data["pull_request"]
    repo = event.data["repository"]["full_name"]
    new_head = pr["head"]["sha"]
    number = int(pr["number"])
    in_flight = store.requests_for_pull(ctx.store_url, repo, number, store.IN_FLIGHT + (store.SUPERSEDED,))
    open_requests = store.requests_for_pull(ctx.store_url, repo, number, flow.RETRYABLE)
    if all(r.head_sha == new_head for r in in_flight + open_requests):
        return  # nothing of another head: no call to GitHub needed
    now = flow.tolerate_gone(lambda: ctx.client.pull(repo, number))
    if now is None or ((now.get("head") or {}).get("sha")) != new_head:
        ctx.log.info("push is not the PR's head now: nothing changed", head_sha=new_head,
                     pr_head=((now or {}).get("head") or {}).get("sha"))
        return
    pull = Pull(ctx, repo, number, now, config=None)
    if any(r.head_sha != new_head for r in in_flight):
        config, _problems = flow.trusted_config(ctx.client, repo, event.data["repository"].get("default_branch") or "main")
        # An invalid configuration keeps the default (on): a run of a commit nobody will merge stops.
        if config is None or config.budgets.cancel_superseded_runs:
            cancelled = flow.supersede(ctx, repo, number, new_head, ctx.client)
            if cancelled:
                reply(pull, f"push:{repo}:{number}:{new_head}", texts.superseded(
                    new_head, [(r.suite, r.head_sha, r.run_url) for r in cancelled]), step="superseded")
    gone = flow.make_stale(repo, number, new_head, ctx)
    if not gone:
        return
    for request in gone:
        flow.close_request_check(pull, request, "Stale",
                                 f"The PR's head moved to {new_head}: this request was for {request.head_sha}.")
    reply(pull, f"push:{repo}:{number}:{new_head}",
          texts.stale(new_head, [(r.suite, r.requester, r.head_sha) for r in gone]), step="stale")
