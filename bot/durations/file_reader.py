"""The one reader of a `--durations-file` (`check`, `calibrate`): what `durations export` writes.

Two shapes reach a command as "a durations file":

- `durations export` (JSON, or CSV with `--format csv`): one object per measured attempt
  ({repository, file, backend, hardware, elapsed_s, outcome, measured_at, ...}). Every command
  takes it: `check` builds the same windows `calibrate` does from it (checks/calibration/policy.py).
- `durations show --format json`: one object per (file, backend, hardware) with n/median/p90/max.
  `check` can judge est_time from it; `calibrate` cannot (it needs each run, not a summary) and
  refuses it in one line that says which command writes the file it needs.

A file of any other shape is refused in one line, and a file the command would read nothing from
(no measurement on the calibration hardware, none of `--repository`) is said on stderr: a command
never reports "no stored durations" because it silently read nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

EXPORT = "export"  # `durations export`: one object per attempt
SHOW = "show"  # `durations show --format json`: one object per (file, backend, hardware)

EXPORT_KEYS = {"file", "elapsed_s", "outcome"}
SHOW_KEYS = {"file", "n"}
EXPORT_SHAPE = "`durations export` measurements ({file, elapsed_s, outcome, hardware, measured_at, ...})"
SHOW_SHAPE = "`durations show --format json` rows ({file, backend, hardware, n, median, p90, max})"
NUMBERS = ("elapsed_s", "timeout_after_s", "est_time", "attempt", "exit_code", "run_id", "job_id")


class DurationsFileError(ValueError):
    """Why a file cannot be read as durations: one line, naming the file."""


@dataclass(frozen=True)
class DurationsFile:
    path: str
    kind: str  # EXPORT or SHOW
    rows: list[dict]

    def repositories(self) -> list[str]:
        return sorted({str(r["repository"]) for r in self.rows if r.get("repository")})

    def records(self, command: str) -> list[dict]:
        """The measurements, for a command that needs every run (`calibrate`)."""
        if self.kind != EXPORT:
            raise DurationsFileError(
                f"{self.path} holds `durations show --format json` statistics, not the runs {command} needs: "
                "write the file with `ci-registrar durations export`")
        return self.rows

    def check_rows(self, params: Any, *, repository: str | None = None, now: datetime | None = None) -> list[dict]:
        """Rows for checks.engine.check_tree's `durations`: the windows calibrate builds, from an export."""
        if self.kind == SHOW:
            return [r for r in self.rows if repository is None or r.get("repository") in (None, repository)]
        from checks.calibration import evidence
        from checks.calibration.policy import build_windows, stats_rows

        rows = stats_rows(build_windows(self.rows, params, now=now, repository=repository), params.hardware)
        return evidence.attach(rows, evidence.newest_runs(self.rows, params, repository=repository))

    def unknown_repository(self, repository: str | None) -> str | None:
        """The one-line reason when `repository` is none of the file's, else None."""
        known = self.repositories()
        if repository is None or not known or repository in known:
            return None
        return f"{self.path} holds no durations of {repository}; it holds: {', '.join(known)}"

    def nothing_read(self, used: int, hardware: str, repository: str | None = None) -> str | None:
        return nothing_read(self.path, self.rows, used, hardware, repository)


def nothing_read(source: str, rows: list[dict], used: int, hardware: str, repository: str | None = None) -> str | None:
    """The notice when a command uses none of `rows` (`used` == 0) read from `source`, else None."""
    if used:
        return None
    if not rows:
        return f"{source} holds no measurements: no durations are used"
    seen = Counter(str(r.get("hardware") or "unknown") for r in rows)
    where = f" of {repository}" if repository else ""
    if hardware not in seen:
        on = ", ".join(f"{n} on {h}" for h, n in seen.most_common())
        return (f"{source}: none of its {len(rows)} rows{where} is on {hardware} (calibration.hardware); "
                f"it holds {on}: no durations are used")
    return (f"{source}: none of its {len(rows)} rows{where} on {hardware} is a passing run within "
            "calibration.window_days: no durations are used")


def _classify(path: str, rows: list, shape_hint: str) -> str:
    if not rows:
        return EXPORT  # an empty export: nothing to read, said by nothing_read
    kinds = set()
    for number, row in enumerate(rows, start=1):
        if isinstance(row, dict) and row.keys() >= EXPORT_KEYS:
            kinds.add(EXPORT)
        elif isinstance(row, dict) and row.keys() >= SHOW_KEYS:
            kinds.add(SHOW)
        else:
            raise DurationsFileError(f"{path}: {shape_hint} {number} is neither one of {EXPORT_SHAPE} "
                                     f"nor one of {SHOW_SHAPE}")
    if len(kinds) > 1:
        raise DurationsFileError(f"{path} mixes {EXPORT_SHAPE} and {SHOW_SHAPE}: give one of them")
    return kinds.pop()


def _from_csv(path: str, text: str) -> list[dict]:
    import csv
    import io

    reader = csv.DictReader(io.StringIO(text))
    header = set(reader.fieldnames or ())
    if not EXPORT_KEYS <= header:
        missing = ", ".join(sorted(EXPORT_KEYS - header))
        raise DurationsFileError(f"{path} is neither JSON nor a `durations export --format csv` file "
                                 f"(its first line lacks {'the column' if len(EXPORT_KEYS - header) == 1 else 'the columns'} {missing})")
    rows = []
    for number, raw in enumerate(reader, start=2):
        row: dict[str, Any] = {k: (None if v == "" else v) for k, v in raw.items() if k}
        for key in NUMBERS:
            if row.get(key) is not None:
                try:
                    row[key] = float(row[key])
                except ValueError:
                    raise DurationsFileError(f"{path}:{number}: {key} {row[key]!r} is not a number") from None
        rows.append(row)
    return rows


def read_durations_file(path: str | Path) -> DurationsFile:
    """The file at `path`, recognised by its shape; DurationsFileError says why it is not one."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
        text = raw.decode("utf-8")
    except OSError as exc:
        raise DurationsFileError(f"cannot read {name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DurationsFileError(f"{name} is not text (UTF-8): give what `durations export` writes") from None
    start = text.lstrip()[:1]
    if start in ("[", "{"):
        import msgspec  # the store's decoder: half json's time on a season of runs (`calibrate`'s start)

        try:
            data = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise DurationsFileError(f"{name} is not JSON: {exc}") from None
        if isinstance(data, dict) and isinstance(data.get("measurements"), list):
            data = data["measurements"]
        if not isinstance(data, list):
            raise DurationsFileError(f"{name} is a JSON object, not a list of {EXPORT_SHAPE}")
        return DurationsFile(name, _classify(name, data, "object"), data)
    if not start:
        raise DurationsFileError(f"{name} is empty: give what `durations export` writes")
    rows = _from_csv(name, text)
    return DurationsFile(name, _classify(name, rows, "row"), rows)
