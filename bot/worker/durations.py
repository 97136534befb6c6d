"""Stored durations: ingest job logs, JSON and CSV into the measurements store; query and export them.

The automatic path (workflow_run completed -> jobs -> logs) hands `ingest_job_log` a log text and
the job's metadata; `durations import` does the same for files on disk. Each file or log is one
transaction: it is stored whole or not at all, and storing it again adds nothing.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Mapping, Sequence

import msgspec

from sqlalchemy.orm import Session

from bot.store.measurements import (  # noqa: F401  (the statistics are this service's API too)
    NATURAL_KEY,
    UNKNOWN_HARDWARE,
    Measurement,
    StatRow,
    floor_stats,
    insert_rows,
    latest_est_times,
    query_stats,
    repositories,
    select_measurements,
    stats_select,
    iso,
    session_for,
    utc as _utc,
)
from checks.calibration.durations import (
    MAX_ELAPSED_S,
    UNDER_A_SECOND,
    elapsed_problem,
    parse_job_log,
)
from checks.target.hardware import hardware_for_labels

# The columns of the JSON and CSV formats (docs/durations.md), in export order.
FIELDS = (
    "repository", "file", "backend", "suite", "hardware", "elapsed_s", "outcome", "attempt",
    "exit_code", "timeout_after_s", "est_time", "run_id", "job_id", "head_sha", "workflow",
    "measured_at", "source", "event", "head_branch", "head_repository",
)
REQUIRED_FIELDS = ("repository", "file", "elapsed_s", "outcome")
# Accepted spellings of a column (the runner's own words on the left).
ALIASES = {"elapsed": "elapsed_s", "status": "outcome", "filename": "file", "timeout_after": "timeout_after_s",
           "exit": "exit_code", "_estimated_time": "est_time", "repo": "repository"}

NO_SUMMARY_LINES = "no per-file summary lines ('[i/n] <file>  PASS  elapsed=<N>s') found: nothing imported"


@dataclass
class IngestResult:
    source: str  # the file name, or the job's description
    parsed: int = 0  # measurements read
    inserted: int = 0  # new rows
    duplicates: int = 0  # already stored (same run, job, file, attempt)
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (line or item number, reason)
    error: str | None = None  # why nothing was imported
    hardware: str | None = None
    suite: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def summary(self) -> str:
        if self.error:
            return f"{self.source}: {self.error}"
        text = f"{self.source}: imported {self.inserted} measurement{'s' * (self.inserted != 1)}"
        if self.duplicates:
            text += f" ({self.duplicates} already stored)"
        if self.malformed:
            text += f"; {len(self.malformed)} malformed line{'s' * (len(self.malformed) != 1)} skipped"
        return text


# ----------------------------------------------------------------------------------------------
# Job logs


def log_job_id(log_text: str) -> int:
    """A stable stand-in job id for a log imported without one: the same log maps to the same id."""
    return int(hashlib.sha256(log_text.encode("utf-8", "surrogatepass")).hexdigest()[:15], 16)


def ingest_job_log(
    target: Session | str,
    log_text: str,
    *,
    repository: str,
    run_id: int | None = None,
    job_id: int | None = None,
    runner_labels: Sequence[str] = (),
    head_sha: str | None = None,
    workflow: str | None = None,
    source: str = "job-log",
    backend: str | None = None,
    suite: str | None = None,
    hardware: str | None = None,
    hardware_mapping: Mapping[str, str] | None = None,
    measured_at: datetime | None = None,
    name: str | None = None,
    event: str | None = None,
    head_branch: str | None = None,
    head_repository: str | None = None,
) -> IngestResult:
    """Parse one Actions job log and store its per-file measurements (idempotently).

    target: a Session (the caller's transaction) or a store URL (one transaction of its own).
    hardware: the model, if known; otherwise it comes from runner_labels through hardware_mapping
    (the `hardware:` section of .github/ci-registrar.yml), and is stored as "unknown" when the labels do not name one model.
    backend / suite: if not given, read from the runner's `--hw` / `--suite` in the log (else rocm).
    measured_at: for lines without an Actions timestamp (default: now).
    run_id / job_id: the natural key; without them 0 and a hash of the log stand in.
    event / head_branch / head_repository: the workflow run's GitHub `event`, `head_branch` and
    `head_repository.full_name`: calibration counts only the default branch's runs from the
    configured events, never a fork's (docs/calibration.md).
    """
    result = IngestResult(source=name or f"{repository} run {run_id} job {job_id}")
    parsed = parse_job_log(log_text)
    result.malformed = parsed.malformed
    if not parsed.records:
        result.error = NO_SUMMARY_LINES
        return result
    model = hardware or hardware_for_labels(runner_labels, hardware_mapping) or UNKNOWN_HARDWARE
    backend = (backend or parsed.backend or "rocm").lower()
    suite = suite or parsed.suite
    result.hardware, result.suite = model, suite
    run = int(run_id) if run_id is not None else 0
    job = int(job_id) if job_id is not None else log_job_id(log_text)
    labels = ",".join(runner_labels) if runner_labels else None
    fallback = _utc(measured_at)
    rows = [
        {
            "repository": repository,
            "file": r.file,
            "backend": backend,
            "suite": suite,
            "hardware": model,
            "elapsed_s": float(r.elapsed),
            "outcome": r.status,
            "attempt": r.attempt,
            "exit_code": r.exit_code,
            "timeout_after_s": r.timeout_after,
            "est_time": r.est_time,
            "run_id": run,
            "job_id": job,
            "head_sha": head_sha,
            "workflow": workflow,
            "runner_labels": labels,
            "measured_at": r.timestamp or fallback,
            "source": source,
            "event": event,
            "head_branch": head_branch,
            "head_repository": head_repository,
        }
        for r in parsed.records
        if r.elapsed > 0
    ]
    # a whole-second log says 0 for a file under a second: a verdict, not a duration to store
    result.malformed = sorted(result.malformed + [(r.line, UNDER_A_SECOND) for r in parsed.records if r.elapsed <= 0])
    result.parsed = len(rows)
    result.inserted = insert_rows(target, rows)
    result.duplicates = result.parsed - result.inserted
    return result


# ----------------------------------------------------------------------------------------------
# JSON and CSV


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return _utc(value)
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, timezone.utc)
    text = str(value).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    if "." in text:  # Actions' 7 fractional digits are more than fromisoformat takes everywhere
        head, _, rest = text.partition(".")
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits):]
        text = f"{head}.{digits[:6].ljust(6, '0')}{zone}"
    return _utc(datetime.fromisoformat(text))


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


class MeasurementItem(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """One measurement as a JSON object or CSV row gives it (docs/durations.md), after the runner's
    own spellings (ALIASES) and the command line's defaults are applied: the import's schema."""

    repository: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    file: Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
    elapsed_s: Annotated[float, msgspec.Meta(ge=0)]
    outcome: Literal["PASS", "FAIL", "TIMEOUT"]
    backend: Literal["cpu", "cuda", "rocm"] = "rocm"
    suite: str | None = None
    hardware: str | None = None
    attempt: Annotated[int, msgspec.Meta(ge=1)] = 1
    exit_code: int | None = None
    timeout_after_s: int | None = None
    est_time: float | None = None
    run_id: int = 0
    job_id: int = 0
    head_sha: str | None = None
    workflow: str | None = None
    measured_at: datetime | None = None
    source: str | None = None
    event: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    head_branch: Annotated[str, msgspec.Meta(max_length=255)] | None = None
    head_repository: Annotated[str, msgspec.Meta(max_length=200)] | None = None
    runner_labels: list[str] | str | None = None


_INTEGERS = ("attempt", "exit_code", "timeout_after_s", "run_id", "job_id")


def _normalised(item: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict:
    """The item in the schema's spelling: aliases, defaults for what is empty, the runner's `812s`."""
    data = {ALIASES.get(k, k): v for k, v in item.items() if k is not None}
    for key, value in defaults.items():
        if value is not None and _empty(data.get(key)):
            data[key] = value
    out = {}
    for key, value in data.items():
        if _empty(value):
            continue
        if isinstance(value, str):
            value = value.strip()
            if key in ("elapsed_s", *_INTEGERS):
                value = value.rstrip("s")
            if key == "outcome":
                value = value.upper()
            elif key == "backend":
                value = value.lower()
            elif key in _INTEGERS:
                value = _integer_text(value)
        if key == "measured_at" and not isinstance(value, datetime):
            try:
                value = _parse_time(value)
            except (TypeError, ValueError, OverflowError, OSError):
                raise ValueError(f"measured_at {value!r} is not an ISO-8601 time") from None
        out[key] = value
    return out


def _integer_text(text: str):
    """`"12"` and `"12.0"` are 12 (a spreadsheet's export); anything else is left for the schema to refuse."""
    try:
        return int(text)  # exactly: job ids and hashed log ids exceed a float's 53 bits
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if number.is_integer() else text


_PATH = re.compile(r"`\$\.([A-Za-z_]+)`")


def _row_from_item(item: Mapping[str, Any], defaults: Mapping[str, Any], mapping) -> dict:
    """One JSON object or CSV row as a measurements row; ValueError says what is wrong."""
    data = _normalised(item, defaults)
    try:
        m = msgspec.convert(data, MeasurementItem, strict=False)
    except msgspec.ValidationError as exc:
        message = str(exc)
        field = _PATH.search(message)
        if field and field.group(1) in data:
            raise ValueError(f"{field.group(1)} {data[field.group(1)]!r}: {message.split(' - at ')[0]}") from None
        raise ValueError(message.replace("Object missing required field", "missing")) from None
    for name in ("elapsed_s", "timeout_after_s"):
        value = getattr(m, name)
        problem = None if value is None and name != "elapsed_s" else elapsed_problem(value, name)
        if problem:  # infinity, NaN, 0 or more than a week: never stored (nor shown, nor proposed)
            raise ValueError(problem)
    if m.est_time is not None and (not math.isfinite(m.est_time) or m.est_time > MAX_ELAPSED_S):
        raise ValueError(f"est_time {m.est_time!r} is not a finite number of seconds up to 7 days")
    hardware = m.hardware
    if hardware is None and m.runner_labels:
        labels = m.runner_labels.split(",") if isinstance(m.runner_labels, str) else m.runner_labels
        hardware = hardware_for_labels(labels, mapping)
    return {
        "repository": m.repository, "file": m.file, "backend": m.backend, "suite": m.suite,
        "hardware": hardware or UNKNOWN_HARDWARE, "elapsed_s": m.elapsed_s, "outcome": m.outcome,
        "attempt": m.attempt, "exit_code": m.exit_code, "timeout_after_s": m.timeout_after_s,
        "est_time": m.est_time, "run_id": m.run_id, "job_id": m.job_id, "head_sha": m.head_sha,
        "workflow": m.workflow, "runner_labels": None, "measured_at": m.measured_at,
        "source": m.source or defaults.get("source") or "import", "event": m.event,
        "head_branch": m.head_branch, "head_repository": m.head_repository,
    }


def _store_items(target, items: Iterable[tuple[int, Mapping]], result: IngestResult, defaults, mapping):
    rows: list[dict] = []
    now = datetime.now(timezone.utc)
    seen: dict[tuple, int] = {}
    for number, item in items:
        if not isinstance(item, Mapping):
            result.malformed.append((number, "not an object"))
            continue
        try:
            row = _row_from_item(item, defaults, mapping)
        except ValueError as exc:
            result.malformed.append((number, str(exc)))
            continue
        row["measured_at"] = row["measured_at"] or now
        key = tuple(row[k] for k in NATURAL_KEY)
        if key in seen:  # the same measurement twice in one file: keep the first
            continue
        seen[key] = number
        rows.append(row)
    result.parsed = len(rows)
    if not rows:
        result.error = "no valid measurements found: nothing imported"
        return result
    result.inserted = insert_rows(target, rows)
    result.duplicates = result.parsed - result.inserted
    return result


def ingest_json(target, text: str, *, name: str = "<json>", repository=None, run_id=None, job_id=None,
                hardware=None, backend=None, suite=None, hardware_mapping=None) -> IngestResult:
    """A JSON list of measurement objects (or {"measurements": [...]}), as `durations export` writes."""
    result = IngestResult(source=name)
    try:
        data = json.loads(text)
    except ValueError as exc:
        result.error = f"not valid JSON: {exc}"
        return result
    if isinstance(data, Mapping) and isinstance(data.get("measurements"), list):
        data = data["measurements"]
    if not isinstance(data, list):
        result.error = 'JSON must be a list of measurement objects or {"measurements": [...]}'
        return result
    defaults = {"repository": repository, "run_id": run_id, "job_id": job_id, "hardware": hardware,
                "backend": backend, "suite": suite, "source": "json"}
    # Items are numbered from 1 (the item's position in the list): JSON has no useful line per row.
    return _store_items(target, enumerate(data, 1), result, defaults, hardware_mapping)


def ingest_csv(target, text: str, *, name: str = "<csv>", repository=None, run_id=None, job_id=None,
               hardware=None, backend=None, suite=None, hardware_mapping=None) -> IngestResult:
    """A CSV with a header row naming the columns of FIELDS (file, elapsed_s, outcome at least)."""
    result = IngestResult(source=name)
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [ALIASES.get(h.strip(), h.strip()) for h in (reader.fieldnames or [])]
    if not header:
        result.error = "empty CSV: no header row"
        return result
    reader.fieldnames = header
    given = {"repository": repository}
    missing = [c for c in REQUIRED_FIELDS if c not in header and given.get(c) is None]
    if missing:
        result.error = f"CSV is missing column{'s' * (len(missing) > 1)}: {', '.join(missing)}"
        return result
    defaults = {"repository": repository, "run_id": run_id, "job_id": job_id, "hardware": hardware,
                "backend": backend, "suite": suite, "source": "csv"}

    def rows():
        for item in reader:
            if None in item:  # more cells than header columns
                result.malformed.append((reader.line_num, "more cells than the header has columns"))
                continue
            if all(_empty(v) for v in item.values()):
                continue
            yield reader.line_num, item

    return _store_items(target, rows(), result, defaults, hardware_mapping)


def import_file(target, path: str | Path, *, fmt: str = "auto", repository=None, run_id=None, job_id=None,
                hardware=None, backend=None, suite=None, runner_labels: Sequence[str] = (),
                hardware_mapping=None) -> IngestResult:
    """Import one file (job log, JSON or CSV by extension, or `fmt`) in one transaction."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return IngestResult(source=str(path), error=f"cannot read: {exc.strerror or exc}")
    if fmt == "auto":
        suffix = path.suffix.lower()
        fmt = {".json": "json", ".csv": "csv"}.get(suffix, "log")
    common = dict(repository=repository, run_id=run_id, job_id=job_id, hardware=hardware, backend=backend,
                  suite=suite, hardware_mapping=hardware_mapping)
    if fmt == "json":
        return ingest_json(target, text, name=str(path), **common)
    if fmt == "csv":
        return ingest_csv(target, text, name=str(path), **common)
    if not repository:
        return IngestResult(source=str(path), error="a job log needs --repository OWNER/NAME")
    return ingest_job_log(target, text, name=str(path), runner_labels=runner_labels, source="job-log", **common)


# ----------------------------------------------------------------------------------------------
# History and export (the SQL, statistics included, lives with its table: bot.store.measurements)


def history(target: Session | str, repository: str, file: str, *, backend: str | None = None,
            hardware: str | None = None) -> list[dict]:
    """Every stored attempt of one test file, oldest first (the dashboard's plot)."""
    return [_as_record(m) for m in select_measurements(target, repository=repository, file=file, backend=backend,
                                                       hardware=hardware)]


def _as_record(m: Measurement) -> dict:
    out = {}
    for key in FIELDS:
        value = getattr(m, key)
        if isinstance(value, datetime):
            value = iso(value)
        out[key] = value
    return out


def export_records(target: Session | str, *, repository: str | None = None) -> list[dict]:
    return [_as_record(m) for m in select_measurements(target, repository=repository, by_repository=True)]


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
        by_repo.setdefault(m.repository, []).append(_as_record(m))
    out = []
    for repo, records in sorted(by_repo.items()):
        windows = build_suite_windows(records, params, now=now, repository=repo, default_branch=default_branch)
        rows = evidence.attach(stats_rows(windows), evidence.newest_runs(records, params, default_branch=default_branch,
                                                                         repository=repo))
        out.extend({**row, "repository": repo} for row in rows)
    return out


def export_text(target: Session | str | None, fmt: str = "json", *, repository: str | None = None) -> str:
    """The export in `fmt`; `target` None: no store, nothing to export (the same empty document)."""
    records = export_records(target, repository=repository) if target is not None else []
    if fmt == "json":
        return json.dumps(records, indent=1) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in records)
        return buf.getvalue()
    raise ValueError(f"unknown export format {fmt!r}: json or csv")


__all__ = [
    "FIELDS", "IngestResult", "StatRow", "ingest_job_log", "ingest_json", "ingest_csv", "import_file",
    "query_stats", "check_rows", "stats_select", "history", "export_records", "export_text", "latest_est_times", "repositories", "log_job_id",
]
