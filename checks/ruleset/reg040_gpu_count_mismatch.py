"""REG040 gpu-count-mismatch: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A test written for N GPUs in a suite whose runners have another number of GPUs either fails to
start or silently under-uses (or over-reserves) the machine.

## Example
```python
# tests/e2e/test_foo_2xGPU.py
register_rocm_ci(est_time=600, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])
```
Reports:

> suite `nightly-stage-c-4-gpu-mi350` runs on 4 GPUs but the test says it needs 2 (its file name)

## How to fix
Register the file in the suite whose GPU count matches the test (a `2xGPU` file in a `-2-gpu-`
suite), or correct the test's own GPU count.
"""

from checks.model import Severity

CODE = "REG040"
NAME = "gpu-count-mismatch"
SEVERITY = Severity.WARNING
SUMMARY = (
    "The GPU count in the suite name contradicts the test's own (a 2xGPU file name, a NUM_GPUS "
    "constant)."
)
FIXABLE = False
IMPLEMENTED_IN = "checks/rules_suites.py"
