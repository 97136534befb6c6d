"""`ci-registrar calibrate`: est_time proposals from stored MI355X durations, on a local checkout.

The policy is checks/calibration/policy.py (docs/calibration.md); the edits checks/fixing/calibration_edits.py.
Durations come from the store (`--durations [--repository OWNER/NAME]`, as `check` takes them)
or from a `durations export` file (`--durations-file`).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import click
import msgspec

from bot.commands.errors import fail as _fail_command
from checks.wording import plural


def _fail(message: str) -> None:
    _fail_command("calibrate", message)


def _records_from_file(path: str, repository: str | None) -> list[dict]:
    """The measurements of a `--durations-file` (bot/durations/file_reader.py reads every shape)."""
    from bot.durations.file_reader import DurationsFileError, read_durations_file

    try:
        found = read_durations_file(path)
        records = found.records("calibrate")
    except DurationsFileError as exc:
        _fail(str(exc))
    problem = found.unknown_repository(repository)
    if problem:
        _fail(problem)
    return records


def _records_from_store(repository: str | None) -> list[dict]:
    from bot.commands.check import require_stored_repository
    from bot.durations.export import export_records
    from bot.infra.settings import load_settings
    from bot.store.measurements import NO_STORE, open_for_reading, sqlite_path

    url = load_settings().database_url
    if open_for_reading(url) is None:  # reading never creates a store
        click.echo(f"ci-registrar calibrate: {NO_STORE.format(path=sqlite_path(url))}", err=True)
        return []
    require_stored_repository("calibrate", url, repository)
    return export_records(url, repository=repository)


def _fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if isinstance(value, (int, float)) and float(value).is_integer() else f"{value:.0f}"


def _table(plan, suites: list[str]) -> str:
    lines = []
    if plan.changes:
        header = ("file", "line", "backend", "suite", "old", "new", "n", "p90", "max", "reason")
        rows = [(d.registration.file, str(d.registration.anchor("est_time").line), d.registration.backend.value,
                 d.registration.suite or "-", _fmt(d.old), _fmt(d.new), str(d.n), _fmt(d.p90), _fmt(d.max), d.reason)
                for d in plan.changes]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        numeric = {1, 4, 5, 6, 7, 8}
        for row in [header, *rows]:
            lines.append("  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    else:
        lines.append("no est_time to change")
    reasons: dict[str, int] = {}
    for d in plan.unchanged:
        reasons[d.reason] = reasons.get(d.reason, 0) + 1
    if reasons:
        lines.append("unchanged: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())))
    for message in suites:
        lines.append(f"shards: {message}")
    return "\n".join(lines)


@click.command()
@click.option("--repo", "repo", default=None,
              help="Root of the repository checkout (default: the one holding the current directory, found as `check` finds it).")
@click.option("--durations", "from_store", is_flag=True, help="Use the durations store (DATABASE_URL or the data directory).")
@click.option("--durations-file", type=click.Path(dir_okay=False), default=None, help="Use a `durations export` file (JSON or CSV) instead of the store.")
@click.option("--repository", default=None, metavar="OWNER/NAME", help="Whose stored durations to use (default: every repository in the store or file).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--diff", "show_diff", is_flag=True, help="Print the changes as a unified diff and change no file; exit 1 when there is a change.")
@click.option("--write", "write", is_flag=True, help="Write the new est_time values into the files.")
@click.option("--default-branch", default="main", show_default=True,
              help="The repository's default branch: only its runs count (calibration.branch, when set, wins).")
@click.option("--as-of", "as_of", default=None, metavar="TIME", help="Judge the window as of this ISO-8601 time (default: now).")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="The scan cache's directory (default: the one `check` uses for this checkout).")
@click.option("--no-cache", is_flag=True, help="Parse every file; read and write no scan cache.")
def calibrate(repo: str | None, from_store: bool, durations_file: str | None, repository: str | None, fmt: str,
              show_diff: bool, write: bool, default_branch: str, as_of: str | None, cache_dir: str | None = None,
              no_cache: bool = False) -> None:
    """Propose est_time values from stored durations (docs/calibration.md). Exit 2: usage or environment error."""
    from checks.calibration.policy import Bounds, Plan, build_suite_windows, decide_all, stats_rows
    from checks.config.schema import CONFIG_PATH, load_config
    from checks.engine import check_tree
    from checks.scanning.tree import DirectoryTree

    from bot.commands.root import checkout

    root = checkout("calibrate", repo)
    if show_diff and write:
        _fail("--diff and --write exclude each other (--diff previews what --write writes)")
    if (durations_file is None) == (not from_store):
        _fail("give the durations: --durations (the store) or --durations-file PATH (a `durations export` file)")
    now = datetime.now(timezone.utc)
    if as_of is not None:
        try:
            now = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
        except ValueError:
            _fail(f"--as-of {as_of!r} is not an ISO-8601 time")
        now = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    records = _records_from_file(durations_file, repository) if durations_file else _records_from_store(repository)

    tree = DirectoryTree(root)
    from bot.commands.root import is_target, not_target

    if not is_target(tree):
        _fail(not_target(root))
    config, config_findings = load_config(tree.read(CONFIG_PATH))
    if config_findings:
        _fail(f"{CONFIG_PATH}: {config_findings[0].message}")
    from checks.target.timeout_model import with_runner_timeout

    from checks.engine import build_context

    # each suite's calibration hardware from the pool its jobs run on (configuration first); the
    # check below takes this context over (the contract and the workflows are read once)
    context = build_context(tree, config)
    ctx = context[0]
    config = ctx.config
    from bot.commands.root import scan_cache_for
    from checks.scanning.parallel import available_workers

    # The checkout's scan cache, as `check` reads it: a file checked before is not parsed again,
    # nor the runner's timeout model.
    scan_cache = None if no_cache else scan_cache_for(root, cache_dir)
    params = with_runner_timeout(config.calibration, tree.read, config.paths.register_module, scan_cache)
    ctx.config = msgspec.structs.replace(ctx.config, calibration=params)  # the check below reads it once, here
    windows = build_suite_windows(records, params, now=now, repository=repository, default_branch=default_branch)
    report = check_tree(tree, durations=stats_rows(windows), fixes=False, scan_cache=scan_cache,
                        workers=available_workers(), context=context)
    if records or durations_file:
        from bot.durations.file_reader import nothing_read
        from checks.calibration.policy import window_lookup

        mine = [r for r in records if repository is None or r.get("repository") in (None, repository)]
        # used: windows some registration reads (its suite's hardware), not windows of a hardware
        # no suite here calibrates on
        window = window_lookup(windows, params)
        used = sum(1 for r in report.registrations if not r.implicit and window(r) is not None)
        notice = nothing_read(durations_file or "the store", mine, used, params.hardware, repository)
        if notice:
            click.echo(f"ci-registrar calibrate: {notice}", err=True)
    bounds = Bounds.of(ctx.contract)
    plan = Plan(decide_all(report.registrations, windows, params, bounds))
    suites = [f.message for f in report.findings if f.rule == "REG030"]

    def read(path: str) -> str:
        # newline="": the file's own line ends (CRLF included) reach the edit and come back unchanged
        with open(root / path, encoding="utf-8", newline="") as fh:
            return fh.read()

    edits = []
    if show_diff or write:
        # libcst (the edits' formatter) costs more to import than a warm check: only when editing
        from checks.fixing.calibration_edits import EditError, plan_edits

        try:
            edits = plan_edits(plan.changes, read)
        except EditError as exc:
            _fail(str(exc))
    if show_diff:
        click.echo("".join(e.diff() for e in edits), nl=False)
        sys.exit(1 if edits else 0)
    if write:
        for e in edits:
            with open(root / e.path, "w", encoding="utf-8", newline="") as fh:  # every byte but the digits
                fh.write(e.after)
        click.echo(f"ci-registrar calibrate: {plural(len(plan.changes), 'est_time value')} changed in {plural(len(edits), 'file')}", err=True)
    if fmt == "json":
        click.echo(json.dumps(plan.as_json(), indent=1))
    else:
        click.echo(_table(plan, suites))
