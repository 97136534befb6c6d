"""The durations file format: the JSON and CSV columns (docs/durations.md), the import's schema, a record.

`durations export` writes one object (or CSV row) per stored attempt with the columns of FIELDS;
`durations import` reads the same, and the runner's own spellings of a column (ALIASES). One item
becomes a measurements row here (`row_from_item`), and one stored measurement a record (`as_record`).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, Mapping

import msgspec

from bot.store.measurements import UNKNOWN_HARDWARE, Measurement, iso, utc as _utc
from checks.calibration.estimates import MAX_ELAPSED_S, elapsed_problem
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


def is_empty(value: Any) -> bool:
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
        if value is not None and is_empty(data.get(key)):
            data[key] = value
    out = {}
    for key, value in data.items():
        if is_empty(value):
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


def row_from_item(item: Mapping[str, Any], defaults: Mapping[str, Any], mapping) -> dict:
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


def as_record(m: Measurement) -> dict:
    out = {}
    for key in FIELDS:
        value = getattr(m, key)
        if isinstance(value, datetime):
            value = iso(value)
        out[key] = value
    return out
