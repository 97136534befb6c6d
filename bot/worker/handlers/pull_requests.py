"""The "CI registrations" check: one check run on a pull request's head SHA, from checks/ findings."""

from __future__ import annotations

import datetime as dt

from gidgethub.routing import Router

from bot.analysis.bounded import LimitExceeded, run_check_bounded
from bot.worker.checkruns import DEAD_TITLE, FAILED_TITLE, STALE_TITLE
from bot.durations.query import check_rows
from bot.github.retry import GitHubError
from bot.infra import payloads
from bot.infra.current_job import CURRENT_JOB
from bot.worker.job import check_run_completed
from bot.analysis.sources import GitHubTree, changed_paths, external_consumers
from bot.store import evidence as evidence_store
from bot.store import heads
from bot.store import service as store
from bot.store.index import RegistrationIndex
from bot.worker.suggestions import post_suggestions
from checks.config.schema import CONFIG_PATH, load_config  # read from the default branch, never from the PR
from checks.reporting.render import ANNOTATIONS_PER_REQUEST, CHECK_RUN_NAME as CHECK_NAME

router = Router()

# Titles of runs that report a job which did not finish (this handler's, a dead letter's, the
# reconciler's): such a run is never reused, the next attempt or re-run gets a fresh one.
FAILED_TITLES = (FAILED_TITLE, STALE_TITLE, DEAD_TITLE)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# -- triggers -------------------------------------------------------------------------------------
@router.register("pull_request", action="opened")
@router.register("pull_request", action="reopened")
@router.register("pull_request", action="synchronize")
@router.register("pull_request", action="ready_for_review")
async def pull_request_changed(event, ctx):
    pr = event.data["pull_request"]
    if pr.get("state") == "closed":
        return
    repo = event.data["repository"]["full_name"]
    if event.data.get("action") in heads.PUSH_ACTIONS:
        _note(ctx, repo, pr["number"], pr["head"]["sha"], pr.get("updated_at"))
    with ctx.exclusive(repo, pr["head"]["sha"], CHECK_NAME):  # opened + ready_for_review together: one run
        run_check(ctx, repo=repo, head_sha=pr["head"]["sha"], base_sha=pr["base"]["sha"], number=pr["number"],
                  rerun=False, default_branch=_default_branch(event), changed_files=pr.get("changed_files"),
                  updated_at=pr.get("updated_at"))


def _note(ctx, repo: str, number: int, head_sha: str, updated_at: str | None) -> None:
    try:
        heads.note(ctx.store_url, repo, number, head_sha, updated_at or "")
    except Exception as exc:  # noqa: BLE001 - only the saving is lost
        ctx.log.warning("could not note the PR's head", error=type(exc).__name__)


def superseded_by(ctx, repo: str, number: int | None, head_sha: str, updated_at: str | None) -> str | None:
    """The PR's newer head if the head this pull_request event names (the PR's `updated_at` then)
    is no longer its head. A re-run passes no `updated_at`: it is never superseded."""
    if not updated_at or number is None:
        return None
    try:
        return heads.newer_head(ctx.store_url, repo, number, head_sha, updated_at)
    except Exception as exc:  # noqa: BLE001 - a store that cannot say: check as before
        ctx.log.warning("could not read the PR's newest head", error=type(exc).__name__)
        return None


def _default_branch(event) -> str:
    return event.data["repository"].get("default_branch") or "main"


def _first_pr(pull_requests):
    """The PR a check or suite belongs to (GitHub leaves the list empty for a fork's PR)."""
    return pull_requests[0] if pull_requests else None


