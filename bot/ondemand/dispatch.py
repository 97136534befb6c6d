"""The dispatch stage: an approved request becomes a run on MI350 GPUs, once.

Every step that touches GitHub is taken once, whichever worker gets there first and however often
a delivery is processed: at most one run per (PR, suite) can be in flight (a partial unique
index), the budget's check and the claim are one transaction (bot.store.ondemand.reserve), and
the dispatch, which interleaves GitHub's calls with its writes, is the sequence
ondemand_states.DISPATCH_SEQUENCE documents (docs/on-demand-states.md).

Nothing from the pull request decides what runs where: the suite must be in the dispatch table of
the configuration on the default branch, the workflow and its ref come from there, and the head
SHA is the one GitHub reports for the PR now.
"""

from __future__ import annotations

import datetime as dt

from bot.github.retry import GitHubError, TransientError
from bot.ondemand import texts
from bot.ondemand.completion import finish
from bot.ondemand.pull import (BUDGET_WINDOW, Answer, Pull, budget_used, client_for, close_request_check, cost_notes,
                               iso_now, once, requested_files, selected_rows, tolerate_gone)
from bot.store import ondemand as store

# A dispatch claimed this long ago and never confirmed died with its worker.
STUCK_AFTER = dt.timedelta(minutes=10)


def _inputs(pull: Pull, request, dispatch) -> dict:
    values = {"suite": request.suite, "head_sha": request.head_sha, "pull_number": str(request.pull_number),
              "files": " ".join(requested_files(request)), "repository": request.repository,
              # where and how it runs, planned (and costed) when the request was made (checks/target/dispatch_plan.py)
              **request.details.get("plan", {})}
    # A request stored before plans were recorded has none: the workflow's own defaults apply.
    return {name: values[source] for name, source in dispatch.inputs.items() if source in values}


def _client_for(pull: Pull, repo: str):
    return client_for(pull.job, repo, (pull.repo, pull.client))


def _find_run(client, repo: str, request, since: dt.datetime) -> dict | None:
    """The run a dispatch started, when GitHub's answer did not name it: the shipped workflow's
    run-name carries the head SHA and the suite."""
    # GitHub's `created` filter takes search syntax its own description calls a date-time: the
    # newest page of dispatched runs is filtered here instead.
    earliest = since - dt.timedelta(minutes=1)
    for run in client.workflow_runs(repo, event="workflow_dispatch"):
        title = str(run.get("display_title") or run.get("name") or "")
        created = dt.datetime.fromisoformat(str(run.get("created_at", "1970-01-01T00:00:00Z")).replace("Z", "+00:00"))
        if request.head_sha in title and request.suite in title and created >= earliest:
            return run
    return None


def settle(pull: Pull, running) -> bool:
    """True when `running` no longer holds its (PR, suite): a dispatch whose worker died before
    GitHub confirmed it, or a run whose completion event never arrived. Costs a call only here."""
    target = running.dispatch_repository
    if running.status == store.DISPATCHING:
        if running.dispatched_at and store.now() - running.dispatched_at < STUCK_AFTER:
            return False
        client = _client_for(pull, target)
        found = _find_run(client, target, running, running.dispatched_at or running.created_at)
        if found is None:
            pull.change(running, "settle_lost", dispatched_at=None, reason="the dispatch was never confirmed")
            return True
        running = (pull.change(running, "settle_found", workflow_run_id=found["id"], run_url=found.get("html_url"))
                   or store.get_request(pull.store_url, running.id))
    if running.status == store.DISPATCHED and running.workflow_run_id:
        client = _client_for(pull, target)
        run = tolerate_gone(lambda: client.workflow_run(target, running.workflow_run_id))
        if run is None:  # the run was deleted: nothing holds the slot any more
            pull.change(running, "run_gone", dict(run_id=running.workflow_run_id,
                                                  detail="the workflow run no longer exists"),
                        reason="the run no longer exists")
            return True
        if run.get("status") == "completed":
            finish(pull.job, running, run, client)
            return True
    return False


def running_for(pull: Pull, suite: str, head_sha: str):
    """The request of this PR, suite and head in flight now, if any (after settling a dead one)."""
    running = store.in_flight(pull.store_url, pull.repo, pull.number, suite, head_sha)
    if running is not None and settle(pull, running):
        running = store.in_flight(pull.store_url, pull.repo, pull.number, suite, head_sha)
    return running


