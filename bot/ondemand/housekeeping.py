"""Housekeeping: requests that age, pushes that make requests stale and runs superseded.

`on_push` is the `pull_request` (synchronize) event's use case; `tidy` runs before any approval;
`sweep_expired` is the worker's periodic pass.
"""

from __future__ import annotations

from bot.github.retry import GitHubError, TransientError
from bot.ondemand import texts
from bot.ondemand.pull import (RETRYABLE, Answer, Pull, change, client_for, close_check, close_request_check, iso_now,
                               requested_files, tolerate_gone, trusted_config)
from bot.store import ondemand as store


# -- requests that age ----------------------------------------------------------------------------
def _expire(store_url: str, request, client, delivery_id: str | None = None) -> bool:
    """Close one request as expired (once: compare-and-set), with its audit entry and check run."""
    if store.change(store_url, request.id, "expire", audit=dict(
            files=requested_files(request), detail="older than 7 days", delivery_id=delivery_id)) is None:
        return False
    if client is not None:
        close_check(client, request.repository, request, texts.EXPIRED_TITLE, texts.EXPIRED_DETAIL)
    return True


def expire_old(pull: Pull) -> list:
    """Requests on this PR older than 7 days are closed as expired (checked whenever the PR's requests are read)."""
    cutoff = store.now() - store.REQUEST_TTL
    return [r for r in store.requests_for_pull(pull.store_url, pull.repo, pull.number, RETRYABLE)
            if r.created_at < cutoff and _expire(pull.store_url, r, pull.client, pull.job.delivery_id)]


def tidy(pull: Pull) -> tuple[list, list]:
    """Before any approval: expire old requests and make those for another commit stale
    (a push whose synchronize event was missed must not leave an approvable request behind)."""
    expired = expire_old(pull)
    stale = make_stale(pull.repo, pull.number, pull.head_sha, pull.job)
    for request in stale:
        close_request_check(pull, request, texts.STALE_TITLE, texts.stale_detail(pull.head_sha))
    return expired, stale


def sweep_expired(github, store_url: str, installation_for) -> int:
    """Expire requests older than 7 days everywhere (the worker's periodic pass), so their
    "MI350 run request" check run does not wait for ever on a PR nobody touches again."""
    done = 0
    for request in store.open_requests_before(store_url, store.now() - store.REQUEST_TTL):
        installation = installation_for(store_url, request.repository)
        client = github.for_installation(installation) if installation is not None else None
        done += _expire(store_url, request, client)
    return done


# -- a push ---------------------------------------------------------------------------------------
def on_push(job, data: dict) -> Answer | None:
    """A push: runs of older heads are cancelled (unless `budgets.cancel_superseded_runs` is off),
    every request or approval for an older commit is stale, and the PR is told once.

    The order of pushes is GitHub's, never the order deliveries arrive in: a `synchronize` can come
    late (GitHub retries, a queue backlog) or be replayed under a new delivery id. Before anything
    is cancelled or made stale, GitHub is asked for the PR's head now (GET pulls/{n}); a delivery
    for any other head changes nothing. The current head's own delivery does the work (or did)."""
    pr = data["pull_request"]
    repo = data["repository"]["full_name"]
    new_head = pr["head"]["sha"]
    number = int(pr["number"])
    in_flight = store.requests_for_pull(job.store_url, repo, number, store.IN_FLIGHT + (store.SUPERSEDED,))
    open_requests = store.requests_for_pull(job.store_url, repo, number, RETRYABLE)
    if all(r.head_sha == new_head for r in in_flight + open_requests):
        return None  # nothing of another head: no call to GitHub needed
    now = tolerate_gone(lambda: job.client.pull(repo, number))
    if now is None or ((now.get("head") or {}).get("sha")) != new_head:
        job.log.info("push is not the PR's head now: nothing changed", head_sha=new_head,
                     pr_head=((now or {}).get("head") or {}).get("sha"))
        return None
    pull = Pull(job, repo, number, now, config=None)
    answer = Answer(pull)
    key = f"push:{repo}:{number}:{new_head}"
    with answer.kept():
        if any(r.head_sha != new_head for r in in_flight):
            config, _problems = trusted_config(job.client, repo, data["repository"].get("default_branch") or "main")
            # An invalid configuration keeps the default (on): a run of a commit nobody will merge stops.
            if config is None or config.budgets.cancel_superseded_runs:
                cancelled = supersede(job, repo, number, new_head, job.client)
                if cancelled:
                    answer.say(key, texts.superseded(new_head, [(r.suite, r.head_sha, r.run_url) for r in cancelled]),
                               step="superseded")
                    answer.post()  # the cancelled runs are told of before any request is made stale
        gone = make_stale(repo, number, new_head, job)
        for request in gone:
            close_request_check(pull, request, texts.STALE_TITLE, texts.stale_detail(new_head, request.head_sha))
        if gone:
            answer.say(key, texts.stale(new_head, [(r.suite, r.requester, r.head_sha) for r in gone]), step="stale")
    return answer


