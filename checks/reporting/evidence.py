"""The summary's evidence: the header's count and one row per newly enabled ROCm registration.

The states come from checks/calibration/evidence.py (carried on the Report); the `/run-rocm`
suggestion and its cost for a registration not verified are the summary's own suggestions
(checks/reporting/render.py `suggested_runs`, handed in, and the suite row's `run_gpu_hours`): `mark_unverified`
puts the unverified files on their suite's row, so the one list of suggestions (and buttons)
covers them, and this section points at its entry.
"""

from __future__ import annotations

import re
from collections import Counter

from checks.calibration.evidence import FAILED, NOT_VERIFIED, PASSED_DEFAULT, PASSED_HEAD
from checks.wording import plural

# A run's link is shown as a link only when it is an Actions run's address (the store makes them
# from repository and run id); anything else is shown as code, never as Markdown.
_RUN = re.compile(r"https://github\.com/[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}/actions/runs/\d{1,20}(?:/attempts/\d{1,4})?")


def mark_unverified(summary, evidence) -> None:
    """Each suite row's unverified files (the summary's `/run-rocm` suggestions measure them), and
    none of its verified ones left to measure."""
    if summary is None or not evidence:
        return
    by_suite: dict[tuple[str, str], set[str]] = {}
    verified: dict[tuple[str, str], set[str]] = {}
    for e in evidence:
        if e.suite:
            (verified if e.verified else by_suite).setdefault((e.backend, e.suite), set()).add(e.file)
    for row in summary.rows:
        row.unverified = sorted(by_suite.get((row.backend, row.suite), ()))
        # a verified file ran on its hardware (at this head, or on the default branch): nothing to measure
        row.unmeasured_added = [f for f in row.unmeasured_added if f not in verified.get((row.backend, row.suite), ())]


def header(evidence) -> str | None:
    """`Verified on MI355X: 18 of 21 newly enabled registrations`, one clause per hardware model."""
    if not evidence:
        return None
    clauses = []
    for hardware in sorted({e.hardware for e in evidence}):
        mine = [e for e in evidence if e.hardware == hardware]
        states = Counter(e.state for e in mine)
        verified = states[PASSED_DEFAULT] + states[PASSED_HEAD]
        what = "newly enabled registration" if all(e.change == "added" for e in mine) else "newly enabled or changed registration"
        parts = [f"{states[PASSED_DEFAULT]} on the default branch", f"{states[PASSED_HEAD]} at this head"]
        if states[FAILED]:
            parts.append(f"{states[FAILED]} failed")
        clauses.append(f"Verified on {hardware}: {verified} of {plural(len(mine), what)} ({', '.join(parts)})")
    return "**" + "; ".join(clauses) + ".**"


def _date(at: str | None) -> str:
    return (at or "?")[:10]


def _link(run: str | None, md_code) -> str:
    if not run:
        return "no run link"
    return f"[run]({run})" if _RUN.fullmatch(run) else md_code(run)


def _seconds(value) -> str:
    try:
        return f"{float(value):g} s"
    except (TypeError, ValueError):
        return "?"


def describe(e, report, suites, md_code, hours) -> str:
    """One registration's evidence, as the table's last cell."""
    run = e.run or {}
    if e.state == PASSED_DEFAULT:
        return (f"passed on the default branch {_date(run.get('at'))}: {_seconds(run.get('elapsed'))} "
                f"of est_time {_seconds(e.est_time)} ({_link(run.get('run'), md_code)})")
    if e.state == PASSED_HEAD:
        return (f"passed at this head ({md_code((run.get('head_sha') or '')[:7])}) {_date(run.get('at'))}: "
                f"{_seconds(run.get('elapsed'))} of est_time {_seconds(e.est_time)} ({_link(run.get('run'), md_code)})")
    if e.state == FAILED:
        where = (f"at this head ({md_code((run.get('head_sha') or '')[:7])})" if run.get("on_demand")
                 else "on the default branch")
        verb = "timed out" if run.get("outcome") == "TIMEOUT" else "failed"
        return f"**{verb}** {where} {_date(run.get('at'))} after {_seconds(run.get('elapsed'))} ({_link(run.get('run'), md_code)})"
    text = "not verified"
    suggestion = suggestion_for(report, suites, e.backend, e.suite)
    if suggestion is not None:
        n, row = suggestion
        text += f": {md_code('/run-rocm ' + e.suite)} (suggestion {n} below, charged {hours(row.run_gpu_hours)} GPU-hours)"
    if e.earlier:
        earlier = e.earlier
        verb = {"PASS": "passed", "TIMEOUT": "timed out"}.get(earlier.get("outcome"), "failed")
        text += (f"; {verb} at an earlier head ({md_code((earlier.get('head_sha') or '')[:7])}), not counted "
                 f"({_link(earlier.get('run'), md_code)})")
    return text


def suggestion_for(report, suites: list[str], backend: str, suite: str | None):
    """(its number in `suites`, the summary's suggestions in order, and its suite row) for
    `/run-rocm suite`, or None."""
    summary = getattr(report, "pr_summary", None)
    if summary is None or suite is None:
        return None
    for row in summary.rows:
        if row.backend == backend and row.suite == suite and suite in suites:
            return suites.index(suite) + 1, row
    return None


def section(report, suites: list[str], md_code, cell, hours) -> list[str]:
    """The summary's evidence table (nothing when no registration needs evidence); `suites`: the
    summary's `/run-rocm` suggestions in order (render.suggested_runs)."""
    evidence = getattr(report, "evidence", None)
    if not evidence:
        return []
    lines = ["#### Evidence on each suite's hardware", "",
             "Only the default branch's runs and the on-demand runs this App dispatched for this pull request count.", "",
             "| registration | suite | hardware | evidence |", "| --- | --- | --- | --- |"]
    for e in evidence:
        lines.append(f"| {cell(md_code(f'{e.file}:{e.line}'))} | {cell(md_code(e.suite))} | {e.hardware} "
                     f"| {cell(describe(e, report, suites, md_code, hours))} |")
    return lines + [""]


def as_json(report) -> list[dict] | None:
    evidence = getattr(report, "evidence", None)
    return None if evidence is None else [e.as_json() for e in evidence]


__all__ = ["header", "section", "mark_unverified", "as_json", "NOT_VERIFIED"]
