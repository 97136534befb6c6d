"""REG050 registration-removed: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A removed registration drops coverage on that backend; it is a notice so that the removal is a
visible decision in review.

## Example
```python
# base: a CUDA and a ROCm registration; head: the ROCm one deleted
register_cuda_ci(est_time=700, suite="stage-c-8-gpu-h200", labels=["megatron"])
```
Reports:

> the rocm registration (suite `nightly-stage-c-8-gpu-mi350`) was removed: coverage drops on rocm

## How to fix
Nothing to fix if intended: the notice records that coverage on that backend drops. Restore the
registration if the removal was an accident.
"""

from checks.model import Severity

CODE = "REG050"
NAME = "registration-removed"
SEVERITY = Severity.NOTICE
SUMMARY = "A registration was removed: coverage drops on that backend."
FIXABLE = False
IMPLEMENTED_IN = "checks/engine.py (_classify)"
