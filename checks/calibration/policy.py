"""The est_time calibration policy: which registrations to change, and to what (docs/calibration.md).

Pure: measurements arrive as plain records (`durations export` objects, or the store's rows turned
into them by the caller), registrations as checks.model.Registration. Nothing here reads a file,
the network or the database; the edits themselves are checks/fixing/calibration_edits.py.

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
from fnmatch import fnmatchcase
from datetime import date, datetime, timedelta, timezone
from typing import Any, Iterable, Mapping

from checks.calibration.estimates import NOT_LOWERED, DurationStats, _round_up, calibrate, duration_stats, elapsed_problem
from checks.target.hardware import same_hardware_key
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


OTHER_BRANCH = "other-branch"
OTHER_EVENT = "other-event"
FORK = "fork"
DEFAULT_EVENTS = ("schedule", "push")


def origin_of(record: Mapping[str, Any], events: Iterable[str] = DEFAULT_EVENTS, branch: str | None = None) -> str:
    """Whose code a stored run ran: merged (it counts), pr-head, on-demand, fork, other-event or other-branch.

    Only the default branch's runs (`branch`) from `events` are merged code. A record with neither
    `event` nor `head_branch` predates both (an operator's import of an older export): it counts, as
    it did before the store kept them; a `schedule` run without its branch ran the default branch
    (GitHub schedules only there); a `push` without its branch does not count. `branch` None: any
    branch (no default branch known).
    """
    source = str(record.get("source") or "")
    if source.startswith("on-demand"):
        return ON_DEMAND
    event = record.get("event")
    if event in UNMERGED_EVENTS:
        return PR_HEAD
    head_repo, repo = record.get("head_repository"), record.get("repository")
    if head_repo and repo and str(head_repo).lower() != str(repo).lower():
        return FORK
    head = record.get("head_branch")
    if event is None and head is None:
        return MERGED
    if head is None and event == "schedule":
        head = branch  # GitHub runs scheduled workflows on the default branch only (rows stored before 0012)
    if event not in tuple(events):
        return OTHER_EVENT
    if branch is not None and head != branch:
        return OTHER_BRANCH
    return MERGED


def run_url(record: Mapping[str, Any]) -> str | None:
    """The Actions run a stored measurement came from (for a pull request body), when it has one."""
    run_id = record.get("run_id")
    if not run_id:
        return None
    source = str(record.get("source") or "")
    repo = source.split(":", 1)[1] if source.startswith("workflow_run:") else record.get("repository")
    return f"https://github.com/{repo}/actions/runs/{run_id}" if repo else None


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
    timeouts: int = 0  # TIMEOUT attempts within floor_days (remembered as long as a pass)
    excluded: int = 0  # passing runs of unmerged code, other branches, events or forks left out
    since: date | None = None
    slowest: float | None = None  # the slowest passing run within floor_days (every one, not only the last N)
    timed_out_at: float | None = None  # the longest TIMEOUT attempt within floor_days
    slowest_run: str | None = None  # the Actions run of `slowest` (a raise it alone drives names it)
    given: DurationStats | None = None  # statistics of a row without its values (`durations show` JSON)

    @property
    def stats(self) -> DurationStats:
        return self.given if self.given is not None and not self.passing else duration_stats(self.passing)

    def cut_by(self, est_time: float) -> int:
        """How many passing runs of the window took longer than est_time."""
        return sum(1 for v in self.passing if v > est_time)


def calibration_hardware(params: Any) -> list[str]:
    """Every calibration hardware model the configuration names (`hardware` first), each once."""
    models, seen = [], set()
    for model in [params.hardware, *getattr(params, "hardware_by_suite", {}).values()]:
        if same_hardware_key(model) not in seen:
            seen.add(same_hardware_key(model))
            models.append(model)
    return models


def hardware_for_suite(suite: str | None, params: Any) -> str:
    """The calibration hardware of a suite (or runner pool name): the first matching glob, else `hardware`."""
    name = (suite or "").lower()
    for glob, model in getattr(params, "hardware_by_suite", {}).items():
        if fnmatchcase(name, glob.lower()):
            return model
    return params.hardware


def _seconds(value: Any) -> float | None:
    """A stored elapsed time, or None when it is none: not finite, 0 or less, over a week."""
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if elapsed_problem(seconds) is None else None


def _once(cache: dict, value: Any, compute):
    """compute(value), once per distinct value (an unhashable one, from a file of another origin, each time)."""
    try:
        return cache[value]
    except KeyError:
        cache[value] = found = compute(value)
        return found
    except TypeError:
        return compute(value)


def _family(backend: Any) -> Backend | None:
    try:
        return Backend(str(backend or "rocm").lower()).family
    except ValueError:
        return None


def build_windows(records: Iterable[Mapping[str, Any]], params: Any, *, now: datetime | None = None,
                  repository: str | None = None, default_branch: str | None = None,
                  hardware: str | None = None) -> dict[tuple[str, Backend], Window]:
    """Windows per (file, backend family) from measurement records (`durations export` objects).

    hardware: the model to read (default: params.hardware), compared case-insensitively.
    default_branch: the repository's; runs of another branch count only with include_unmerged
    (`calibration.branch`, when set, wins).
    """
    now = now or datetime.now(timezone.utc)
    start = now - timedelta(days=float(params.window_days))
    floor_start = now - timedelta(days=float(max(params.floor_days, params.window_days)))
    wanted = same_hardware_key(hardware or params.hardware)
    events = tuple(getattr(params, "events", DEFAULT_EVENTS))
    branch = getattr(params, "branch", None) or default_branch
    passing: dict[tuple[str, Backend], list[tuple[datetime, float, Mapping]]] = {}
    timeouts: dict[tuple[str, Backend], list[float]] = {}
    excluded: dict[tuple[str, Backend], int] = {}
    # A season of runs repeats a few hardware names, backends and run times thousands of times:
    # each is read once (`calibrate` reads every record for every calibration hardware).
    hardware_keys: dict[Any, str | None] = {}
    families: dict[Any, Backend | None] = {}
    times: dict[Any, datetime] = {}
    for record in records:
        if repository is not None and record.get("repository") not in (None, repository):
            continue
        if _once(hardware_keys, record.get("hardware"), same_hardware_key) != wanted:
            continue
        family = _once(families, record.get("backend"), _family)
        if family is None:
            continue
        seconds = _seconds(record.get("elapsed_s"))
        if seconds is None:
            continue  # refused at ingest; a file of another origin may still hold one
        at = _once(times, record["measured_at"], _time) if record.get("measured_at") else now
        if at < floor_start or at > now:
            continue
        key = (str(record["file"]), family)
        outcome = str(record.get("outcome") or "").upper()
        if origin_of(record, events, branch) != MERGED and not params.include_unmerged:
            if outcome == "PASS" and at >= start:
                excluded[key] = excluded.get(key, 0) + 1
            continue
        if outcome == "PASS":
            passing.setdefault(key, []).append((at, seconds, record))
        elif outcome == "TIMEOUT":
            # remembered as long as a pass (floor_days): a timeout 40 days ago still stops a lowering
            limit = _seconds(record.get("timeout_after_s")) or seconds
            timeouts.setdefault(key, []).append(limit)
    out = {}
    for key in set(passing) | set(timeouts) | set(excluded):
        every = passing.get(key, [])
        # the newest window_runs runs within window_days (never the slowest N: the window follows the file)
        runs = sorted((r for r in every if r[0] >= start), key=lambda r: r[0], reverse=True)[: int(params.window_runs)]
        killed = timeouts.get(key, [])
        slowest = max(every, key=lambda r: r[1], default=None)
        out[key] = Window(
            tuple(v for _t, v, _r in runs),
            len(killed),
            excluded.get(key, 0),
            runs[-1][0].date() if runs else None,
            slowest[1] if slowest else None,
            max(killed, default=None),
            run_url(slowest[2]) if slowest else None,
        )
    return out


def windows_from_stats(rows: Iterable[Mapping[str, Any]], hardware: str) -> dict[tuple[str, Backend], Window]:
    """Windows from `durations show --format json` rows that carry their `values` (newest first)."""
    out = {}
    for row in rows:
        if same_hardware_key(row.get("hardware")) != same_hardware_key(hardware) or row.get("values") is None:
            continue
        try:
            family = Backend(str(row.get("backend", "rocm")).lower()).family
        except ValueError:
            continue
        since = row.get("since")
        out[(row["file"], family)] = Window(
            tuple(float(v) for v in row["values"]), int(row.get("timeouts") or 0), 0,
            date.fromisoformat(since[:10]) if isinstance(since, str) and since else None,
            row.get("slowest"), row.get("timed_out_at"), row.get("slowest_run"),
        )
    return out


def stats_rows(windows: Mapping[tuple, Window], hardware: str | None = None) -> list[dict]:
    """The windows as `durations show --format json` rows (with values and timeouts) for check_tree."""
    rows = []
    for key, w in sorted(windows.items(), key=lambda kv: (kv[0][0], kv[0][1].value, str(kv[0][2:]))):
        file, family = key[0], key[1]
        st = w.stats
        rows.append({"file": file, "backend": family.value, "hardware": key[2] if len(key) == 3 else hardware, "n": st.n, "median": st.median,
                     "p90": st.p90, "max": st.max, "since": w.since.isoformat() if w.since else None,
                     "values": list(w.passing), "timeouts": w.timeouts, "slowest": w.slowest,
                     "timed_out_at": w.timed_out_at, "slowest_run": w.slowest_run})
    return rows


@dataclass(frozen=True)
class Bounds:
    """est_time bounds the runner enforces (read from its contract: checks/target/contract.py)."""

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
    severity: str | None = None  # REG020's severity for a change: failure when a passing run outlived the runner's limit
    one_run: bool = False  # a raise driven by a single run (the slowest passing one x max_margin)
    run: str | None = None  # ... that run's link

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
    """The policy for one registration (the module docstring lists it); `window` is on the suite's hardware."""
    hardware = hardware_for_suite(reg.suite, params)
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
    verdict = calibrate(old, st, params, hardware=hardware, since=window.since, timeouts=window.timeouts, slowest=window.slowest,
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
    # One run drives a raise when the slowest pass x max_margin, not the p90 x margin, sets the value.
    by_p90 = _round_up(st.p90 * float(params.margin), int(params.round_to_s))
    slowest = max(st.max or 0, window.slowest or 0)
    one_run = new > old and new > by_p90 and new == _round_up(slowest * float(params.max_margin), int(params.round_to_s))
    return Decision(reg, old, _same_type(new, old), verdict.kind, verdict.message, st.n, st.p90, st.max, hardware,
                    window.timeouts, window.excluded, verdict.severity, one_run, window.slowest_run if one_run else None)


def window_for(windows: Mapping[tuple, Window], reg: Registration, params: Any) -> Window | None:
    """The registration's window on its suite's calibration hardware.

    windows: build_suite_windows' (file, family, hardware) keys, or build_windows' (file, family)
    ones (one hardware: what the caller built them for)."""
    hardware = same_hardware_key(hardware_for_suite(reg.suite, params))
    for key, window in windows.items():  # small: one entry per measured file and hardware
        if len(key) == 3 and key[0] == reg.file and key[1] == reg.backend.family and same_hardware_key(key[2]) == hardware:
            return window
    return windows.get((reg.file, reg.backend.family))


def window_lookup(windows: Mapping[tuple, Window], params: Any):
    """`window_for(windows, reg, params)` as a function of `reg`, for many registrations: the same
    window (the first key in the windows' order that matches), found in one dictionary lookup
    instead of a pass over every window."""
    index: dict[tuple, Window] = {}
    for key, window in windows.items():
        if len(key) == 3:
            index.setdefault((key[0], key[1], same_hardware_key(key[2])), window)
    hardware: dict[str | None, str] = {}

    def lookup(reg: Registration) -> Window | None:
        if reg.suite not in hardware:
            hardware[reg.suite] = same_hardware_key(hardware_for_suite(reg.suite, params))
        found = index.get((reg.file, reg.backend.family, hardware[reg.suite]))
        return found if found is not None else windows.get((reg.file, reg.backend.family))

    return lookup


def build_suite_windows(records: Iterable[Mapping[str, Any]], params: Any, **kwargs) -> dict[tuple[str, Backend, str], Window]:
    """build_windows on every calibration hardware the configuration names, keyed (file, family, hardware)."""
    records = list(records)
    out = {}
    for model in calibration_hardware(params):
        for (file, family), window in build_windows(records, params, hardware=model, **kwargs).items():
            out[(file, family, model)] = window
    return out


def decide_all(registrations: Iterable[Registration], windows: Mapping[tuple, Window], params: Any,
               bounds: Bounds = Bounds()) -> list[Decision]:
    """Decisions for every explicit registration of the calibrated family, in file and line order."""
    regs = [r for r in registrations if not r.implicit and r.backend.family in CALIBRATED_FAMILIES]
    regs.sort(key=lambda r: (r.file, r.span.line, r.span.column))
    window = window_lookup(windows, params)
    return [decide(r, window(r), params, bounds) for r in regs]


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
