"""Durations from CI logs: on workflow_run completed, ingest each job's per-file summary lines.

Which runs count, and which repositories may claim them, is bot/durations/claims.py's (a
repository's `duration_sources`, tenants kept apart); the ingest is bot/durations/ingest.py's.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.durations.claims import ingest_targets
from bot.durations.ingest import ingest_job_log
from bot.github.retry import GitHubError
from bot.worker import calibration_pr

router = Router()


GONE = (404, 410)  # a run deleted, a log past its retention: nothing left to read, not an error


@router.register("workflow_run", action="completed")
async def workflow_run_completed(event, ctx):
    run = event.data["workflow_run"]
    source_repo = event.data["repository"]["full_name"]
    targets = ingest_targets(ctx, source_repo, run.get("path") or "")
    if not targets:
        return
    client = ctx.client
    try:
        jobs = list(client.run_jobs(source_repo, run["id"]))
    except GitHubError as exc:
        if exc.status not in GONE:
            raise
        # The run was deleted (or never existed) since the delivery was sent: nothing to read.
        ctx.log.info("workflow run gone, no durations", run_id=run["id"], status=exc.status)
        return
    stored: set[str] = set()  # the repositories that got new durations from this run
    for job in jobs:
        if job.get("status") != "completed" or job.get("conclusion") in ("skipped", "cancelled"):
            continue
        try:
            log_text = client.job_log(source_repo, job["id"])
        except GitHubError as exc:
            if exc.status not in GONE:
                raise
            ctx.log.info("job log gone, its durations skipped", run_id=run["id"], job_id=job["id"], status=exc.status)
            continue
        for repo, config in targets:
            result = ingest_job_log(
                ctx.store_url, log_text, repository=repo, run_id=run["id"], job_id=job["id"],
                runner_labels=job.get("labels") or (), head_sha=run.get("head_sha"), workflow=run.get("path"),
                source=f"workflow_run:{source_repo}", hardware_mapping=config.hardware, event=run.get("event"),
                head_branch=run.get("head_branch"), head_repository=(run.get("head_repository") or {}).get("full_name"),
            )
            ctx.log.info("durations ingested", repository=repo, run_id=run["id"], job_id=job["id"],
                         inserted=result.inserted, duplicates=result.duplicates, hardware=result.hardware)
            if result.inserted:
                stored.add(repo)
    for repo, config in targets:
        if repo in stored:  # a REG020 verdict that changed asks for a calibration refresh (rate-limited)
            calibration_pr.after_ingest(ctx.store_url, repo, config.calibration)