def dispatch(pull: Pull, request, answer: Answer, *, actor: str, approved_by: str | None, comment_id: int | None) -> str:
    """Dispatch an approved request: budget, one in flight, the workflow_dispatch, then follow-through.
    What the PR is to be told goes into `answer`.

    Returns what happened: dispatched | in_flight | over_budget | failed | not_approved | stale.
    """
    dispatch_cfg = pull.config.dispatch.get(request.suite)
    key = f"request:{request.id}"
    if dispatch_cfg is None:  # the dispatch table changed since the request was made
        pull.change(request, "undispatchable", reason="no longer in the dispatch table")
        answer.say(key, texts.not_selectable(request.requester, f"`{request.suite}` is no longer in the dispatch table",
                                             pull.runnable_suites()), step="refused")
        return "failed"
    if "plan" in dispatch_cfg.inputs.values() and "plan" not in request.details.get("plan", {}):
        # made before run plans were kept: where and how it would run was never planned (nor costed)
        reason = "this request was made before run plans were kept: write `/run-rocm` again to plan and cost it"
        pull.change(request, "unplanned", dict(actor=actor, detail="no run plan"), reason=reason[:500])
        answer.say(key, texts.not_selectable(request.requester, reason, None), step="refused")
        return "failed"
    if request.head_sha != pull.head_sha:  # never a head other than the one the request was made and approved on
        if pull.change(request, "stale", dict(actor=actor, files=requested_files(request),
                                              detail=f"head moved to {pull.head_sha}"),
                       reason=f"the PR's head moved to {pull.head_sha}"):
            close_request_check(pull, request, texts.STALE_TITLE, texts.stale_detail(pull.head_sha))
        answer.say(key, texts.stale(pull.head_sha, [(request.suite, request.requester, request.head_sha)]),
                   step="stale")
        return "stale"
    limit = float(pull.config.budgets.daily_gpu_hours)
    target = dispatch_cfg.repository or pull.repo
    client = _client_for(pull, target)  # before the claim: a failure here leaves nothing half-dispatched
    running_for(pull, request.suite, request.head_sha)  # settles a run whose worker or completion event was lost
    # The budget check and the claim are one transaction (bot.store.ondemand.reserve): step 4 of
    # ondemand_states.DISPATCH_SEQUENCE. Only the worker whose claim succeeds dispatches.
    reservation = store.reserve(pull.store_url, request.id, since=store.now() - BUDGET_WINDOW,
                                limit=limit, dispatched_at=store.now(), decided_by=approved_by)
    if reservation.outcome == store.OVER_BUDGET:
        used = reservation.used
        pull.change(request, "over_budget", dict(
            actor=actor, files=requested_files(request), cost_gpu_hours=request.cost_gpu_hours,
            detail=f"over budget: {used:.2f} used + {request.cost_gpu_hours:.2f} > {limit:.2f}"),
            reason="over the daily GPU-hour budget")
        answer.refuse(comment_id, key, texts.over_budget(actor, request.suite, request.cost_gpu_hours, used, limit,
                                                         cost_notes(request)), step="refused")
        return "over_budget"
    if reservation.outcome != store.RESERVED:
        current = store.get_request(pull.store_url, request.id)
        if current.status == store.DISPATCHING:
            return "dispatched"  # another worker is dispatching it now, and follows it through
        if current.status in (store.DISPATCHED, store.COMPLETED):
            follow_through(pull, current, answer, approved_by=approved_by)  # an earlier attempt of this very job
            return "dispatched"
        running = store.in_flight(pull.store_url, pull.repo, pull.number, request.suite, request.head_sha)
        if running is not None:
            pull.change(request, "busy", dict(actor=actor, detail=f"already in flight: request {running.id}",
                                              run_id=running.workflow_run_id),
                        reason=f"run {running.id} in flight")
            answer.refuse(comment_id, key, texts.in_flight(actor, request.suite, running.run_url, running.requester),
                          step="refused")
            return "in_flight"
        return "not_approved"
    since = store.now()
    try:
        answer_of_github = client.dispatch_workflow(target, dispatch_cfg.workflow, dispatch_cfg.ref,
                                                    _inputs(pull, request, dispatch_cfg))
    except GitHubError as exc:
        pull.change(request, "dispatch_failed", dict(actor=actor, files=requested_files(request),
                                                     detail=f"{exc.status} {exc.message}"),
                    reason=f"{exc.status} {exc.message}"[:500], dispatched_at=None)
        answer.refuse(comment_id, key, texts.dispatch_failed(request.suite, exc.status, exc.message),
                      step=f"failed:{since.timestamp():.0f}")
        return "failed"
    except TransientError:
        # GitHub did not answer: the dispatch may or may not have happened. Look before trying again.
        run = _find_run(client, target, request, since)
        if run is None:
            pull.change(request, "dispatch_unconfirmed", reason="GitHub did not confirm the dispatch", dispatched_at=None)
            raise
        answer_of_github = {"workflow_run_id": run["id"], "html_url": run.get("html_url")}
    if answer_of_github is None:
        run = _find_run(client, target, request, since)
        answer_of_github = {"workflow_run_id": run["id"], "html_url": run.get("html_url")} if run else {}
    # Step 6 of ondemand_states.DISPATCH_SEQUENCE: the status, the run and the "dispatch" entry together.
    run_id = answer_of_github.get("workflow_run_id")
    current = pull.change(request, "confirm", dict(
        actor=actor, files=requested_files(request), cost_gpu_hours=request.cost_gpu_hours, run_id=run_id,
        detail=f"{target} {dispatch_cfg.workflow}@{dispatch_cfg.ref}" + (f", approved by {approved_by}" if approved_by else "")),
        workflow_run_id=run_id, run_url=answer_of_github.get("html_url"))
    if current is None:
        current = store.get_request(pull.store_url, request.id)
    if current.status == store.SUPERSEDED:
        # A push superseded the request while GitHub was starting its run: stop that run too.
        pull.change(current, "superseded_run_named", dict(
            actor=actor, run_id=run_id, detail=f"{current.reason}: cancelled as it was dispatched"),
            workflow_run_id=run_id, run_url=answer_of_github.get("html_url"))
        if run_id is not None:
            tolerate_gone(lambda: client.cancel_workflow_run(target, int(run_id)), also=(409,))
        new_head = str(current.reason or "").rsplit(" ", 1)[-1]
        answer.say(key, texts.superseded(new_head, [(request.suite, request.head_sha, answer_of_github.get("html_url"))]),
                   step="superseded")
        return "superseded"
    follow_through(pull, current, answer, approved_by=approved_by)
    return "dispatched"


