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

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.findings import FindingMaker
from checks.model import Registration, Severity, code
from checks.wording import plural

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG040"
NAME = "gpu-count-mismatch"
SEVERITY = Severity.WARNING
SUMMARY = (
    "The GPU count in the suite name contradicts the test's own (a 2xGPU file name, a NUM_GPUS "
    "constant)."
)
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_registration(facts: TreeFacts, reg: Registration) -> list:
    from checks.scanning.registrations import gpu_count_from_name
    from checks.target.suites import parse_suite_name
    from checks.ruleset.facts import suite_span

    parsed = parse_suite_name(reg.suite) if reg.suite is not None else None
    if parsed is None or parsed.gpus is None:
        return []
    own, source = gpu_count_from_name(reg.file), "its file name"
    scan = facts.ctx.scans.get(reg.file)
    if scan is not None and scan.num_gpus_constant is not None:
        own, source = scan.num_gpus_constant[0], "its NUM_GPUS constant"
    if own is None or own == parsed.gpus:
        return []
    return [make_finding(CODE, reg.file, suite_span(reg),
                         f"suite {code(reg.suite)} runs on {plural(parsed.gpus, 'GPU')} but the test says it needs {own} ({source})")]
