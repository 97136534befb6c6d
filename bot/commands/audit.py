"""`ci-registrar audit`: every on-demand command, request, approval, refusal, expiry, staleness,
dispatch and completion the App recorded, newest first."""

from __future__ import annotations

import json

import click

from bot.commands.flags import repository_option


@click.command()
@repository_option("Only this repository.")
@click.option("--pr", "pull_number", type=int, metavar="N", help="Only this pull request.")
@click.option("--limit", type=int, default=200, show_default=True, help="At most this many entries (0: all).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def audit(repository, pull_number, limit, fmt):
    """The on-demand audit log: who did what, when, on which commit and suite, at what cost."""
    from bot.infra.settings import load_settings
    from bot.store import ondemand
    from bot.store.measurements import NO_STORE, open_for_reading, sqlite_path

    url = load_settings().database_url
    if open_for_reading(url) is None:  # reading never creates a store
        click.echo(f"ci-registrar audit: {NO_STORE.format(path=sqlite_path(url))}", err=True)
        entries = []
    else:
        entries = ondemand.audit_entries(url, repository=repository, pull_number=pull_number, limit=limit or None)
    if fmt == "json":
        click.echo(json.dumps([e.as_json() for e in entries], indent=1))
        return
    if not entries:
        click.echo("no audit entries", err=True)
        return
    for e in entries:
        where = f"{e.repository}#{e.pull_number}" if e.pull_number is not None else e.repository
        parts = [e.at.strftime("%Y-%m-%d %H:%M:%S"), where, e.action, f"@{e.actor}" if e.actor else "-"]
        if e.suite:
            parts.append(e.suite)
        if e.head_sha:
            parts.append(e.head_sha[:10])
        if e.cost_gpu_hours is not None:
            parts.append(f"{e.cost_gpu_hours:.2f} GPU-h")
        if e.run_id:
            parts.append(f"run {e.run_id}")
        if e.detail:
            parts.append(e.detail)
        click.echo("  ".join(parts))
