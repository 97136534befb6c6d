"""An on-demand run finished: its "MI350 · <suite>" check run completes, its durations are stored.

The run is found by the id the dispatch recorded (or, when GitHub's dispatch answer carried none,
by the run name the shipped workflow gives: it holds the head SHA and the suite). Durations are
attributed to the PR's repository and head SHA: the run itself executes on the trusted branch of
the workflow's repository, so its own head_sha says nothing about the code that was tested.
"""

from __future__ import annotations

import datetime as dt

from gidgethub.routing import Router

from bot.durations import ingest_job_log
from bot.ondemand import flow, texts
from bot.store import ondemand as store
from checks.durations import parse_job_log, runner_timeout

router = Router()

CONCLUSIONS = {"success", "failure", "cancelled", "timed_out", "neutral", "skipped", "action_required"}


def _request_for(ctx, repo: str, run: dict):
    request = store.request_by_workflow_run(ctx.store_url, repo, int(run["id"]))
    if request is not None:
        return request
    title = str(run.get("display_title") or run.get("name") or "")
    for candidate in store.requests_without_run(ctx.store_url, repo):
        if candidate.head_sha in title and candidate.suite in title:
            store.update_request(ctx.store_url, candidate.id, workflow_run_id=int(run["id"]),
                                 run_url=run.get("html_url"))
            return store.get_request(ctx.store_url, candidate.id)
    return None


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


@router.register("workflow_run", action="completed")
async def on_demand_run_completed(event, ctx):
    run = event.data["workflow_run"]
    if run.get("event") != "workflow_dispatch":
        return
    repo = event.data["repository"]["full_name"]
    request = _request_for(ctx, repo, run)
    if request is None or request.status != store.DISPATCHED:
        return
    client = ctx.client
    pr_client = client if request.repository == repo else flow._client_for(_Shim(ctx, repo), request.repository)
    config, _problems = flow.trusted_config(pr_client, request.repository, None)  # None: its default branch
    timeout_per_file = config.calibration.timeout_per_file_s if config else 1800
    hardware = config.hardware if config else None
    est_of = dict(flow.selected_rows(request))
    latest: dict[str, dict] = {}
    for job in client.run_jobs(repo, int(run["id"])):
        if job.get("status") != "completed" or job.get("conclusion") in ("skipped",):
            continue
        text = client.job_log(repo, job["id"])
        for record in parse_job_log(text).records:
            est = est_of.get(record.file, record.est_time)
            latest[record.file] = {"file": record.file, "status": record.status, "elapsed": record.elapsed,
                                   "est_time": est, "verdict": verdict(record.status, record.elapsed, est,
                                                                        timeout_per_file)}
        ingest_job_log(ctx.store_url, text, repository=request.repository, run_id=int(run["id"]), job_id=job["id"],
                       runner_labels=job.get("labels") or (), head_sha=request.head_sha, workflow=run.get("path"),
                       source=f"on-demand:{request.id}", backend="rocm", suite=request.suite,
                       hardware_mapping=hardware)
    conclusion = run.get("conclusion") if run.get("conclusion") in CONCLUSIONS else "neutral"
    rows = [latest[f] for f in sorted(latest)]
    if request.run_check_run_id is not None:
        pr_client.update_check_run(request.repository, request.run_check_run_id, {
            "status": "completed", "conclusion": conclusion,
            "completed_at": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
            "output": texts.run_finished_output(request.suite, conclusion, request.run_url or run.get("html_url"), rows)})
    if store.transition(ctx.store_url, request.id, [store.DISPATCHED], store.COMPLETED, completed_at=store.now()):
        store.audit(ctx.store_url, repository=request.repository, action="completion", pull_number=request.pull_number,
                    head_sha=request.head_sha, suite=request.suite, files=flow.requested_files(request),
                    cost_gpu_hours=request.cost_gpu_hours, run_id=int(run["id"]), request_id=request.id,
                    detail=f"{conclusion}: {sum(1 for r in rows if r['status'] == 'PASS')} of {len(rows)} passed",
                    delivery_id=ctx.delivery_id)


class _Shim:
    """Enough of a flow.Pull for _client_for: the event's client and the App."""

    def __init__(self, ctx, repo):
        self.job, self.repo, self.client = ctx, repo, ctx.client
