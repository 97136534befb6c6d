"""`ci-registrar durations import|show|export`: the measurements store by hand (docs/durations.md)."""

from __future__ import annotations

import json
import sys

import click

from bot.commands.flags import repository_option

FORMAT_HELP = "job log (default), json or csv; auto picks by the file's extension (.json, .csv)"


def _store_url() -> str:
    from bot.infra.settings import load_settings
    from bot.store.measurements import ensure_store

    url = load_settings().database_url
    ensure_store(url)  # the embedded SQLite store is created on first use
    return url


def _store_to_read() -> str | None:
    """The store for `show` and `export`, or None (said on stderr) when there is none yet: reading
    never creates one."""
    from bot.infra.settings import load_settings
    from bot.store.measurements import NO_STORE, open_for_reading, sqlite_path

    url = load_settings().database_url
    found = open_for_reading(url)
    if found is None:
        click.echo(f"ci-registrar durations: {NO_STORE.format(path=sqlite_path(url))}", err=True)
    return found


@click.group()
def durations():
    """Stored per-file durations (MI355X calibration data)."""


@durations.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@repository_option("Repository the measurements belong to (required for job logs).")
@click.option("--run-id", type=int, help="Workflow run id (part of the natural key).")
@click.option("--job-id", type=int, help="Job id (default for a log: a hash of the log's text).")
@click.option("--hardware", metavar="MODEL", help="Hardware model, e.g. MI355X (default: from --label, else unknown).")
@click.option("--label", "labels", multiple=True, metavar="LABEL", help="A runner label of the job (repeatable).")
@click.option("--backend", type=click.Choice(["cpu", "cuda", "rocm"]), help="Backend (default: the log's --hw, else rocm).")
@click.option("--suite", help="Suite (default: the log's --suite).")
@click.option("--format", "fmt", type=click.Choice(["auto", "log", "json", "csv"]), default="auto", show_default=True, help=FORMAT_HELP)
def import_(files, repository, run_id, job_id, hardware, labels, backend, suite, fmt):
    """Import job logs, JSON or CSV files; each file is one transaction, re-imports add nothing."""
    from pathlib import Path

    from bot.commands.errors import fail

    if not repository:
        logs = [p for p in files if fmt == "log" or (fmt == "auto" and Path(p).suffix.lower() not in (".json", ".csv"))]
        if logs:
            fail("durations import", f"{logs[0]}: a job log needs --repository OWNER/NAME (the repository it belongs to)")
    from bot.durations.ingest import import_file

    url = _store_url()
    failed = False
    total = 0
    for path in files:
        result = import_file(url, path, fmt=fmt, repository=repository, run_id=run_id, job_id=job_id,
                             hardware=hardware, backend=backend, suite=suite, runner_labels=labels)
        for number, reason in result.malformed:
            click.echo(f"{path}:{number}: {reason} (skipped)", err=True)
        click.echo(result.summary(), err=not result.ok)
        if result.ok and result.hardware == "unknown":
            click.echo(f"{path}: hardware unknown (give --hardware or --label)", err=True)
        failed |= not result.ok
        total += result.inserted
    if len(files) > 1:
        click.echo(f"{total} new measurements from {len(files)} files")
    sys.exit(1 if failed else 0)


def _fmt(value):
    if value is None:
        return "-"
    return f"{value:.0f}" if float(value).is_integer() or value >= 100 else f"{value:.1f}"


@durations.command()
@click.option("--file", "file", metavar="PATH", help="Only this test file.")
@click.option("--suite", metavar="S", help="Only measurements taken in this suite.")
@repository_option("Only this repository.")
@click.option("--hardware", metavar="MODEL", help="Only this hardware model.")
@click.option("--backend", type=click.Choice(["cpu", "cuda", "rocm"]))
@click.option("--window-runs", type=int, default=10, show_default=True, help="Last N passing runs.")
@click.option("--window-days", type=int, default=30, show_default=True, help="Within D days.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--details", is_flag=True, help="JSON: add repository, since, latest and est_time to each object.")
def show(file, suite, repository, hardware, backend, window_runs, window_days, fmt, details):
    """n, median, p90, max per (file, backend, hardware) over the window of passing runs."""
    from bot.durations.query import query_stats

    url = _store_to_read()
    rows = [] if url is None else query_stats(url, repository=repository, file=file, suite=suite, backend=backend,
                                              hardware=hardware, window_runs=window_runs, window_days=window_days)
    rows.sort(key=lambda r: (r.repository, r.file, r.backend, r.hardware))
    if fmt == "json":
        click.echo(json.dumps([r.as_json(details) for r in rows], indent=1))
        return
    if not rows:
        click.echo(f"no passing measurements in the last {window_days} days")
        return
    header = ("file", "backend", "suite", "hardware", "n", "median", "p90", "max")
    table = [(r.file, r.backend, r.suite or "-", r.hardware, str(r.n), _fmt(r.median), _fmt(r.p90), _fmt(r.max))
             for r in rows]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(header)]
    numeric = {4, 5, 6, 7}
    for line in [header, *table]:
        click.echo("  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                             for i, (c, w) in enumerate(zip(line, widths))).rstrip())


@durations.command()
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True)
@repository_option("Only this repository.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
def export(fmt, repository, output):
    """Every stored measurement, in the format `durations import` reads."""
    from bot.durations.export import export_text

    text = export_text(_store_to_read(), fmt, repository=repository)
    if output:
        with open(output, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    else:
        click.echo(text, nl=False)