def make_stale(pull_repo: str, number: int, new_head: str, job) -> list:
    """A push: open requests for any other commit are stale (their approval held for that commit only)."""
    found = store.requests_for_pull(job.store_url, pull_repo, number, RETRYABLE)
    gone = []
    for request in found:
        if request.head_sha == new_head:
            continue
        if change(job, request, "stale", dict(files=requested_files(request), detail=f"head moved to {new_head}"),
                  reason=f"the PR's head moved to {new_head}"):
            gone.append(request)
    return gone


# -- superseded heads -----------------------------------------------------------------------------
def supersede(job, repo: str, number: int, new_head: str, pr_client) -> list:
    """A push to the PR: its runs in flight on other heads are superseded at once (their slot and
    the PR's attention move to the new head), then cancelled on GitHub and their "MI350 · <suite>"
    check runs completed as cancelled. Each GitHub step is taken once; a run GitHub already
    finished or no longer has (404, 409, 410) is left as it is."""
    reason = f"superseded by {new_head}"
    done = []
    for request in store.requests_for_pull(job.store_url, repo, number, store.IN_FLIGHT + (store.SUPERSEDED,)):
        if request.head_sha == new_head:
            continue
        if request.status in store.IN_FLIGHT:
            changed = change(job, request, "supersede", dict(
                files=requested_files(request), cost_gpu_hours=request.cost_gpu_hours, run_id=request.workflow_run_id,
                detail=reason), completed_at=store.now(), reason=reason)
            if changed is None:
                continue
            request = changed
        elif request.reason != reason:
            continue  # superseded by an earlier push, and handled then
        _stop_superseded(job, request, new_head, pr_client)
        done.append(request)
    return done


def _stop_superseded(job, request, new_head: str, pr_client) -> None:
    key = f"request:{request.id}"
    url = job.store_url

    def cancel():
        run_id = request.workflow_run_id
        if run_id is None:  # never confirmed: the workflow's own head check stops it
            return
        client = client_for(job, request.dispatch_repository, (request.repository, pr_client))
        tolerate_gone(lambda: client.cancel_workflow_run(request.dispatch_repository, run_id), also=(409,))

    def close_check():
        if request.run_check_run_id is None:
            return
        tolerate_gone(lambda: pr_client.update_check_run(request.repository, request.run_check_run_id, {
            "status": "completed", "conclusion": "cancelled", "completed_at": iso_now(),
            "output": texts.run_superseded_output(request.suite, new_head, request.run_url)}))

    for step, action in (("cancel", cancel), ("superseded-check", close_check)):
        if not store.claim_step(url, key, step):
            continue
        try:
            action()
        except (TransientError, GitHubError) as exc:
            if isinstance(exc, TransientError) or exc.status >= 500:
                store.release_step(url, key, step)
            raise
