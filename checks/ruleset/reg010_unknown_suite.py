"""REG010 unknown-suite: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The runner selects tests by suite name; a registration to a suite that is not in the inventory
for its backend is never selected by any job (or the runner rejects it), so the test silently
stops running.

## Example
```python
register_rocm_ci(est_time=600, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])
```
Reports:

> suite `nightly-stage-c-4-gpu-mi35` is not a ROCm suite in the inventory (tests/ci/run_suite.py), so this registration never runs; did you mean `nightly-stage-c-4-gpu-mi350` or `stage-c-4-gpu-mi350`?

## How to fix
Use a suite from the inventory for that backend (`CI_SUITES` in the suites module). The finding
names the closest suite and, when the name belongs to another backend, that backend;
`ci-registrar check --fix` applies a confident correction.

Did-you-mean and the fix only name a suite that states the same GPU count and hardware model as
the name written (`stage-c-8-gpu-b200` is never corrected to `stage-c-8-gpu-h200`, nor an 8-GPU
suite to a 4-GPU one); a token that is no hardware model and no word of the inventory (`mi35`)
is taken for a typo. A disabled registration gets the hint, never a one-click fix: it may be
disabled precisely because its hardware has no CI yet.

Severity: one defect, one severity, in every era and for every backend. The test never runs
(**failure**) when the runner rejects the name (it validates this backend's suites and raises),
or when it lets the name through and no job runs the suite for that backend; the finding then
says so plainly: "no workflow in this repository or its configured consumers runs suite X for
backend Y". The runner lets a name through when it does not validate that backend's suites
(sgl-project/sglang's AMD and NPU suites, which `validate_all_suites` never checks) or only
prints "Unknown suite" (sglang until April 2026). The test runs (**warning**: add the suite to
the inventory) when a workflow runs the suite with the registration's backend (`--hw`) and
nightly flag, naming that job, or when a workflow runs the file itself (`python3 file.py`, or
pytest on the file, its directory or a glob, `python -m pytest` too). It is also a warning when
a workflow could not be read whole (REG902: it may be the one that runs it), and for a disabled
registration where the runner accepts one with an unknown suite.
"""

from checks.model import Severity

CODE = "REG010"
NAME = "unknown-suite"
SEVERITY = Severity.FAILURE
SUMMARY = "The suite is not in the inventory for that backend (did-you-mean, and the backend that owns the name)."
FIXABLE = True
IMPLEMENTED_IN = "checks/rules_suites.py"
