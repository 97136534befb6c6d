"""Durations into the measurements store: job logs, and the JSON and CSV of the durations file format.

The automatic path (workflow_run completed -> jobs -> logs, bot/worker/handlers/duration_sources.py;
a finished on-demand run, bot/ondemand/completion.py) hands `ingest_job_log` a log text and the job's
metadata; `durations import` does the same for files on disk. Each file or log is one
transaction: it is stored whole or not at all, and storing it again adds nothing.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from sqlalchemy.orm import Session

from bot.durations.file_format import ALIASES, REQUIRED_FIELDS, is_empty, row_from_item
from bot.store.measurements import NATURAL_KEY, UNKNOWN_HARDWARE, insert_rows, utc as _utc
from checks.calibration.job_log import UNDER_A_SECOND, parse_job_log
from checks.target.hardware import hardware_for_labels

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


def _store_items(target, items: Iterable[tuple[int, Mapping]], result: IngestResult, defaults, mapping):
    rows: list[dict] = []
    now = datetime.now(timezone.utc)
    seen: dict[tuple, int] = {}
    for number, item in items:
        if not isinstance(item, Mapping):
            result.malformed.append((number, "not an object"))
            continue
        try:
            row = row_from_item(item, defaults, mapping)
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
            if all(is_empty(v) for v in item.values()):
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
