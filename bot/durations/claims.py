"""Which repositories may claim a workflow run's durations (bot/worker/handlers/duration_sources.py ingests them).

Which runs count is configuration (`duration_sources` in .github/ci-registrar.yml, read from each
repository's default branch): a repository's own ROCm workflow, or a workflow in another
repository where the App is installed (the external MI350 nightly runs miles' tests in
sgl-project/sglang; its durations belong to radixark/miles).

Tenants stay apart. A repository T may claim the durations of a workflow in repository S when
T's configuration lists that workflow (`{workflow: W, repository: S}`) and one of these holds:

- T is S (a repository's own workflows);
- S names T back: S's own default-branch configuration lists a duration source with
  `repository: T` (the two repositories name each other);
- the App's operator allows it: CI_REGISTRAR_DURATION_CLAIMS lists `T<-S` (comma-separated,
  e.g. `radixark/miles<-sgl-project/sglang`).

Only the configurations of S and of the repositories S names or the operator allows are read,
never every installed repository's; one repository's unreadable configuration is logged and
skipped, and fails nobody else's ingestion.
"""

from __future__ import annotations

import os

from bot.store import service as store
from checks.config.schema import CONFIG_PATH, Config, load_config

CLAIMS_ENV = "CI_REGISTRAR_DURATION_CLAIMS"


def _workflow_file(path: str | None) -> str:
    return (path or "").split("@", 1)[0].rsplit("/", 1)[-1]


def allowed_claims(value: str | None = None) -> dict[str, set[str]]:
    """CI_REGISTRAR_DURATION_CLAIMS parsed: source repository -> claimants the operator allows."""
    value = os.environ.get(CLAIMS_ENV, "") if value is None else value
    claims: dict[str, set[str]] = {}
    for item in value.replace(";", ",").split(","):
        claimant, sep, source = (part.strip() for part in item.partition("<-"))
        if sep and claimant and source:
            claims.setdefault(source.lower(), set()).add(claimant)
    return claims


def _config_of(client, repo: str, log) -> Config | None:
    try:
        config, findings = load_config(client.file_at(repo, CONFIG_PATH, None))
    except Exception as exc:  # GitHub errors included: this repository only, not the whole job
        from bot.github.retry import TransientError

        if isinstance(exc, TransientError):
            raise
        log.warning("configuration unreadable: durations not ingested for it", repository=repo,
                    error=f"{type(exc).__name__}: {str(exc)[:200]}")
        return None
    if findings:
        log.warning("configuration invalid: durations not ingested for it", repository=repo,
                    problems=[f.message for f in findings][:3])
        return None
    return config


def _lists(config: Config, wanted: str, source_repo: str, repo: str) -> bool:
    return any(_workflow_file(s.workflow) == wanted and (s.repository or repo).lower() == source_repo.lower()
               for s in config.duration_sources)


def _active_installations(ctx) -> dict[str, int]:
    """repository (lower case) -> installation id, over installations neither deleted nor suspended."""
    found: dict[str, int] = {}
    for installation, repos in store.installations(ctx.store_url):
        if getattr(installation, "deleted", False) or getattr(installation, "suspended", False):
            continue
        for name in repos:
            found.setdefault(name.lower(), installation.id)
    return found


def ingest_targets(ctx, source_repo: str, workflow_path: str) -> list[tuple[str, Config]]:
    """The repositories that list this workflow as a duration source and may claim it (see above)."""
    wanted = _workflow_file(workflow_path)
    targets: list[tuple[str, Config]] = []
    source_config = _config_of(ctx.client, source_repo, ctx.log)
    if source_config is not None and _lists(source_config, wanted, source_repo, source_repo):
        targets.append((source_repo, source_config))
    named_back = {s.repository for s in (source_config.duration_sources if source_config else ())
                  if s.repository and s.repository.lower() != source_repo.lower()}
    claimants = named_back | allowed_claims().get(source_repo.lower(), set())
    if not claimants:
        return targets
    installed = _active_installations(ctx)
    for claimant in sorted(claimants):
        installation_id = installed.get(claimant.lower())
        if installation_id is None:
            ctx.log.info("duration claimant not installed", repository=claimant)
            continue
        client = ctx.client if installation_id == ctx.installation_id else ctx.github.for_installation(installation_id)
        config = _config_of(client, claimant, ctx.log)
        if config is not None and _lists(config, wanted, source_repo, claimant):
            targets.append((claimant, config))
    return targets
