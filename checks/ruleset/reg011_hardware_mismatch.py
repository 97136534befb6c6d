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

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.findings import FindingMaker
from checks.model import Registration, Severity, code

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG011"
NAME = "hardware-mismatch"
SEVERITY = Severity.FAILURE
SUMMARY = (
    "The suite's hardware class contradicts the backend (an -mi350 suite in register_cuda_ci, "
    "an -h200 suite in register_rocm_ci)."
)
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_registration(facts: TreeFacts, reg: Registration) -> list:
    from checks.target.suites import parse_suite_name
    from checks.ruleset.facts import suite_span

    parsed = parse_suite_name(reg.suite) if reg.suite is not None else None
    klass = parsed.backend_class if parsed is not None else None
    if klass is None or klass.family is reg.backend.family:  # amd and rocm: one hardware family
        return []
    return [make_finding(CODE, reg.file, suite_span(reg),
                         f"suite {code(reg.suite)} runs on {parsed.hardware} ({klass.value}) hardware, but {reg.function} registers the test for {reg.backend.value}")]
