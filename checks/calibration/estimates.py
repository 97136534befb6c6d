"""Per-file durations' statistics and est_time calibration: what an elapsed time may be, the
window's n/median/p90/max, the est_time a window suggests, the runner's timeout for it, and the
verdict REG020/REG021 and `ci-registrar calibrate` give.

Pure: no database, no network, no bot/ imports. The runner's log lines are parsed in
checks/calibration/job_log.py; the App's stored durations are bot/durations/.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from checks.config.schema import Calibration as _ConfigCalibration
from checks.target.timeout_model import MILES, of_params
from checks.wording import plural


# The longest elapsed time a measurement may claim: a week (no runner's job lives that long). A
# value outside (0, MAX_ELAPSED_S] or not finite is refused where it is read, with its line or item:
# `elapsed=<301 digits>s` is infinity as a float and would reach the store, a page and a PR.
MAX_ELAPSED_S = 7 * 24 * 3600


def elapsed_problem(value: Any, name: str = "elapsed", *, allow_zero: bool = False) -> str | None:
    """Why `value` is no elapsed time in seconds (None: it is one).

    allow_zero: a runner's summary line prints whole seconds (miles and sglang: `int(elapsed)`),
    so `elapsed=0s` is a file that ran for under a second: its verdict counts, but it is no
    measurement to store or to calibrate on (`measurable`)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return f"{name} {value!r} is not a number of seconds"
    if not math.isfinite(seconds):
        return f"{name} is not a finite number of seconds"
    if (seconds < 0 if allow_zero else seconds <= 0) or seconds > MAX_ELAPSED_S:
        return f"{name}={seconds:g}s is outside (0 s, 7 days]"
    return None


# ----------------------------------------------------------------------------------------------
# Statistics


