"""REG011 hardware-mismatch: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
Each backend's jobs run on their own hardware: a suite named for MI350 in `register_cuda_ci` (or
for H200 in `register_rocm_ci`) is either never selected or runs the test on hardware it was not
written for.

## Example
```python
register_cuda_ci(est_time=600, suite="stage-c-4-gpu-mi350", labels=["long"])
```
Reports:

> suite `stage-c-4-gpu-mi350` runs on mi350 (rocm) hardware, but register_cuda_ci registers the test for cuda

## How to fix
Register the file with the backend that owns the suite's hardware (`-mi350` suites are ROCm,
`-h100`/`-h200` suites are CUDA), or pick a suite of the backend you meant.
"""

from checks.model import Severity

CODE = "REG011"
NAME = "hardware-mismatch"
SEVERITY = Severity.FAILURE
SUMMARY = (
    "The suite's hardware class contradicts the backend (an -mi350 suite in register_cuda_ci, "
    "an -h200 suite in register_rocm_ci)."
)
FIXABLE = False
IMPLEMENTED_IN = "checks/rules_suites.py"
