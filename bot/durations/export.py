"""Every stored measurement in the durations file format (bot/durations/file_format.py): what
`durations export` writes and `durations import` and `--durations-file` read, and the records
calibration reads (`ci-registrar calibrate`, a calibration pull request's refresh).
"""

from __future__ import annotations

import csv
import io
import json

from sqlalchemy.orm import Session

from bot.durations.file_format import FIELDS, as_record
from bot.store.measurements import select_measurements


def export_records(target: Session | str, *, repository: str | None = None) -> list[dict]:
    return [as_record(m) for m in select_measurements(target, repository=repository, by_repository=True)]


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
