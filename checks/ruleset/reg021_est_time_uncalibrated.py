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

from checks.model import Severity

CODE = "REG021"
NAME = "est-time-uncalibrated"
SEVERITY = Severity.NOTICE
SUMMARY = (
    "No or too few stored durations (fewer than min_samples runs): says so, and estimates a "
    "value from the other backend's est_time times the ratio learnt across files that have "
    "both."
)
FIXABLE = False
IMPLEMENTED_IN = "checks/rules_calibration.py"
