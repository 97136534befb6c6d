"""REG020 / REG021: est_time against stored durations on the calibration hardware (MI355X).

The statistics arrive as plain data (from the store, or a `durations export` file); the verdict
maths live in checks/durations.py. This module only decides which registrations are judged and
turns verdicts into findings with fixes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Iterable, Mapping

from checks.durations import DurationStats, _round_up, calibrate, estimate_from_other_backend, runner_timeout, suggest_est_time
from checks.hardware import same_hardware_key
from checks.model import Backend, Finding, Registration, Severity
from checks.rules import make_finding

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
    slowest: float | None = None  # the slowest passing run of floor_days (checks/calibration.py)
    timed_out_at: float | None = None  # the longest TIMEOUT attempt of the window


def durations_index(rows: Iterable[Mapping], hardware: str) -> dict[tuple[str, Backend], FileDurations]:
    """Index `durations show --format json` rows for one hardware model by (file, backend)."""
    out: dict[tuple[str, Backend], FileDurations] = {}
    for row in rows:
        if same_hardware_key(row.get("hardware")) != same_hardware_key(hardware):
            continue
        try:
            backend = Backend(str(row.get("backend", "rocm")).lower())
        except ValueError:
            continue
        since = row.get("since")
        out[(row["file"], backend)] = FileDurations(
            row["file"],
            backend,
            row.get("hardware"),
            DurationStats(int(row.get("n") or 0), row.get("median"), row.get("p90"), row.get("max")),
            date.fromisoformat(since[:10]) if isinstance(since, str) and since else None,
            tuple(float(v) for v in row["values"]) if isinstance(row.get("values"), list) else None,
            int(row.get("timeouts") or 0),
            row.get("slowest"),
            row.get("timed_out_at"),
        )
    return out


def policy_suggestion(index, reg: Registration, params, *, flagged_only: bool = False) -> float | None:
    """The calibration policy's est_time for a registration with enough runs (REG030's rebalancing).

    flagged_only: only where REG020 flags the est_time, i.e. what `ci-registrar calibrate` changes.
    """
    d = index.get((reg.file, reg.backend.family))
    if d is None or d.stats.n < params.min_samples or d.stats.p90 is None or reg.est_time is None:
        return None
    if flagged_only:
        verdict = calibrate(reg.est_time, d.stats, params, timeouts=d.timeouts, slowest=d.slowest, timed_out_at=d.timed_out_at)
        if verdict.rule is None or verdict.suggested is None:
            return None
    value = suggest_est_time(d.stats.p90, params.margin, params.round_to_s, slowest=max(d.stats.max or 0, d.slowest or 0),
                             max_margin=params.max_margin)
    if d.timed_out_at is not None and d.timed_out_at >= runner_timeout(reg.est_time, params.timeout_per_file_s) \
            and 1.25 * reg.est_time >= params.timeout_per_file_s:
        value = max(value, _round_up(d.timed_out_at * params.max_margin, params.round_to_s))
    if d.timeouts:
        value = max(value, reg.est_time)  # a timeout in the window: never lower
    return value


def _lowering(reg: Registration, d: FileDurations | None, params) -> Finding | None:
    """A change that lowers est_time below passing runs of the window: a failure naming how many."""
    base = reg.base
    if d is None or base is None or base.est_time is None or reg.est_time is None or reg.est_time >= base.est_time:
        return None
    if d.values is not None:
        cut = sum(1 for v in d.values if v > reg.est_time)
    else:
        cut = 1 if d.stats.max is not None and d.stats.max > reg.est_time else 0
    if not cut:
        return None
    floor = suggest_est_time(d.stats.p90 or 0, params.margin, params.round_to_s, slowest=max(d.stats.max or 0, d.slowest or 0),
                             max_margin=params.max_margin) if d.stats.n >= params.min_samples else None
    counted = f"{cut} of the {d.stats.n}" if d.values is not None else "at least 1 of the"
    message = (f"lowers est_time from {base.est_time:g} to {reg.est_time:g} s, below {counted} passing runs on "
               f"{params.hardware} in the window (slowest {d.stats.max:.0f} s): that value would have cut them")
    if floor is not None:
        message += f"; the calibration policy keeps at least {floor}"
    return make_finding("REG020", reg.file, reg.anchor("est_time"), message, severity=Severity.FAILURE,
                        suggestion=str(floor) if floor else None)


def calibrated_seconds(index, reg: Registration, min_samples: int) -> float | None:
    """The measured p90 for a registration when it rests on enough runs (REG030 uses it)."""
    d = index.get((reg.file, reg.backend.family))  # sglang's amd durations are stored as rocm
    if d is None or d.stats.n < min_samples or d.stats.p90 is None:
        return None
    return d.stats.p90


def apply(ctx, checked: set[str], index: dict[tuple[str, Backend], FileDurations]) -> list[Finding]:
    params = ctx.config.calibration
    regs = [r for r in ctx.registrations() if not r.implicit]
    cuda_est = {r.file: r.est_time for r in regs if r.backend is Backend.CUDA and r.est_time}
    pairs = []
    for (file, backend), d in index.items():
        if backend is Backend.ROCM and d.stats.n >= params.min_samples and d.stats.p90 and file in cuda_est:
            pairs.append((d.stats.p90, cuda_est[file]))
    out: list[Finding] = []
    for reg in regs:
        if reg.file not in checked or reg.backend.family not in CALIBRATED_BACKENDS or reg.est_time is None or reg.disabled is not None:
            continue
        d = index.get((reg.file, reg.backend.family))  # AMD (sglang) is the ROCm family
        other = None
        stats = d.stats if d else DurationStats(0, None, None, None)
        if stats.n < params.min_samples and reg.file in cuda_est:
            other = estimate_from_other_backend(cuda_est[reg.file], pairs, round_to_s=params.round_to_s)
        lowered = _lowering(reg, d, params)
        if lowered is not None:
            out.append(lowered)
            continue
        verdict = calibrate(reg.est_time, stats, params, since=d.since if d else None, hardware=params.hardware,
                            other_estimate=other, timeouts=d.timeouts if d else 0, slowest=d.slowest if d else None,
                            timed_out_at=d.timed_out_at if d else None)
        if verdict.rule is None:
            continue
        message = verdict.message
        if verdict.rule == "REG021" and other is None and reg.file in cuda_est:
            message += f"; cannot estimate it from the CUDA est_time: fewer than 3 files have both a CUDA est_time and {params.min_samples}+ {params.hardware} runs"
        suggestion = str(verdict.suggested) if verdict.rule == "REG020" and verdict.suggested else None
        out.append(make_finding(verdict.rule, reg.file, reg.anchor("est_time"), message, severity=Severity(verdict.severity), suggestion=suggestion))
    return out
