"""Requests, approvals and dispatch: the steps between an accepted command and a run on MI350 GPUs.

Every step that touches GitHub is taken once, whichever worker gets there first and however often
a delivery is processed: a request is one row per comment (a unique key), its states change only
by the events of bot/store/ondemand_states.py, each one transaction that compare-and-sets the
status and writes its audit entry with it (bot.store.ondemand.change), at most one run per (PR,
suite) can be in flight (a partial unique index), and each reply or check run is guarded by a
claimed step (bot.store.ondemand.claim_step). A step whose GitHub call fails in a way worth
retrying is released so that the retried job takes it again. A dispatch, which interleaves
GitHub's calls with its writes, is the sequence ondemand_states.DISPATCH_SEQUENCE documents
(docs/on-demand-states.md).

Nothing from the pull request decides what runs where: the suite must be in the dispatch table of
the configuration on the default branch, the workflow and its ref come from there, and the head
SHA is the one GitHub reports for the PR now.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from bot.durations.ingest import ingest_job_log
from bot.github.retry import GitHubError, TransientError
from bot.ondemand import texts
from checks.target.run_cost import Costing
from bot.ondemand.permissions import Authority
from bot.ondemand.selection import Outcome, Selection, analyse_bounded
from checks.wording import visible
from bot.analysis.sources import GitHubTree
from bot.store import ondemand as store
from checks.config.schema import CONFIG_PATH, Config, load_config
from checks.target.dispatch_plan import partition
from checks.calibration.job_log import parse_job_log
from checks.calibration.estimates import runner_timeout
from checks.wording import plural

BUDGET_WINDOW = dt.timedelta(hours=24)
RETRYABLE = store.RETRYABLE  # not dispatched yet: approvable again
# A dispatch claimed this long ago and never confirmed died with its worker.
STUCK_AFTER = dt.timedelta(minutes=10)
CONCLUSIONS = {"success", "failure", "cancelled", "timed_out", "neutral", "skipped", "action_required"}


def _iso_now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class Pull:
    """One pull request as the flow needs it: GitHub's answer now, the trusted configuration, the store."""

    job: object  # bot.worker.job.JobContext
    repo: str
    number: int
    data: dict  # GET pulls/{n}
    config: Config
    _analysis: Outcome | None = field(default=None, repr=False)
    _tree: object = field(default=None, repr=False)
    _default_tree: object = field(default=None, repr=False)

    @property
    def client(self):
        return self.job.client

    @property
    def store_url(self) -> str:
        return self.job.store_url

    @property
    def head_sha(self) -> str:
        return self.data["head"]["sha"]

    @property
    def open(self) -> bool:
        return self.data.get("state") == "open" and not self.data.get("merged")

    @property
    def tree(self):
        if self._tree is None:
            self._tree = GitHubTree(self.client, self.repo, self.head_sha)
        return self._tree

    @property
    def default_branch(self) -> str:
        return ((self.data.get("base") or {}).get("repo") or {}).get("default_branch") or "main"

    @property
    def default_tree(self):
        """The default branch now, at one commit: the CI an on-demand run copies (never the PR's)."""
        if self._default_tree is None:
            self._default_tree = GitHubTree(self.client, self.repo, self.client.branch_head(self.repo, self.default_branch))
        return self._default_tree

    def analyse(self, suite: str | None = None, files=()) -> Outcome:
        """The head's runnable suites (and `suite`'s selection and plan), read in the bounded
        analysis child, with the default branch's CI and the external consumers' workflows."""
        from bot.analysis.sources import external_consumers
        from bot.store.index import RegistrationIndex

        self._analysis = analyse_bounded(self.tree, self.config, suite=suite, files=files, head_sha=self.head_sha,
                                         scan_cache=RegistrationIndex(self.store_url, self.repo), log=self.job.log,
                                         base=self.default_tree, consumers_from=external_consumers(self.client, self.config))
        return self._analysis

    def runnable_suites(self) -> list[str] | None:
        """None when the head could not be read within the analysis limits."""
        if not self.config.dispatch:
            return []  # nothing is dispatchable: no need to read the head's inventory
        return (self._analysis or self.analyse()).runnable

    def audit(self, action: str, **values) -> None:
        values.setdefault("pull_number", self.number)
        values.setdefault("head_sha", self.head_sha)
        store.audit(self.store_url, repository=self.repo, action=action, delivery_id=self.job.delivery_id, **values)

    def audit_once(self, key: str, step: str, action: str, **values) -> bool:
        """audit(), once per (key, step): the step's claim and the entry are one transaction."""
        values.setdefault("pull_number", self.number)
        values.setdefault("head_sha", self.head_sha)
        return store.audit_once(self.store_url, key, step, repository=self.repo, action=action,
                                delivery_id=self.job.delivery_id, **values)

    def change(self, request, event: str, audit: dict | None = None, **values):
        return change(self.job, request, event, audit, **values)