@router.register("check_run", action="rerequested")
async def check_run_rerequested(event, ctx):
    checked = payloads.checked(payloads.CheckRunEvent, event.data)  # only what the intake checked
    run = checked.check_run
    if run.name != CHECK_NAME:
        return
    repo = checked.repository.full_name
    pr = _first_pr(run.pull_requests)
    with ctx.exclusive(repo, run.head_sha, CHECK_NAME):
        run_check(ctx, repo=repo, head_sha=run.head_sha, base_sha=pr.base.sha if pr and pr.base else None,
                  number=pr.number if pr else None, rerun=True, default_branch=checked.repository.default_branch or "main")


@router.register("check_suite", action="rerequested")
async def check_suite_rerequested(event, ctx):
    checked = payloads.checked(payloads.CheckSuiteEvent, event.data)  # only what the intake checked
    suite = checked.check_suite
    repo = checked.repository.full_name
    pr = _first_pr(suite.pull_requests)
    with ctx.exclusive(repo, suite.head_sha, CHECK_NAME):
        run_check(ctx, repo=repo, head_sha=suite.head_sha, base_sha=pr.base.sha if pr and pr.base else None,
                  number=pr.number if pr else None, rerun=True, default_branch=checked.repository.default_branch or "main")


# -- the check ------------------------------------------------------------------------------------
def find_or_create_run(client, ctx, repo: str, head_sha: str, rerun: bool) -> tuple[dict, bool]:
    """The check run this job writes to, and whether its work is already done.

    One run per (head, check): a pull_request event reuses the run of that name on that SHA (a job
    that runs twice posts nothing twice). A re-run request re-checks against the last run: when
    the verdict is unchanged nothing is written (however many times the request is replayed, under
    whatever delivery ids), when it changed a new run carries it (GitHub does not let a completed
    run go back to in progress). Only when the last run reports a job that did not finish does a
    re-run start a new run straight away.
    """
    if not rerun and getattr(ctx, "attempt", 1) == 1 and not store.has_check_run(ctx.store_url, repo, head_sha, CHECK_NAME):
        # The first attempt of the first job for this head: every create this App sends is noted
        # before it is sent (_create_run), so none exists yet and listing GitHub's would cost a
        # call to learn nothing. Any later job lists: a retry, a duplicate delivery, a re-run, and
        # also another delivery's first attempt after a create whose answer was lost (a read
        # timeout: GitHub may have made the run; without the note it would get a second one).
        return _create_run(client, ctx, repo, head_sha), False
    runs = client.check_runs_for_ref(repo, head_sha, CHECK_NAME)
    app_id = str(ctx.settings.app_id or "")
    ours = [r for r in runs if r.get("name") == CHECK_NAME and r.get("head_sha") == head_sha
            and (not app_id or str((r.get("app") or {}).get("id", app_id)) == app_id)]
    ours.sort(key=lambda r: r["id"], reverse=True)
    if ours and _reusable(ours[0]):
        run = ours[0]
        completed = run.get("status") == "completed"
        if completed:
            try:  # bookkeeping only: the verdict is on GitHub (the reconciler also catches this up)
                _record(ctx, repo, head_sha, run, run.get("conclusion"))
            except Exception as exc:
                ctx.log.warning("could not record a completed check run", check_run_id=run["id"],
                                error=type(exc).__name__)
        if rerun and completed and run.get("external_id") != ctx.delivery_id:
            # Checked again against this run's verdict (complete_run compares); never overwritten,
            # not even by this job's failure: the last verdict stands until a new one replaces it.
            ctx.rerun_of = {**(getattr(ctx, "rerun_of", None) or {}), run["id"]: run}
            ctx.disarm(run["id"])
            return run, False
        return run, completed
    # None yet, or the last one reports a job that failed for good: this attempt gets a fresh run.
    return _create_run(client, ctx, repo, head_sha), False


def _reusable(run: dict) -> bool:
    """A run that carries a verdict: not one reporting a job that did not finish, nor one that a
    newer push superseded (that head may be the PR's head again, after a force-push back)."""
    title = (run.get("output") or {}).get("title") or ""
    return title not in FAILED_TITLES and not title.startswith(SUPERSEDED_TITLE)


