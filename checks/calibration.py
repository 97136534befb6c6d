"""The est_time calibration policy: which registrations to change, and to what (docs/calibration.md).

Pure: measurements arrive as plain records (`durations export` objects, or the store's rows turned
into them by the caller), registrations as checks.model.Registration. Nothing here reads a file,
the network or the database; the edits themselves are checks/calibration_edits.py.

The policy, in order:
- the window is REG020's: the last `window_runs` passing runs of the file within `window_days`,
  on the calibration hardware, of the registration's backend family (AMD is ROCm);
- runs of unmerged code (pull request heads, on-demand runs) count only with `include_unmerged`;
- a registration is changed only when REG020 flags it (checks/durations.calibrate, same
  tolerance), so a file calibrated this week is not touched again next week on the same data;
- the new value is REG020's suggestion: at least p90 x margin and at least the slowest passing
  run x max_margin, rounded up; never below a run that passed;
- a TIMEOUT in the window: est_time does not go down at all;
- fewer than `min_samples` passing runs, a disabled registration, an est_time that is not a
  literal number: left alone, with the reason;
- the runner's bounds: est_time > 0 where the runner rejects anything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any, Iterable, Mapping

from checks.durations import NOT_LOWERED, DurationStats, calibrate, duration_stats
from checks.model import Backend, Registration
from checks.wording import plural

# What est_time on the calibration hardware declares: the ROCm family (miles' rocm, sglang's amd).
CALIBRATED_FAMILIES = (Backend.ROCM,)

MERGED = "merged"
PR_HEAD = "pr-head"
ON_DEMAND = "on-demand"
# workflow_run events whose head is a pull request's, not a branch's merged code (the store filters on them too)
UNMERGED_EVENTS = ("pull_request", "pull_request_target")

# reasons (the JSON `reason` of a change or an unchanged entry)
UNDER = "under-estimated"
OVER = "over-estimated"
EXCEEDS_TIMEOUT = "exceeds-timeout"
FITS = "fits"
TOO_FEW = "too-few-runs"
TIMEOUT_IN_WINDOW = "timeout-in-window"
WINDOW_NOT_FULL = "window-not-full"
DISABLED = "disabled"
NOT_LITERAL = "est-time-not-literal"
NOT_CALIBRATED = "not-calibrated-backend"


def origin_of(record: Mapping[str, Any]) -> str:
    """merged, pr-head or on-demand: whose code a stored run ran."""
    source = str(record.get("source") or "")
    if source.startswith("on-demand"):
        return ON_DEMAND
    event = record.get("event")
    if event in UNMERGED_EVENTS:
        return PR_HEAD
    return MERGED


def _time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    text = str(value).replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # Actions' 7 fractional digits
        digits = "".join(c for c in rest if c.isdigit())
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits):]}"
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Window:
    """One (file, backend family)'s window on the calibration hardware."""

    passing: tuple[float, ...]  # elapsed seconds, newest first (the last window_runs)
    timeouts: int = 0  # TIMEOUT attempts within window_days
    excluded: int = 0  # passing runs of unmerged code left out
    since: date | None = None
    slowest: float | None = None  # the slowest passing run within floor_days (every one, not only the last N)
    timed_out_at: float | None = None  # the longest TIMEOUT attempt within window_days

    @property
    def stats(self) -> DurationStats:
        return duration_stats(self.passing)

    def cut_by(self, est_time: float) -> int:
        """How many passing runs of the window took longer than est_time."""
        return sum(1 for v in self.passing if v > est_time)