def change(job, request, event: str, audit: dict | None = None, **values):
    """One event of bot/store/ondemand_states.py on `request`: its status, `values` and audit entry
    (this delivery's) in one transaction. The entry takes the request's repository, PR, head, suite
    and id from the row (bot.store.ondemand.change): `audit` gives the rest (actor, files, detail...).
    The row as changed, or None: another worker moved it first."""
    if audit is not None:
        audit = {"delivery_id": getattr(job, "delivery_id", None), **audit}
    return store.change(job.store_url, request.id, event, audit=audit, **values)


def trusted_config(client, repo: str, default_branch: str) -> tuple[Config | None, list[str]]:
    """The configuration on the default branch (never the PR's copy); (None, problems) when invalid."""
    # with the default branch's commit, in one request: the command's plan then copies that commit's CI
    config, findings = load_config(client.branch_file(repo, CONFIG_PATH, default_branch))
    if findings:
        return None, [f"line {f.span.line}: {f.message}" for f in findings]
    return config, []


def budget_used(store_url: str, repo: str) -> float:
    return store.gpu_hours_since(store_url, repo, store.now() - BUDGET_WINDOW)


def selected_rows(request) -> list[tuple[str, float | None]]:
    return [(f, e) for f, e in request.details.get("selected", [])]


def requested_files(request) -> list[str]:
    return list(request.details.get("requested", []))


def details(requested: list[str], selection: Selection, costing: Costing, hardware: str) -> dict:
    """What a request keeps: the files asked for, each selected file with its est_time as
    registered, how the budget costed each (checks/target/run_cost.py) and the reply's notes on that,
    and where and how it runs (checks/target/dispatch_plan.py): the dispatch's inputs (`plan`) and the
    plan as `run-plan --format json` shows it (`run_plan`), which the replies and the completed
    check run read (its per-file timeout judges each file)."""
    return {"requested": list(requested), "selected": [[f.file, f.est_time] for f in costing.files],
            "costed": costing.as_details(), "cost_notes": costing.notes() + list(selection.notes),
            "gpus": selection.gpus, "plan": selection.plan.inputs(),
            "run_plan": selection.plan.as_json(costing.gpu_hours)}


def cost_notes(request) -> list[str]:
    return list(request.details.get("cost_notes", []))


# -- steps: once per key --------------------------------------------------------------------------
def once(pull: Pull, key: str, step: str, action) -> bool:
    """Run `action()` only if this caller claims (key, step); a transient failure releases the claim."""
    if not store.claim_step(pull.store_url, key, step):
        return False
    try:
        action()
    except (TransientError, GitHubError) as exc:
        if isinstance(exc, TransientError) or exc.status >= 500:
            store.release_step(pull.store_url, key, step)
        raise
    return True


def reply(pull: Pull, key: str, body: str, step: str = "reply") -> None:
    # A PR that is gone (404/410) cannot be answered; what happened is in the audit log already.
    # Every reply passes checks.wording.visible: no bidi override or invisible character of a name
    # reaches the comment raw, whichever text interpolated it.
    body = visible(body)
    once(pull, key, step, lambda: tolerate_gone(lambda: pull.client.comment(pull.repo, pull.number, body)))