def _create_run(client, ctx, repo: str, head_sha: str) -> dict:
    # Noted first (under the head's claim, committed): a create that times out may still have
    # made the run, and the next job for this head must then list GitHub's runs to find it.
    store.note_check_run_create(ctx.store_url, repo, head_sha, CHECK_NAME)
    run = client.create_check_run(repo, {"name": CHECK_NAME, "head_sha": head_sha, "status": "in_progress",
                                         "external_id": ctx.delivery_id, "started_at": _now()})
    # Armed and recorded at once: if this job dies from here on, the run is completed with the
    # reason (by this job's failure report, a dead letter's, or the reconciler, which finds it here).
    ctx.report_on_failure(repo, run["id"])
    _record(ctx, repo, head_sha, run, None)
    return run


def _record(ctx, repo: str, head_sha: str, run: dict, conclusion: str | None) -> None:
    store.record_check_run(ctx.store_url, repository=repo, head_sha=head_sha, name=CHECK_NAME,
                           check_run_id=run["id"], delivery_id=ctx.delivery_id, conclusion=conclusion)


def run_check(ctx, *, repo: str, head_sha: str, base_sha: str | None, number: int | None, rerun: bool,
              default_branch: str, changed_files: int | None = None, updated_at: str | None = None) -> None:
    client = ctx.client
    newer = superseded_by(ctx, repo, number, head_sha, updated_at)
    if newer is not None:
        # Queued behind a newer push: that push's job checks the PR; this one spends nothing.
        ctx.log.info("check superseded before it started", head_sha=head_sha, newer_head=newer)
        return
    try:
        run, done = find_or_create_run(client, ctx, repo, head_sha, rerun)
    except GitHubError as exc:
        if not _no_such_commit(exc):
            raise
        # GitHub has no such commit (a head force-pushed away and collected, or a payload naming
        # none): nothing to check, and no check run can be attached to it.
        ctx.log.info("head commit not on GitHub, nothing to check", head_sha=head_sha)
        return
    if done:
        ctx.log.info("check already completed", check_run_id=run["id"], head_sha=head_sha)
        return
    ctx.report_on_failure(repo, run["id"])
    report, files = analyse(ctx, client, repo=repo, head_sha=head_sha, base_sha=base_sha, number=number,
                            default_branch=default_branch, changed_files=changed_files)
    conclusion, output, annotations = report.check_run() if isinstance(report, LimitExceeded) else render(report)
    newer = superseded_by(ctx, repo, number, head_sha, updated_at)
    if newer is not None:
        # Pushed over while this ran: the files list already describes the newer head, so this
        # verdict could mix two pushes. Said so, and nothing else written (no suggestions).
        conclusion, output, annotations = "cancelled", superseded_output(newer), []
        files = None
    # the summary's /run-rocm suggestions as buttons (a maintainer's click: bot/worker/handlers/summary_actions.py)
    actions = [] if isinstance(report, LimitExceeded) or newer is not None else render_actions(report)
    complete_run(client, repo, run["id"], conclusion, output, annotations, actions=actions)
    if files is not None and not isinstance(report, LimitExceeded):
        # After the check run: a suggestion is a convenience, the check is the verdict.
        post_suggestions(client, repo, number, head_sha, report, files)
    store.record_check_run(ctx.store_url, repository=repo, head_sha=head_sha, name=CHECK_NAME,
                           check_run_id=run["id"], delivery_id=ctx.delivery_id, conclusion=conclusion)


