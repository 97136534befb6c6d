"""REG016 nightly-never-selected: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
Runners of this family admit a `nightly=True` registration only when the invocation asks for
nightly tests (`--nightly`, or `--cadence nightly`). If every job that runs the suite omits that
flag, the test is registered, looks covered, and never runs.

## Example
```python
register_cuda_ci(est_time=300, suite="base-a-test-cpu", nightly=True)  # pr-test.yml runs the suite without --nightly
```

## How to fix
Either register the test without `nightly=True` (the job runs regular registrations), or make a
nightly job run the suite with `--nightly` / `--cadence nightly` (the runner admits `nightly=True`
registrations only then).
"""

from checks.model import Severity

CODE = "REG016"
NAME = "nightly-never-selected"
SEVERITY = Severity.WARNING
SUMMARY = 'A `nightly=True` registration whose suite is run only by invocations that do not select nightly registrations (no `--nightly`, no `--cadence nightly|weekly|release`): the runner never runs it.'
FIXABLE = False
IMPLEMENTED_IN = "checks/rules_suites.py"