def build_windows(records: Iterable[Mapping[str, Any]], params: Any, *, now: datetime | None = None,
                  repository: str | None = None) -> dict[tuple[str, Backend], Window]:
    """Windows per (file, backend family) from measurement records (`durations export` objects)."""
    now = now or datetime.now(timezone.utc)
    start = now - timedelta(days=float(params.window_days))
    floor_start = now - timedelta(days=float(max(params.floor_days, params.window_days)))
    hardware = params.hardware
    passing: dict[tuple[str, Backend], list[tuple[datetime, float]]] = {}
    timeouts: dict[tuple[str, Backend], list[tuple[datetime, float]]] = {}
    excluded: dict[tuple[str, Backend], int] = {}
    for record in records:
        if repository is not None and record.get("repository") not in (None, repository):
            continue
        if (record.get("hardware") or None) != hardware:
            continue
        try:
            family = Backend(str(record.get("backend") or "rocm").lower()).family
        except ValueError:
            continue
        at = _time(record["measured_at"]) if record.get("measured_at") else now
        if at < floor_start or at > now:
            continue
        key = (str(record["file"]), family)
        outcome = str(record.get("outcome") or "").upper()
        if origin_of(record) != MERGED and not params.include_unmerged:
            if outcome == "PASS" and at >= start:
                excluded[key] = excluded.get(key, 0) + 1
            continue
        if outcome == "PASS":
            passing.setdefault(key, []).append((at, float(record["elapsed_s"])))
        elif at < start:
            continue  # older than the window: only passing runs count there (for the floor)
        elif outcome == "TIMEOUT":
            timeouts.setdefault(key, []).append((at, float(record.get("timeout_after_s") or record["elapsed_s"])))
    out = {}
    for key in set(passing) | set(timeouts) | set(excluded):
        every = passing.get(key, [])
        runs = sorted((r for r in every if r[0] >= start), key=lambda r: r[0], reverse=True)[: int(params.window_runs)]
        killed = timeouts.get(key, [])
        out[key] = Window(
            tuple(v for _t, v in runs),
            len(killed),
            excluded.get(key, 0),
            runs[-1][0].date() if runs else None,
            max((v for _t, v in every), default=None),
            max((v for _t, v in killed), default=None),
        )
    return out


def windows_from_stats(rows: Iterable[Mapping[str, Any]], hardware: str) -> dict[tuple[str, Backend], Window]:
    """Windows from `durations show --format json` rows that carry their `values` (newest first)."""
    out = {}
    for row in rows:
        if (row.get("hardware") or None) != hardware or row.get("values") is None:
            continue
        try:
            family = Backend(str(row.get("backend", "rocm")).lower()).family
        except ValueError:
            continue
        since = row.get("since")
        out[(row["file"], family)] = Window(
            tuple(float(v) for v in row["values"]), int(row.get("timeouts") or 0), 0,
            date.fromisoformat(since[:10]) if isinstance(since, str) and since else None,
            row.get("slowest"), row.get("timed_out_at"),
        )
    return out


def stats_rows(windows: Mapping[tuple[str, Backend], Window], hardware: str) -> list[dict]:
    """The windows as `durations show --format json` rows (with values and timeouts) for check_tree."""
    rows = []
    for (file, family), w in sorted(windows.items(), key=lambda kv: (kv[0][0], kv[0][1].value)):
        st = w.stats
        rows.append({"file": file, "backend": family.value, "hardware": hardware, "n": st.n, "median": st.median,
                     "p90": st.p90, "max": st.max, "since": w.since.isoformat() if w.since else None,
                     "values": list(w.passing), "timeouts": w.timeouts, "slowest": w.slowest,
                     "timed_out_at": w.timed_out_at})
    return rows


@dataclass(frozen=True)
class Bounds:
    """est_time bounds the runner enforces (read from its contract: checks/contract.py)."""

    minimum: float = 0  # 1 where the runner rejects est_time <= 0

    @classmethod
    def of(cls, contract) -> "Bounds":
        return cls(1 if getattr(contract, "est_time_positive", False) else 0)


@dataclass(frozen=True)
class Decision:
    """What calibration does with one registration."""

    registration: Registration
    old: float | None
    new: float | None  # None: unchanged
    reason: str
    detail: str
    n: int = 0
    p90: float | None = None
    max: float | None = None
    hardware: str | None = None
    timeouts: int = 0
    excluded: int = 0

    @property
    def changed(self) -> bool:
        return self.new is not None

    def as_json(self) -> dict:
        reg = self.registration
        out = {"file": reg.file, "line": reg.anchor("est_time").line, "backend": reg.backend.value, "suite": reg.suite,
               "hardware": self.hardware, "old": self.old}
        if self.changed:
            out["new"] = self.new
        out.update(n=self.n, p90=self.p90, max=self.max, reason=self.reason)
        if not self.changed:
            out["why"] = self.detail
        return out


