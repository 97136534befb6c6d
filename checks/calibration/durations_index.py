"""Stored durations, indexed for the rules: one row per (file, backend, calibration hardware).

The statistics arrive as plain data (from the store, or a `durations export` file); the verdict
maths live in checks/calibration/estimates.py and the policy in checks/calibration/policy.py.
REG020, REG021 and REG030 (checks/ruleset/) read a registration's row through `DurationsIndex.for_reg`,
so every rule judges a registration on its suite's calibration hardware; the PR summary does too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Iterable, Mapping

from checks.calibration.estimates import DurationStats, suggest_est_time
from checks.calibration.policy import Window, calibration_hardware, decide, hardware_for_suite
from checks.model import Backend, Registration
from checks.target.hardware import same_hardware_key

# est_time on the calibration hardware is what the ROCm registrations declare
CALIBRATED_BACKENDS = (Backend.ROCM,)


@dataclass(frozen=True)
class FileDurations:
    """Statistics of one (file, backend) on one hardware model, over the configured window."""

    file: str
    backend: Backend
    hardware: str | None
    stats: DurationStats
    since: date | None = None
    values: tuple[float, ...] | None = None  # the window's passing durations, when the rows carry them
    timeouts: int = 0  # TIMEOUT attempts in the window, when the rows say
    slowest: float | None = None  # the slowest passing run of floor_days (checks/calibration/policy.py)
    timed_out_at: float | None = None  # the longest TIMEOUT attempt of floor_days
    slowest_run: str | None = None  # the Actions run of `slowest`
    # the newest passing and failing run of merged code (checks/calibration/evidence.py reads them)
    newest_pass: dict | None = None
    newest_failure: dict | None = None


class DurationsIndex(dict):
    """(file, backend, hardware key) -> FileDurations; `for_reg` picks the registration's suite's hardware."""

    def __init__(self, params):
        super().__init__()
        self.params = params

    def for_reg(self, reg: Registration) -> FileDurations | None:
        hardware = same_hardware_key(hardware_for_suite(reg.suite, self.params))
        return self.get((reg.file, reg.backend.family, hardware))


def durations_index(rows: Iterable[Mapping], params) -> DurationsIndex:
    """Index `durations show --format json` rows by (file, backend, hardware), on every calibration
    hardware the `calibration:` section names (a bare hardware name: that one only)."""
    if isinstance(params, str):
        from checks.config.schema import Calibration

        params = Calibration(hardware=params, hardware_by_suite={})
    wanted = {same_hardware_key(h) for h in calibration_hardware(params)}
    out = DurationsIndex(params)
    for row in rows:
        hardware = same_hardware_key(row.get("hardware"))
        if hardware not in wanted:
            continue
        try:
            backend = Backend(str(row.get("backend", "rocm")).lower())
        except ValueError:
            continue
        since = row.get("since")
        out[(row["file"], backend, hardware)] = FileDurations(
            row["file"],
            backend,
            row.get("hardware"),
            DurationStats(int(row.get("n") or 0), row.get("median"), row.get("p90"), row.get("max")),
            date.fromisoformat(since[:10]) if isinstance(since, str) and since else None,
            tuple(float(v) for v in row["values"]) if isinstance(row.get("values"), list) else None,
            int(row.get("timeouts") or 0),
            row.get("slowest"),
            row.get("timed_out_at"),
            row.get("slowest_run"),
            row.get("newest_pass"),
            row.get("newest_failure"),
        )
    return out


def window_of(d: FileDurations | None) -> Window | None:
    """The calibration policy's window for a row (checks/calibration/policy.py decides on it)."""
    if d is None:
        return None
    return Window(d.values or (), d.timeouts, 0, d.since, d.slowest, d.timed_out_at, d.slowest_run,
                  None if d.values else d.stats)


def policy_suggestion(index: DurationsIndex, reg: Registration, params, *, flagged_only: bool = False) -> float | None:
    """The calibration policy's est_time for a registration with enough runs (REG030's rebalancing).

    flagged_only: only what `ci-registrar calibrate` changes (and REG020 flags): decide()'s value.
    """
    d = index.for_reg(reg)
    if d is None or d.stats.n < params.min_samples or d.stats.p90 is None or reg.est_time is None:
        return None
    decision = decide(reg, window_of(d), params)
    if flagged_only:
        return decision.new
    value = suggest_est_time(d.stats.p90, params.margin, params.round_to_s, slowest=max(d.stats.max or 0, d.slowest or 0),
                             max_margin=params.max_margin)
    if d.timeouts:
        value = max(value, reg.est_time)  # a timeout remembered: never lower
    return decision.new if decision.changed else value


def calibrated_seconds(index, reg: Registration, min_samples: int) -> float | None:
    """The measured p90 for a registration when it rests on enough runs (REG030 uses it)."""
    d = index.for_reg(reg)  # sglang's amd durations are stored as rocm
    if d is None or d.stats.n < min_samples or d.stats.p90 is None:
        return None
    return d.stats.p90


def judged(reg: Registration) -> bool:
    """Whether REG020/REG021 judge a registration's est_time: an enabled ROCm-family registration
    (sglang's AMD is the ROCm family) that declares one."""
    return reg.backend.family in CALIBRATED_BACKENDS and reg.est_time is not None and reg.disabled is None