def analyse(ctx, client, *, repo: str, head_sha: str, base_sha: str | None, number: int | None, default_branch: str,
            changed_files: int | None = None):
    """The check of one head: (report, or LimitExceeded; the PR's files, None without a base)."""
    head = GitHubTree(client, repo, head_sha)
    base = GitHubTree(client, repo, base_sha, listed=False) if base_sha else None  # read at known paths only
    files = client.pull_files(repo, number, expected=changed_files) if number and base is not None else None
    changed = changed_paths(files) if files is not None else None
    config_text = client.file_at(repo, CONFIG_PATH, default_branch)  # the default branch's, never the PR's
    config, problems = load_config(config_text)
    # External consumers' workflows, each at its repository's default branch (ETag-cached); none
    # when the configuration is invalid (REG900 fails the check, the defaults are not used).
    consumers = external_consumers(client, config) if not problems else {}
    index = RegistrationIndex(ctx.store_url, repo)  # files already scanned, by blob SHA, for every worker
    durations = stored_durations(ctx, repo, config, default_branch)
    arguments = {"durations": durations} if durations is not None else {}
    at_head = pull_request_runs(ctx, repo, number, head_sha) if base is not None else None
    if at_head:
        arguments["head_runs"] = at_head  # the on-demand runs this App dispatched for the PR: evidence at its head
    report = run_check_bounded(head, base, changed, config_text=config_text, scan_cache=index, log=ctx.log,
                               consumers_from=consumers,  # a child process, time and memory capped
                               arguments=arguments or None)
    return report, files


def refresh_evidence(ctx, client, repo: str, number: int, head_sha: str) -> bool:
    """An on-demand run of this PR completed: the check run of its head follows the evidence.

    Only when `head_sha` is still the PR's head (GitHub says, one call): after a push the new
    head's own check shows that run as an earlier head's. The completed "CI registrations" run of
    that head is checked again and its summary, title and conclusion are written over in place:
    no new check run, no comment. Annotations already posted stay (GitHub keeps a run's
    annotations); the summary lists the findings of now. A run still in progress, or none yet,
    is left to its own job, which reads the evidence itself. True when the run was updated.
    """
    pull = client.pull(repo, number)
    if pull.get("state") == "closed" or (pull.get("head") or {}).get("sha") != head_sha:
        return False
    with ctx.exclusive(repo, head_sha, CHECK_NAME):  # never beside a job checking this head
        app_id = str(ctx.settings.app_id or "")
        ours = [r for r in client.check_runs_for_ref(repo, head_sha, CHECK_NAME)
                if r.get("name") == CHECK_NAME and r.get("head_sha") == head_sha and r.get("status") == "completed"
                and _reusable(r) and (not app_id or str((r.get("app") or {}).get("id", app_id)) == app_id)]
        if not ours:
            return False
        run = max(ours, key=lambda r: r["id"])
        report, _files = analyse(ctx, client, repo=repo, head_sha=head_sha, base_sha=(pull.get("base") or {}).get("sha"),
                                 number=number, default_branch=(pull.get("base") or {}).get("repo", {}).get("default_branch") or "main",
                                 changed_files=pull.get("changed_files"))
        if isinstance(report, LimitExceeded):
            return False  # the verdict posted stands
        conclusion, output, _annotations = render(report)
        before = run.get("output") or {}
        if run.get("conclusion") == conclusion and before.get("summary") == output["summary"] \
                and before.get("title") == output["title"]:
            return False
        body = {"conclusion": conclusion, "output": output}
        actions = render_actions(report)
        body["actions"] = actions  # the suggestions of now (none left when every file is verified)
        client.update_check_run(repo, run["id"], body)
        store.record_check_run(ctx.store_url, repository=repo, head_sha=head_sha, name=CHECK_NAME,
                               check_run_id=run["id"], delivery_id=ctx.delivery_id, conclusion=conclusion)
        return True


