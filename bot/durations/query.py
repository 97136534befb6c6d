"""Reading stored durations: the statistics (`durations show`, the /durations page), one file's
history (the page's plot), and the rows a check judges est_time against (the PR check, `check`).

The SQL, statistics included, lives with its table (bot/store/measurements.py): this module is
where the App reads it, so the command line, the web and the worker never import the store's
measurements for a query.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from bot.durations.file_format import as_record
from bot.store.measurements import (  # noqa: F401  (the statistics are this service's API too)
    StatRow,
    latest_est_times,
    query_stats,
    repositories,
    select_measurements,
    stats_select,
    utc as _utc,
)


def history(target: Session | str, repository: str, file: str, *, backend: str | None = None,
            hardware: str | None = None) -> list[dict]:
    """Every stored attempt of one test file, oldest first (the dashboard's plot)."""
    return [as_record(m) for m in select_measurements(target, repository=repository, file=file, backend=backend,
                                                       hardware=hardware)]


def check_rows(target: Session | str, *, repository: str | None, params: Any, default_branch: str | None = None,
               now: datetime | None = None) -> list[dict]:
    """The rows REG020/REG021/REG030 judge est_time against (checks.engine.check_tree's `durations`).

    `params`: the configuration's `calibration:` section. The windows are `ci-registrar
    calibrate`'s, built by the same function (checks.calibration.policy.build_windows) from the same
    records: the default branch's runs from the configured events, on each calibration hardware
    the configuration names, with the slowest run and the timeouts of floor_days beside them. One
    read, so a check sees one state of the store. Plain data (JSON-able): the App hands it to the
    analysis child, which never touches the store.
    """
    from checks.calibration import evidence
    from checks.calibration.policy import build_suite_windows, stats_rows

    now = _utc(now)
    since = now - timedelta(days=float(max(params.floor_days, params.window_days)))
    by_repo: dict[str, list[dict]] = {}
    # FAIL too: the windows never read one, the evidence's newest failure does
    for m in select_measurements(target, repository=repository, since=since, outcomes=("PASS", "TIMEOUT", "FAIL")):
        by_repo.setdefault(m.repository, []).append(as_record(m))
    out = []
    for repo, records in sorted(by_repo.items()):
        windows = build_suite_windows(records, params, now=now, repository=repo, default_branch=default_branch)
        rows = evidence.attach(stats_rows(windows), evidence.newest_runs(records, params, default_branch=default_branch,
                                                                         repository=repo))
        out.extend({**row, "repository": repo} for row in rows)
    return out
