"""REG021 est-time-uncalibrated: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
Without enough measured runs the est_time cannot be judged; the notice says so and, where other
files have both, estimates a value from the CUDA est_time.

## Example
```python
register_rocm_ci(est_time=2400, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])  # one stored run
```
Reports:

> est_time 2400 s rests on a single run on MI355X since 2026-11-02 (2100 s); 3 passing runs are needed to calibrate it ...

## How to fix
Import durations for the file (`ci-registrar durations import`) or keep the estimate the finding
suggests until enough passing runs are stored (`calibration.min_samples`).
"""

from checks.findings import FindingMaker
from checks.model import Backend, Severity

CODE = "REG021"
NAME = "est-time-uncalibrated"
SEVERITY = Severity.NOTICE
SUMMARY = (
    "No or too few stored durations (fewer than min_samples runs): says so, and estimates a "
    "value from the other backend's est_time times the ratio learnt across files that have "
    "both."
)
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_registration(facts, reg) -> list:
    """Too few stored runs on the suite's calibration hardware to judge est_time (REG020 judges
    the rest, and a change lowering it below a stored run)."""
    if facts.durations is None:
        return []  # no durations given: nothing to judge (and the calibration modules stay unloaded)
    from checks.calibration.estimates import DurationStats, calibrate, estimate_from_other_backend
    from checks.calibration.durations_index import judged
    from checks.calibration.policy import hardware_for_suite
    from checks.ruleset.reg020_est_time_miscalibrated import lowering

    if not judged(reg):
        return []
    params = facts.config.calibration
    d = facts.durations.for_reg(reg)
    stats = d.stats if d else DurationStats(0, None, None, None)
    if lowering(reg, d, params) is not None or (stats.n >= params.min_samples and stats.p90 is not None):
        return []
    cuda_est, pairs = facts.once("reg021.cuda", lambda: _cuda_pairs(facts))
    hardware = hardware_for_suite(reg.suite, params)
    other = None
    if reg.file in cuda_est:
        other = estimate_from_other_backend(cuda_est[reg.file], pairs, round_to_s=params.round_to_s)
    verdict = calibrate(reg.est_time, stats, params, since=d.since if d else None, hardware=hardware,
                        other_estimate=other, timeouts=d.timeouts if d else 0, slowest=d.slowest if d else None,
                        timed_out_at=d.timed_out_at if d else None)
    message = verdict.message
    if other is None and reg.file in cuda_est:
        message += (f"; cannot estimate it from the CUDA est_time: fewer than 3 files have both a CUDA est_time "
                    f"and {params.min_samples}+ {hardware} runs")
    return [make_finding(verdict.rule, reg.file, reg.anchor("est_time"), message, severity=Severity(verdict.severity))]


def _cuda_pairs(facts) -> tuple[dict, list]:
    """The files' CUDA est_times, and (ROCm p90, CUDA est_time) for every file with both and
    enough runs: the ratio that estimates a ROCm est_time from a CUDA one."""
    params = facts.config.calibration
    cuda_est = {r.file: r.est_time for r in facts.explicit if r.backend is Backend.CUDA and r.est_time}
    pairs = []
    for (file, backend, _hw), d in facts.durations.items():
        if backend is Backend.ROCM and d.stats.n >= params.min_samples and d.stats.p90 and file in cuda_est:
            pairs.append((d.stats.p90, cuda_est[file]))
    return cuda_est, pairs