def stored_durations(ctx, repo: str, config, default_branch: str | None = None) -> list[dict] | None:
    """This repository's stored duration statistics, as `ci-registrar check --durations` reads them.

    Read here, in the worker, once per check and for `repo` only, with the default branch's
    `calibration:` window: the analysis child gets plain rows and never the store's credentials.
    None when nothing is stored for `repo`: the check is then what it was before any duration was
    kept (no REG021 "no stored durations" notice on every ROCm registration of a repository that
    never sent one). A store that cannot answer is logged and the check goes on without durations,
    never an internal error.
    """
    try:
        return check_rows(ctx.store_url, repository=repo, params=config.calibration, default_branch=default_branch) or None
    except Exception as exc:  # noqa: BLE001 - durations refine the check, they are not needed for it
        ctx.log.warning("stored durations unavailable, checked without them", error=type(exc).__name__)
        return None


def pull_request_runs(ctx, repo: str, number: int | None, head_sha: str) -> dict | None:
    """The completed on-demand runs of this pull request, read here like the durations (the
    analysis child gets plain data); None when there are none or the store cannot say."""
    if number is None:
        return None
    try:
        found = evidence_store.head_runs(ctx.store_url, repository=repo, head_sha=head_sha, pull_number=number)
    except Exception as exc:  # noqa: BLE001 - evidence refines the summary, the check stands without it
        ctx.log.warning("on-demand runs unavailable, checked without them", error=type(exc).__name__)
        return None
    return found if found["runs"] else None


def _no_such_commit(exc: GitHubError) -> bool:
    """GitHub's answer to a check run for a SHA it does not have: 422 "No commit found for SHA"."""
    return exc.status == 422 and "no commit found" in (exc.message or "").lower()


def complete_run(client, repo: str, run_id: int, conclusion: str, output: dict, annotations: list[dict],
                 actions: list[dict] | None = None) -> None:
    """Annotations in batches of 50: all but the last batch while in progress, the last one completes it.

    A re-run (see find_or_create_run) writes nothing when the verdict is the last run's, and
    completes a new run when it changed.
    """
    ctx = CURRENT_JOB.get()
    previous = (getattr(ctx, "rerun_of", None) or {}).get(run_id)
    if previous is not None:
        before = previous.get("output") or {}
        if previous.get("conclusion") == conclusion and before.get("title") == output.get("title") \
                and (before.get("summary") or "") == (output.get("summary") or ""):
            ctx.log.info("re-run: verdict unchanged", check_run_id=run_id)
            return
        run_id = _create_run(client, ctx, repo, previous["head_sha"])["id"]
    batches = [annotations[i:i + ANNOTATIONS_PER_REQUEST] for i in range(0, len(annotations), ANNOTATIONS_PER_REQUEST)] or [[]]
    for batch in batches[:-1]:
        client.update_check_run(repo, run_id, {"output": {**output, "annotations": batch}})
    final = {**output, "annotations": batches[-1]} if batches[-1] else output
    body = {"status": "completed", "conclusion": conclusion, "completed_at": _now(), "output": final}
    if actions:
        body["actions"] = actions
    client.update_check_run(repo, run_id, body)
    check_run_completed(run_id)  # from here on, no failure of this job overwrites the verdict
    if previous is not None and ctx is not None:
        try:
            store.set_check_run_conclusion(ctx.store_url, run_id, conclusion)
        except Exception as exc:
            ctx.log.warning("could not record a completed check run", check_run_id=run_id, error=type(exc).__name__)


SUPERSEDED_TITLE = "Superseded by a newer push"


def superseded_output(newer: str) -> dict:
    return {"title": f"{SUPERSEDED_TITLE} ({newer[:7]})",
            "summary": f"The pull request's head moved to `{newer}` while this commit was being checked. "
                       "That push is checked instead; nothing here was judged."}


# -- rendering lives in checks.reporting.render (analysis never knows how it is shown) ----------------------
def render_actions(report) -> list[dict]:
    from checks.reporting import render

    return render.check_run_actions(report)


def render(report) -> tuple[str, dict, list[dict]]:
    from checks.reporting import render

    output = {"title": render.check_run_title(report), "summary": render.check_run_summary(report)}
    return render.check_run_conclusion(report), output, render.check_run_annotations(report)
