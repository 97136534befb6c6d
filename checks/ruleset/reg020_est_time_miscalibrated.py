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

## How to fix
Set est_time to the suggested value, the calibration policy's (docs/calibration.md): at least the
p90 of recent passing runs on the calibration hardware times the margin, and at least the slowest
passing run of `floor_days` times `max_margin`, rounded up; never lowered while a run timed out in
the window. `ci-registrar calibrate --write` applies it to every flagged file. Check the figures
with `ci-registrar durations show --file <path>`.
"""

from checks.model import Severity

CODE = "REG020"
NAME = "est-time-miscalibrated"
SEVERITY = Severity.WARNING
SUMMARY = (
    "est_time out of line with stored durations on the calibration hardware: below the p90 of "
    "recent passing runs, or above both max(1.5 x p90, p90 + 120 s) and the calibration policy's "
    "value (none while a run timed out in the window); failure when the observed maximum exceeds "
    "the runner's timeout for that est_time, or when a change lowers est_time below passing runs "
    "of the window."
)
FIXABLE = True
IMPLEMENTED_IN = "checks/rules_calibration.py"