def react(pull: Pull, comment_id: int | None, content: str) -> None:
    """A reaction on the command's comment; one deleted meanwhile (404/410) gets none, and the
    step after it (audit, reply, dispatch follow-through) still happens."""
    if comment_id is not None:
        tolerate_gone(lambda: pull.client.react(pull.repo, comment_id, content))


# -- requests -------------------------------------------------------------------------------------
EXPIRED_DETAIL = "This request is older than 7 days and will not run."


def _expire(store_url: str, request, client, delivery_id: str | None = None) -> bool:
    """Close one request as expired (once: compare-and-set), with its audit entry and check run."""
    if store.change(store_url, request.id, "expire", audit=dict(
            files=requested_files(request), detail="older than 7 days", delivery_id=delivery_id)) is None:
        return False
    if client is not None:
        _close_check(client, request.repository, request, "Expired", EXPIRED_DETAIL)
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
        close_request_check(pull, request, "Stale", f"The PR's head moved to {pull.head_sha}.")
    return expired, stale


def close_request_check(pull: Pull, request, title: str, detail: str, conclusion: str = "cancelled") -> None:
    _close_check(pull.client, pull.repo, request, title, detail, conclusion)


def _close_check(client, repo: str, request, title: str, detail: str, conclusion: str = "cancelled") -> None:
    if request.request_check_run_id is None:
        return
    tolerate_gone(lambda: client.update_check_run(repo, request.request_check_run_id, {
        "status": "completed", "conclusion": conclusion, "completed_at": _iso_now(), "actions": [],
        "output": texts.request_closed_output(title, detail)}))


def sweep_expired(github, store_url: str, installation_for) -> int:
    """Expire requests older than 7 days everywhere (the worker's periodic pass), so their
    "MI350 run request" check run does not wait for ever on a PR nobody touches again."""
    done = 0
    for request in store.open_requests_before(store_url, store.now() - store.REQUEST_TTL):
        installation = installation_for(store_url, request.repository)
        client = github.for_installation(installation) if installation is not None else None
        done += _expire(store_url, request, client)
    return done


def open_request_check(pull: Pull, request, comment_url: str | None) -> None:
    """The "MI350 run request · <suite>" check run with its Approve button (created once)."""
    def create():
        run = pull.client.create_check_run(pull.repo, {
            "name": texts.REQUEST_CHECK.format(suite=request.suite), "head_sha": request.head_sha,
            "status": "completed", "conclusion": "action_required", "completed_at": _iso_now(),
            "external_id": f"rocm-request:{request.id}", "details_url": comment_url or pull.data.get("html_url"),
            "output": texts.request_check_output(request.requester, request.suite, request.head_sha,
                                                 selected_rows(request), request.cost_gpu_hours),
            "actions": [texts.APPROVE_ACTION]})
        store.update_request(pull.store_url, request.id, request_check_run_id=run["id"])
        request.request_check_run_id = run["id"]

    once(pull, f"request:{request.id}", "request-check", create)


# -- dispatch -------------------------------------------------------------------------------------
def _inputs(pull: Pull, request, dispatch) -> dict:
    values = {"suite": request.suite, "head_sha": request.head_sha, "pull_number": str(request.pull_number),
              "files": " ".join(requested_files(request)), "repository": request.repository,
              # where and how it runs, planned (and costed) when the request was made (checks/target/dispatch_plan.py)
              **request.details.get("plan", {})}
    # A request stored before plans were recorded has none: the workflow's own defaults apply.
    return {name: values[source] for name, source in dispatch.inputs.items() if source in values}


def client_for(job, repo: str, known=None):
    """A client for `repo` (the App must be installed there); `known`: (its repository, its client)."""
    if known is not None and known[0] == repo:
        return known[1]
    github = job.github
    installation = github.app_request("GET", f"/repos/{repo}/installation", "/repos/{owner}/{repo}/installation")
    return github.for_installation(int(installation["id"]))


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


