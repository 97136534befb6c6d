"""Durations from CI logs: on workflow_run completed, ingest each job's per-file summary lines.

Which runs count is configuration (`duration_sources` in .github/ci-registrar.yml, read from each
repository's default branch): a repository's own ROCm workflow, or a workflow in another
repository where the App is installed (the external MI350 nightly runs miles' tests in
sgl-project/sglang; its durations belong to radixark/miles).
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.durations import ingest_job_log
from bot.store import service as store
from checks.config import CONFIG_PATH, Config, load_config

router = Router()


def _workflow_file(path: str | None) -> str:
    return (path or "").split("@", 1)[0].rsplit("/", 1)[-1]


def _config_of(client, repo: str, log) -> Config | None:
    config, findings = load_config(client.file_at(repo, CONFIG_PATH, None))
    if findings:
        log.warning("configuration invalid: durations not ingested for it", repository=repo,
                    problems=[f.message for f in findings][:3])
        return None
    return config


def ingest_targets(ctx, source_repo: str, workflow_path: str) -> list[tuple[str, Config]]:
    """The repositories whose configuration lists this workflow as a duration source."""
    wanted = _workflow_file(workflow_path)
    candidates: list[tuple[object, str]] = [(ctx.client, source_repo)]
    for installation, repos in store.installations(ctx.store_url):
        if getattr(installation, "deleted", False) or getattr(installation, "suspended", False):
            continue
        client = ctx.client if installation.id == ctx.installation_id else ctx.github.for_installation(installation.id)
        candidates.extend((client, r) for r in repos if r != source_repo)
    targets = []
    for client, repo in candidates:
        config = _config_of(client, repo, ctx.log)
        if config is None:
            continue
        for source in config.duration_sources:
            if _workflow_file(source.workflow) == wanted and (source.repository or repo) == source_repo:
                targets.append((repo, config))
                break
    return targets


@router.register("workflow_run", action="completed")
async def workflow_run_completed(event, ctx):
    run = event.data["workflow_run"]
    source_repo = event.data["repository"]["full_name"]
    targets = ingest_targets(ctx, source_repo, run.get("path") or "")
    if not targets:
        return
    client = ctx.client
    for job in client.run_jobs(source_repo, run["id"]):
        if job.get("status") != "completed" or job.get("conclusion") in ("skipped", "cancelled"):
            continue
        log_text = client.job_log(source_repo, job["id"])
        for repo, config in targets:
            result = ingest_job_log(
                ctx.store_url, log_text, repository=repo, run_id=run["id"], job_id=job["id"],
                runner_labels=job.get("labels") or (), head_sha=run.get("head_sha"), workflow=run.get("path"),
                source=f"workflow_run:{source_repo}", hardware_mapping=config.hardware,
            )
            ctx.log.info("durations ingested", repository=repo, run_id=run["id"], job_id=job["id"],
                         inserted=result.inserted, duplicates=result.duplicates, hardware=result.hardware)