class DurationStats(NamedTuple):
    n: int
    median: float | None
    p90: float | None
    max: float | None


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """numpy.percentile's default ('linear'): interpolate between the closest ranks."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    low = sorted_values[lo]
    return low + (h - lo) * (sorted_values[hi] - low)


def duration_stats(values: Iterable[float]) -> DurationStats:
    """n, median, p90, max of durations in seconds (numpy-compatible percentiles)."""
    ordered = sorted(values)
    if not ordered:
        return DurationStats(0, None, None, None)
    return DurationStats(len(ordered), percentile(ordered, 0.5), percentile(ordered, 0.9), ordered[-1])


def _round_up(seconds: float, round_to_s: int) -> int:
    step = max(1, int(round_to_s))
    # round(...) first: 1000 x 1.15 is 1150.0000000000002 in binary and must not become 1160.
    return int(math.ceil(round(seconds / step, 9)) * step)


def suggest_est_time(p90: float, margin: float = 1.15, round_to_s: int = 10, *, slowest: float | None = None,
                     max_margin: float = 1.0) -> int:
    """p90 x margin, and at least the slowest passing run x max_margin, rounded up to round_to_s seconds.

    The second bound is the calibration policy's (docs/calibration.md): a p90 alone undercuts the
    slow mode of a bimodal file (sglang's weekly script once set 300 s to 13 s).
    """
    floor = slowest * max_margin if slowest is not None else 0.0
    return _round_up(max(p90 * margin, floor), round_to_s)


def runner_timeout(est_time: float, timeout_per_file_s: int = 1800, model=None) -> int:
    """The runner's per-file timeout for an est_time: miles' max(per-file default, int(1.25 x est_time)),
    or `model`'s (checks/target/timeout_model.py: sglang's max(1.5 x est, est + 1800)). The formula
    is timeout_model's alone: the budget's charge (checks/target/run_cost.py) calls MILES.timeout too."""
    return (model or MILES).timeout(est_time, timeout_per_file_s)


# ----------------------------------------------------------------------------------------------
# Calibration (REG020 / REG021)


# The `calibration:` section of .github/ci-registrar.yml, with its defaults: one schema
# for the configuration file and for callers that pass parameters directly.
CalibrationParams = _ConfigCalibration

DEFAULT_PARAMS = CalibrationParams()

# verdict kinds
OK = "ok"
UNDER = "under-estimated"
OVER = "over-estimated"
EXCEEDS_TIMEOUT = "exceeds-timeout"
INSUFFICIENT = "insufficient-data"
NOT_LOWERED = "not-lowered"  # above the over-estimate ceiling, but a run timed out in the window


@dataclass(frozen=True)
class Calibration:
    """A verdict on one est_time against its stored durations; the lead wraps it into a finding."""

    kind: str  # ok | under-estimated | over-estimated | exceeds-timeout | insufficient-data | not-lowered
    rule: str | None  # "REG020", "REG021", or None when the est_time is fine
    severity: str | None  # failure | warning | notice | None
    est_time: float
    n: int
    median: float | None
    p90: float | None
    max: float | None
    timeout_s: int  # the runner's timeout for est_time
    suggested: int | None  # a calibrated est_time, when there is one to offer
    message: str
    hardware: str | None = None
    since: date | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["since"] = self.since.isoformat() if self.since else None
        return out


class OtherBackendEstimate(NamedTuple):
    est_time: int  # other_est_time x ratio, rounded up to round_to_s
    ratio: float  # median of measured ROCm / CUDA est_time
    pairs: int


def _param(params: Any, name: str):
    if params is None:
        return getattr(DEFAULT_PARAMS, name)
    if isinstance(params, Mapping):
        return params.get(name, getattr(DEFAULT_PARAMS, name))
    return getattr(params, name, getattr(DEFAULT_PARAMS, name))


def _stats_of(stats: Any) -> DurationStats:
    if stats is None:
        return DurationStats(0, None, None, None)
    if isinstance(stats, DurationStats):
        return stats
    if isinstance(stats, Mapping):
        return DurationStats(int(stats.get("n") or 0), stats.get("median"), stats.get("p90"), stats.get("max"))
    return DurationStats(int(stats.n or 0), stats.median, stats.p90, stats.max)


def _s(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds:.0f}"


def _since_date(since: date | datetime | str | None) -> date | None:
    if since is None or isinstance(since, str) and not since:
        return None
    if isinstance(since, datetime):
        return since.date()
    if isinstance(since, date):
        return since
    return datetime.fromisoformat(str(since).replace("Z", "+00:00")).date()


def calibrate(
    est_time: float,
    stats: Any,
    params: Any = None,
    *,
    since: date | datetime | str | None = None,
    hardware: str | None = None,
    other_estimate: OtherBackendEstimate | None = None,
    timeouts: int = 0,
    slowest: float | None = None,
    timed_out_at: float | None = None,
) -> Calibration:
    """Judge est_time against stored durations as REG020 / REG021 define it (docs/rules.md).

    stats: DurationStats (or anything with n, median, p90, max) over the window of passing runs.
    params: CalibrationParams, config.calibration, or a mapping; missing keys take the defaults
    of the `calibration:` section (docs/configuration.md).
    since: the oldest measurement in the window, for the message.
    other_estimate: estimate_from_other_backend(...) for the REG021 message when data is short.
    timeouts: TIMEOUT attempts in the window; with any, est_time is never called over-estimated
    (the calibration policy does not lower it).
    slowest: the slowest passing run within floor_days (all of them, not only the last
    window_runs): the suggestion never goes below it x max_margin (default: the stats' max).
    timed_out_at: the longest TIMEOUT attempt within window_days (the runner's limit it hit):
    where est_time set that limit, the run needed more, and est_time is raised past it.
    """
    st = _stats_of(stats)
    hardware = hardware or _param(params, "hardware")
    min_samples = int(_param(params, "min_samples"))
    margin = float(_param(params, "margin"))
    round_to_s = int(_param(params, "round_to_s"))
    over_factor = float(_param(params, "over_factor"))
    over_slack_s = float(_param(params, "over_slack_s"))
    model = of_params(params)
    timeout = runner_timeout(est_time, int(_param(params, "timeout_per_file_s")), model)
    since_d = _since_date(since)
    where = f" on {hardware}" if hardware else ""
    since_txt = f" since {since_d.isoformat()}" if since_d else ""

    def verdict(kind, rule, severity, suggested, message):
        return Calibration(
            kind, rule, severity, est_time, st.n, st.median, st.p90, st.max, timeout, suggested, message,
            hardware, since_d,
        )

    if st.n < min_samples or st.p90 is None:
        if st.n == 0:
            head = f"no stored passing durations{where} for est_time {_s(est_time)} s"
        elif st.n == 1:
            head = (
                f"est_time {_s(est_time)} s rests on a single run{where}{since_txt} "
                f"({_s(st.max)} s); {min_samples} passing runs are needed to calibrate it"
            )
        else:
            head = (
                f"only {st.n} passing runs{where}{since_txt} (p90 {_s(st.p90)} s, max {_s(st.max)} s); "
                f"{min_samples} are needed to calibrate est_time {_s(est_time)} s"
            )
        suggested = None
        if other_estimate is not None:
            suggested = other_estimate.est_time
            head += (
                f"; from the other backend's est_time x {other_estimate.ratio:.2f} "
                f"(median over {other_estimate.pairs} files with both) it would be about {suggested}"
            )
        if st.max is not None and st.max > timeout:
            head += f"; note: observed max {_s(st.max)} s already exceeds the runner's timeout {timeout} s"
        return verdict(INSUFFICIENT, "REG021", "notice", suggested, head)

    base = f"p90 {_s(st.p90)} s over {st.n} passing runs{where}{since_txt}"
    max_margin = float(_param(params, "max_margin"))
    floor_run = max(st.max or 0, slowest or 0)
    suggested = suggest_est_time(st.p90, margin, round_to_s, slowest=floor_run, max_margin=max_margin)
    per_file = int(_param(params, "timeout_per_file_s"))
    if timed_out_at is not None and timed_out_at >= timeout and model.set_by_est(est_time, per_file):
        # Killed at the limit this est_time sets: that run needed more than timed_out_at seconds.
        suggested = max(suggested, _round_up(timed_out_at * max_margin, round_to_s))
        return verdict(
            EXCEEDS_TIMEOUT, "REG020", "warning", suggested,
            f"{base}; a run timed out after {_s(timed_out_at)} s, the runner's limit for est_time {_s(est_time)} s "
            f"({model.describe()}): it needed more; suggest {suggested}",
        )
    if st.max is not None and st.max > timeout:
        # The runner would kill a run it has already seen pass: est_time must cover the max.
        needed = _round_up(min(st.max / model.factor, st.max - (model.slack or 0)) if model.slack is not None
                           else st.max / model.factor, round_to_s)  # > 0: the max outlived a positive limit
        while model.timeout(needed, per_file) < st.max:
            needed += max(1, round_to_s)
        suggested = max(suggested, needed)
        return verdict(
            EXCEEDS_TIMEOUT, "REG020", "failure", suggested,
            f"{base}; observed max {_s(st.max)} s exceeds the runner's timeout of {timeout} s for "
            f"est_time {_s(est_time)} s ({model.describe().replace('timeout_per_file_s', str(per_file))}); "
            f"suggest {suggested}",
        )
    if est_time < st.p90:
        return verdict(
            UNDER, "REG020", "warning", suggested,
            f"{base}; est_time {_s(est_time)} s is under-estimated; suggest {suggested}",
        )
    ceiling = max(over_factor * st.p90, st.p90 + over_slack_s)
    # The suggestion itself is never "over": a value that covers the slowest passing run stays.
    if est_time > ceiling and est_time > suggested:
        if timeouts:
            return verdict(
                NOT_LOWERED, None, None, None,
                f"{base}; est_time {_s(est_time)} s is above max({over_factor:g} x p90, p90 + {over_slack_s:g} s) "
                f"but not lowered: {plural(timeouts, 'run')} timed out in the window",
            )
        return verdict(
            OVER, "REG020", "warning", suggested,
            f"{base}; est_time {_s(est_time)} s is over-estimated (above max({over_factor:g} x p90, "
            f"p90 + {over_slack_s:g} s) = {_s(ceiling)} s and above the slowest passing run's bound); suggest {suggested}",
        )
    return verdict(OK, None, None, None, f"{base}; est_time {_s(est_time)} s fits")


def estimate_from_other_backend(
    other_est_time: float,
    pairs: Iterable[tuple[float, float]],
    *,
    round_to_s: int = 10,
    min_pairs: int = 3,
) -> OtherBackendEstimate | None:
    """Estimate a ROCm est_time from the CUDA one: other_est_time x median(measured ROCm / CUDA est_time).

    pairs: (measured ROCm duration, e.g. its p90; CUDA est_time) for files that have both.
    None when fewer than min_pairs usable pairs exist.
    """
    ratios = sorted(m / c for m, c in pairs if m is not None and c and c > 0 and m > 0)
    if len(ratios) < min_pairs:
        return None
    ratio = percentile(ratios, 0.5)
    return OtherBackendEstimate(_round_up(other_est_time * ratio, round_to_s), ratio, len(ratios))