def dispatch(pull: Pull, request, *, actor: str, approved_by: str | None, comment_id: int | None) -> str:
    """Dispatch an approved request: budget, one in flight, the workflow_dispatch, then follow-through.

    Returns what happened: dispatched | in_flight | over_budget | failed | not_approved | stale.
    """
    dispatch_cfg = pull.config.dispatch.get(request.suite)
    key = f"request:{request.id}"
    if dispatch_cfg is None:  # the dispatch table changed since the request was made
        pull.change(request, "undispatchable", reason="no longer in the dispatch table")
        reply(pull, key, texts.not_selectable(request.requester, f"`{request.suite}` is no longer in the dispatch table",
                                              pull.runnable_suites()), step="refused")
        return "failed"
    if "plan" in dispatch_cfg.inputs.values() and "plan" not in request.details.get("plan", {}):
        # made before run plans were kept: where and how it would run was never planned (nor costed)
        reason = "this request was made before run plans were kept: write `/run-rocm` again to plan and cost it"
        pull.change(request, "unplanned", dict(actor=actor, detail="no run plan"), reason=reason[:500])
        reply(pull, key, texts.not_selectable(request.requester, reason, None), step="refused")
        return "failed"
    if request.head_sha != pull.head_sha:  # never a head other than the one the request was made and approved on
        if pull.change(request, "stale", dict(actor=actor, files=requested_files(request),
                                              detail=f"head moved to {pull.head_sha}"),
                       reason=f"the PR's head moved to {pull.head_sha}"):
            close_request_check(pull, request, "Stale", f"The PR's head moved to {pull.head_sha}.")
        reply(pull, key, texts.stale(pull.head_sha, [(request.suite, request.requester, request.head_sha)]),
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
        react(pull, comment_id, "confused")
        reply(pull, key, texts.over_budget(actor, request.suite, request.cost_gpu_hours, used, limit), step="refused")
        return "over_budget"
    if reservation.outcome != store.RESERVED:
        current = store.get_request(pull.store_url, request.id)
        if current.status == store.DISPATCHING:
            return "dispatched"  # another worker is dispatching it now, and follows it through
        if current.status in (store.DISPATCHED, store.COMPLETED):
            follow_through(pull, current, approved_by=approved_by)  # an earlier attempt of this very job
            return "dispatched"
        running = store.in_flight(pull.store_url, pull.repo, pull.number, request.suite, request.head_sha)
        if running is not None:
            pull.change(request, "busy", dict(actor=actor, detail=f"already in flight: request {running.id}",
                                              run_id=running.workflow_run_id),
                        reason=f"run {running.id} in flight")
            react(pull, comment_id, "confused")
            reply(pull, key, texts.in_flight(actor, request.suite, running.run_url, running.requester), step="refused")
            return "in_flight"
        return "not_approved"
    since = store.now()
    try:
        answer = client.dispatch_workflow(target, dispatch_cfg.workflow, dispatch_cfg.ref,
                                          _inputs(pull, request, dispatch_cfg))
    except GitHubError as exc:
        pull.change(request, "dispatch_failed", dict(actor=actor, files=requested_files(request),
                                                     detail=f"{exc.status} {exc.message}"),
                    reason=f"{exc.status} {exc.message}"[:500], dispatched_at=None)
        react(pull, comment_id, "confused")
        reply(pull, key, texts.dispatch_failed(request.suite, exc.status, exc.message), step=f"failed:{since.timestamp():.0f}")
        return "failed"
    except TransientError:
        # GitHub did not answer: the dispatch may or may not have happened. Look before trying again.
        run = _find_run(client, target, request, since)
        if run is None:
            pull.change(request, "dispatch_unconfirmed", reason="GitHub did not confirm the dispatch", dispatched_at=None)
            raise
        answer = {"workflow_run_id": run["id"], "html_url": run.get("html_url")}
    if answer is None:
        run = _find_run(client, target, request, since)
        answer = {"workflow_run_id": run["id"], "html_url": run.get("html_url")} if run else {}
    # Step 6 of ondemand_states.DISPATCH_SEQUENCE: the status, the run and the "dispatch" entry together.
    run_id = answer.get("workflow_run_id")
    current = pull.change(request, "confirm", dict(
        actor=actor, files=requested_files(request), cost_gpu_hours=request.cost_gpu_hours, run_id=run_id,
        detail=f"{target} {dispatch_cfg.workflow}@{dispatch_cfg.ref}" + (f", approved by {approved_by}" if approved_by else "")),
        workflow_run_id=run_id, run_url=answer.get("html_url"))
    if current is None:
        current = store.get_request(pull.store_url, request.id)
    if current.status == store.SUPERSEDED:
        # A push superseded the request while GitHub was starting its run: stop that run too.
        pull.change(current, "superseded_run_named", dict(
            actor=actor, run_id=run_id, detail=f"{current.reason}: cancelled as it was dispatched"),
            workflow_run_id=run_id, run_url=answer.get("html_url"))
        if run_id is not None:
            tolerate_gone(lambda: client.cancel_workflow_run(target, int(run_id)), also=(409,))
        new_head = str(current.reason or "").rsplit(" ", 1)[-1]
        reply(pull, key, texts.superseded(new_head, [(request.suite, request.head_sha, answer.get("html_url"))]),
              step="superseded")
        return "superseded"
    follow_through(pull, current, approved_by=approved_by)
    return "dispatched"


def follow_through(pull: Pull, request, *, approved_by: str | None) -> None:
    """After a dispatch: the "MI350 · <suite>" check run, the rocket, one reply (each once)."""
    key = f"request:{request.id}"
    rows = selected_rows(request)

    def start_check():
        run = pull.client.create_check_run(pull.repo, {
            "name": texts.RUN_CHECK.format(suite=request.suite), "head_sha": request.head_sha,
            "status": "in_progress", "started_at": _iso_now(), "external_id": f"rocm-run:{request.id}",
            **({"details_url": request.run_url} if request.run_url else {}),
            "output": texts.run_started_output(request.suite, request.head_sha, request.run_url, rows,
                                               request.cost_gpu_hours, request.details.get("plan"))})
        store.update_request(pull.store_url, request.id, run_check_run_id=run["id"])

    once(pull, key, "run-check", start_check)
    if request.request_check_run_id is not None:
        once(pull, key, "request-check-approved", lambda: close_request_check(
            pull, request, f"Approved by @{approved_by or request.decided_by or request.requester}",
            f"Dispatched: {request.run_url or 'see the MI350 check run'}.", conclusion="success"))
    react(pull, request.comment_id, "rocket")
    used = budget_used(pull.store_url, pull.repo)
    reply(pull, key, texts.dispatched(request.suite, request.head_sha, pull.number, request.run_url, rows,
                                      request.cost_gpu_hours, request.details.get("gpus", 1),
                                      used, float(pull.config.budgets.daily_gpu_hours), approved_by,
                                      cost_notes(request), int(request.details.get("plan", {}).get("shards", 1)),
                                      request.details.get("run_plan")),
          step="dispatched")


# -- approvals ------------------------------------------------------------------------------------
def approve(pull: Pull, requests: list, approver: Authority, *, comment_id: int | None, key: str) -> dict:
    """Approve and dispatch `requests` (all on the PR's current head); returns request id -> outcome."""
    outcomes = {}
    two_person = pull.config.approvers.two_person
    own = [r for r in requests if two_person and r.requester.lower() == approver.login.lower()]
    if own:
        react(pull, comment_id, "confused")
        reply(pull, key, texts.own_request(approver.login, [r.suite for r in own]), step="own-request")
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
        outcomes[request.id] = dispatch(pull, current, actor=approver.login, approved_by=approver.login,
                                        comment_id=comment_id)
    return outcomes


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
            "status": "completed", "conclusion": "cancelled", "completed_at": _iso_now(),
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


# -- things that vanished -------------------------------------------------------------------------
GONE = (404, 410)


def tolerate_gone(action, also: tuple = ()):
    """Run a follow-up call; a comment, PR, run or check run that no longer exists (404/410, and
    any status in `also`) is not a failure of the job: None is returned and the rest carries on."""
    try:
        return action()
    except GitHubError as exc:
        if exc.status in GONE or exc.status in also:
            return None
        raise


def vanished(job, repo: str, number: int, *, actor: str | None, detail: str) -> None:
    """The audit entry of a step whose pull request GitHub no longer has (nothing can be answered)."""
    store.audit(job.store_url, repository=repo, action="vanished", pull_number=number, actor=actor, detail=detail,
                delivery_id=job.delivery_id)


# -- completion -----------------------------------------------------------------------------------
def verdict(status: str, elapsed: float, est: float | None, timeout_per_file_s: int) -> str:
    if status == "TIMEOUT":
        return "timed out"
    if est is None or est <= 0:
        return "no est_time"
    if elapsed <= est:
        return "within est_time"
    if elapsed <= runner_timeout(est, timeout_per_file_s):
        return f"over est_time (\u00d7{elapsed / est:.2f})"
    return "over the runner's timeout"


def _read_logs(run_client, run_repo: str, jobs: list[dict]) -> tuple[dict, list[tuple[dict, str, bool]]]:
    """Every completed job's log: ({job id: text}, [(job, why it was not read, worth trying again)])."""
    from bot.github.retry import RateLimited

    logs: dict = {}
    unread: list[tuple[dict, str, bool]] = []
    for ran in jobs:
        try:
            logs[ran["id"]] = run_client.job_log(run_repo, ran["id"])
        except RateLimited:
            raise  # the job comes back after the wait GitHub asked for, its attempt not spent on the log
        except TransientError as exc:
            unread.append((ran, f"GitHub did not serve its log ({str(exc)[:120]})", True))
        except GitHubError as exc:
            if exc.status in GONE:
                unread.append((ran, f"GitHub answers {exc.status} for its log (expired or deleted)", False))
            elif exc.status >= 500 or exc.status == 0:
                unread.append((ran, f"GitHub answered {exc.status} for its log", True))
            else:
                raise
    return logs, unread


def _last_attempt(job) -> bool:
    from bot.github.retry import RetryPolicy

    return int(getattr(job, "attempt", 1) or 1) >= RetryPolicy.from_env().job_attempts


def _shard_of(name: str) -> int | None:
    m = re.search(r"shard (\d+)", name or "")
    return int(m.group(1)) if m else None


def finish(job, request, run: dict, run_client) -> None:
    """A dispatched run completed: per-file results onto "MI350 · <suite>", durations into the store.

    Durations belong to the PR's repository and head SHA: the run executes on the trusted branch
    of the workflow's repository, so its own head_sha says nothing about the code that was tested.
    `run_client`: a client for the repository the run lives in.

    Every shard's log is read. A log GitHub fails to serve (5xx, no answer) is asked for again
    with the job's own retries (bot/worker/tasks.py: backoff, a bounded number of attempts); on the last
    attempt, or for a log that is gone (404/410), the check run completes `neutral` and names the
    shard whose log could not be read: a run is never `success` with results missing, and never
    left in progress because a log would not download.
    """
    run_repo = request.dispatch_repository
    pr_client = client_for(job, request.repository, (run_repo, run_client))
    config, _problems = trusted_config(pr_client, request.repository, None)  # None: its default branch
    view = request.details.get("run_plan") or {}
    # the per-file timeout the dispatched job enforced (the run plan's), else the configured one
    timeout_per_file = int(view.get("timeout_per_file_s") or (config.calibration.timeout_per_file_s if config else 1800))
    est_of = dict(selected_rows(request))
    ran_jobs = [ran for ran in tolerate_gone(lambda: run_client.run_jobs(run_repo, int(run["id"]))) or []
                if ran.get("status") == "completed" and ran.get("conclusion") != "skipped"]
    logs, unread = _read_logs(run_client, run_repo, ran_jobs)
    if any(retry for _ran, _why, retry in unread) and not _last_attempt(job):
        raise TransientError(f"{plural(sum(1 for u in unread if u[2]), 'shard log')} of run {run['id']} not served yet")
    latest: dict[str, dict] = {}
    for ran in ran_jobs:
        text = logs.get(ran["id"])
        if text is None:
            continue
        for record in parse_job_log(text).records:
            est = est_of.get(record.file, record.est_time)
            latest[record.file] = {"file": record.file, "status": record.status, "elapsed": record.elapsed,
                                   "est_time": est,
                                   "verdict": verdict(record.status, record.elapsed, est, timeout_per_file)}
        ingest_job_log(job.store_url, text, repository=request.repository, run_id=int(run["id"]), job_id=ran["id"],
                       runner_labels=ran.get("labels") or (), head_sha=request.head_sha, workflow=run.get("path"),
                       source=f"on-demand:{request.id}", backend="rocm", suite=request.suite,
                       hardware_mapping=config.hardware if config else None)
    # Which shard a missing file was in: the runner's own split of the selected files.
    shards = int(view.get("shards") or request.details.get("plan", {}).get("shards") or 1)
    split = partition({f: float(e or 0) for f, e in est_of.items()}, shards) if shards > 1 else [list(est_of)]
    shard_of_file = {f: i for i, files in enumerate(split) for f in files}
    unread_shards = {_shard_of(ran.get("name", "")): (ran, why) for ran, why, _retry in unread}
    # A selected file no job reported (a shard that died, a log not read, a file the runner left out) is shown too.
    for missing in set(est_of) - set(latest):
        lost = unread_shards.get(shard_of_file.get(missing)) or (unread_shards.get(None) if len(unread_shards) == 1 else None)
        why = f"its shard's log could not be read ({lost[0].get('name') or lost[0]['id']})" if lost else "not in any job's log"
        latest[missing] = {"file": missing, "status": "NO RESULT", "elapsed": None, "est_time": est_of[missing],
                           "verdict": why}
    rows = [latest[f] for f in sorted(latest)]
    conclusion = run.get("conclusion") if run.get("conclusion") in CONCLUSIONS else "neutral"
    missing_results = bool(unread) or any(r["status"] == "NO RESULT" for r in rows)
    if missing_results and conclusion in ("success", "skipped"):
        conclusion = "neutral"  # never success while a result is missing
    not_read = [f"{ran.get('name') or 'job'} (job {ran['id']}): {why}" for ran, why, _retry in unread]
    if request.run_check_run_id is not None:
        tolerate_gone(lambda: pr_client.update_check_run(request.repository, request.run_check_run_id, {
            "status": "completed", "conclusion": conclusion, "completed_at": _iso_now(),
            "output": texts.run_finished_output(request.suite, conclusion, request.run_url or run.get("html_url"),
                                                rows, not_read)}))
    detail = f"{conclusion}: {sum(1 for r in rows if r['status'] == 'PASS')} of {len(rows)} passed"
    if not_read:
        detail += f"; {plural(len(not_read), 'shard log')} not read"
    change(job, request, "complete", dict(files=requested_files(request), cost_gpu_hours=request.cost_gpu_hours,
                                          run_id=int(run["id"]), detail=detail), completed_at=store.now())
    follow_evidence(job, pr_client, request)


def follow_evidence(job, pr_client, request) -> None:
    """The PR's "CI registrations" summary follows the run's evidence (in place, when this head is
    still the PR's). After the request's completion: a failure here costs the summary an update
    (the next push or re-run shows it), never the run's results. The refresh is the worker's PR
    check, which its job carries (`job.refresh_evidence`): on-demand never imports the worker."""
    refresh_evidence = getattr(job, "refresh_evidence", None)
    if refresh_evidence is None:  # a job the worker's runtime did not make: no PR check to follow
        return
    try:
        refresh_evidence(job, pr_client, request.repository, request.pull_number, request.head_sha)
    except Exception as exc:  # noqa: BLE001 - the results are written; the summary catches up on the next check
        job.log.warning("could not refresh the check run's evidence", request_id=request.id, error=type(exc).__name__)
