"""REG020 est-time-miscalibrated: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
est_time drives sharding and the runner's timeout: an estimate below the measured time overruns
shards and jobs, one far above wastes GPU time. The verdict uses stored passing runs on the
calibration hardware (MI355X).

## Example
```python
register_rocm_ci(est_time=600, suite="nightly-stage-c-8-gpu-mi350", labels=["megatron"])  # p90 of 7 passing runs: 912 s
```
Reports:

> p90 912 s over 7 passing runs on MI355X since 2026-11-02; est_time 600 s is under-estimated; suggest 1050 ...

A pull request that lowers est_time below passing runs of the window fails:

> lowers est_time from 800 to 600 s, below 4 of the 5 passing runs on MI355X in the window (slowest 720 s) ...

REG020 flags exactly what `ci-registrar calibrate` would change, with the value it would write:
both call `checks.calibration.policy.decide`. An est_time the thresholds would call over-estimated but
that calibrate leaves alone (a timeout remembered, a window not yet full) is not flagged; the
calibrate report says why (`unchanged: ... timeout-in-window`, `window-not-full`).

## How to fix
Set est_time to the suggested value, the calibration policy's (docs/calibration.md): at least the
p90 of recent passing runs on the suite's calibration hardware times the margin, and at least the
slowest passing run of `floor_days` times `max_margin`, rounded up; never lowered while a run timed
out within `floor_days`. `ci-registrar calibrate --write` applies it to every flagged file. Check
the figures with `ci-registrar durations show --file <path>`.
"""

from checks.findings import FindingMaker
from checks.model import Severity

CODE = "REG020"
NAME = "est-time-miscalibrated"
SEVERITY = Severity.WARNING
SUMMARY = (
    "est_time that `ci-registrar calibrate` would change, with its value (one function decides "
    "both): below the p90 of the default branch's recent passing runs on the suite's calibration "
    "hardware, or above both max(1.5 x p90, p90 + 120 s) and the calibration policy's value (not "
    "while a timeout is remembered, nor lowered on a window not yet full); failure when the "
    "observed maximum exceeds the runner's timeout for that est_time, or when a change lowers "
    "est_time below passing runs of the window."
)
FIXABLE = True
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_registration(facts, reg) -> list:
    """A change that lowers est_time below passing runs of the window, else (with enough runs) what
    `ci-registrar calibrate` would change; too few runs are REG021's."""
    if facts.durations is None:
        return []  # no durations given: nothing to judge (and the calibration modules stay unloaded)
    from checks.calibration.durations_index import judged, window_of
    from checks.calibration.policy import Bounds

    if not judged(reg):
        return []
    params = facts.config.calibration
    d = facts.durations.for_reg(reg)
    lowered = lowering(reg, d, params)
    if lowered is not None:
        return [lowered]
    if d is None or d.stats.n < params.min_samples or d.stats.p90 is None:
        return []
    return check(reg, window_of(d), params, facts.once("bounds", lambda: Bounds.of(facts.contract)))


def check(reg, window, params, bounds=None) -> list:
    """REG020 for one registration with enough runs: calibrate's decision, flagged when it changes est_time."""
    from checks.calibration.policy import Bounds, decide

    decision = decide(reg, window, params, bounds or Bounds())
    if not decision.changed:
        return []  # fits, or calibrate leaves it alone (its report says why): nothing to flag
    message = decision.detail
    if decision.one_run:
        message += (f"; this raise rests on a single run ({decision.max or window.slowest:.0f} s"
                    + (f": {decision.run}" if decision.run else "") + ")")
    return [make_finding(CODE, reg.file, reg.anchor("est_time"), message,
                         severity=Severity(decision.severity or "warning"), suggestion=f"{decision.new:g}")]


def lowering(reg, d, params):
    """A change that lowers est_time below passing runs of the window: a failure naming how many."""
    from checks.calibration.policy import hardware_for_suite
    from checks.calibration.estimates import suggest_est_time

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
               f"{hardware_for_suite(reg.suite, params)} in the window (slowest {d.stats.max:.0f} s): that value "
               "would have cut them")
    if floor is not None:
        message += f"; the calibration policy keeps at least {floor}"
    return make_finding(CODE, reg.file, reg.anchor("est_time"), message, severity=Severity.FAILURE,
                        suggestion=str(floor) if floor else None)