def follow_through(pull: Pull, request, answer: Answer, *, approved_by: str | None) -> None:
    """After a dispatch: the "MI350 · <suite>" check run, the request's check run closed as approved
    (each once), then the rocket and one reply into `answer`."""
    key = f"request:{request.id}"
    rows = selected_rows(request)

    def start_check():
        run = pull.client.create_check_run(pull.repo, {
            "name": texts.RUN_CHECK.format(suite=request.suite), "head_sha": request.head_sha,
            "status": "in_progress", "started_at": iso_now(), "external_id": f"rocm-run:{request.id}",
            **({"details_url": request.run_url} if request.run_url else {}),
            "output": texts.run_started_output(request.suite, request.head_sha, request.run_url, rows,
                                               request.cost_gpu_hours, request.details.get("plan"))})
        store.update_request(pull.store_url, request.id, run_check_run_id=run["id"])

    once(pull, key, "run-check", start_check)
    if request.request_check_run_id is not None:
        once(pull, key, "request-check-approved", lambda: close_request_check(
            pull, request, *texts.request_approved(approved_by or request.decided_by or request.requester,
                                                   request.run_url), conclusion="success"))
    answer.react(request.comment_id, "rocket")
    used = budget_used(pull.store_url, pull.repo)
    answer.say(key, texts.dispatched(request.suite, request.head_sha, pull.number, request.run_url, rows,
                                     request.cost_gpu_hours, request.details.get("gpus", 1),
                                     used, float(pull.config.budgets.daily_gpu_hours), approved_by,
                                     cost_notes(request), int(request.details.get("plan", {}).get("shards", 1)),
                                     request.details.get("run_plan")),
               step="dispatched")