def _same_type(value: float, like: float | None) -> float:
    """Integer stays integer: a float literal gets a float back (1050.0), an int an int."""
    return float(value) if isinstance(like, float) else int(value)


def decide(reg: Registration, window: Window | None, params: Any, bounds: Bounds = Bounds()) -> Decision:
    """The policy for one registration (the module docstring lists it)."""
    hardware = params.hardware
    old = reg.est_time

    def keep(reason: str, detail: str, st: DurationStats | None = None, w: Window | None = None) -> Decision:
        st = st or DurationStats(0, None, None, None)
        return Decision(reg, old, None, reason, detail, st.n, st.p90, st.max, hardware,
                        w.timeouts if w else 0, w.excluded if w else 0)

    if reg.backend.family not in CALIBRATED_FAMILIES:
        return keep(NOT_CALIBRATED, f"{reg.backend.value} est_time is not calibrated on {hardware}")
    if reg.disabled is not None:
        return keep(DISABLED, f"disabled ({reg.disabled}): left as it is")
    if old is None:
        return keep(NOT_LITERAL, "est_time is not a literal number")
    st = window.stats if window else DurationStats(0, None, None, None)
    if st.n < int(params.min_samples):
        extra = f"; {plural(window.excluded, 'run')} of unmerged code not counted" if window and window.excluded else ""
        return keep(TOO_FEW, f"{plural(st.n, 'passing run')} on {hardware} in the window, {params.min_samples} needed{extra}", st, window)
    verdict = calibrate(old, st, params, hardware=hardware, timeouts=window.timeouts, slowest=window.slowest,
                        timed_out_at=window.timed_out_at)
    if verdict.rule is None or verdict.suggested is None:
        return keep(TIMEOUT_IN_WINDOW if verdict.kind == NOT_LOWERED else FITS, verdict.message, st, window)
    new = max(verdict.suggested, bounds.minimum)
    if window.timeouts and new < old:
        return keep(TIMEOUT_IN_WINDOW, f"{plural(window.timeouts, 'run')} timed out in the window: est_time is not lowered", st, window)
    if new < old and st.n < int(params.window_runs):
        # Raising needs min_samples runs; lowering a full window: a slow mode seen once in ten
        # runs is not yet in a window of three.
        return keep(WINDOW_NOT_FULL, f"{st.n} of {params.window_runs} passing runs in the window: est_time is lowered "
                                     "only on a full window", st, window)
    if new == old:
        return keep(FITS, verdict.message, st, window)
    return Decision(reg, old, _same_type(new, old), verdict.kind, verdict.message, st.n, st.p90, st.max, hardware,
                    window.timeouts, window.excluded)


def decide_all(registrations: Iterable[Registration], windows: Mapping[tuple[str, Backend], Window], params: Any,
               bounds: Bounds = Bounds()) -> list[Decision]:
    """Decisions for every explicit registration of the calibrated family, in file and line order."""
    regs = [r for r in registrations if not r.implicit and r.backend.family in CALIBRATED_FAMILIES]
    regs.sort(key=lambda r: (r.file, r.span.line, r.span.column))
    return [decide(r, windows.get((r.file, r.backend.family)), params, bounds) for r in regs]


@dataclass
class Plan:
    """The result of a calibration run over one checkout."""

    decisions: list[Decision] = field(default_factory=list)

    @property
    def changes(self) -> list[Decision]:
        return [d for d in self.decisions if d.changed]

    @property
    def unchanged(self) -> list[Decision]:
        return [d for d in self.decisions if not d.changed]

    def as_json(self) -> dict:
        return {"changes": [d.as_json() for d in self.changes], "unchanged": [d.as_json() for d in self.unchanged]}
