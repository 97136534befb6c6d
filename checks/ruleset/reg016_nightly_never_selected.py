"""REG016 nightly-never-selected: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
Runners of this family admit a `nightly=True` registration only when the invocation asks for
nightly tests (`--nightly`, or `--cadence nightly`). If every job that runs the suite omits that
flag, the test is registered, looks covered, and never runs.

## Example
```python
register_cuda_ci(est_time=300, suite="base-a-test-cpu", nightly=True)  # pr-test.yml runs the suite without --nightly
```

Since "this test never runs" became one finding with one severity, this case is reported as
REG013 (`unconsumed-suite`), a failure, with these words: "... runs X without `--nightly` or
`--cadence nightly`, which does not select this nightly=True registration". REG016 stays a known
code (configurations that name it stay valid) and reports nothing of its own.

## How to fix
Either register the test without `nightly=True` (the job runs regular registrations), or make a
nightly job run the suite with `--nightly` / `--cadence nightly` (the runner admits `nightly=True`
registrations only then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.model import Registration, Severity

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG016"
NAME = "nightly-never-selected"
SEVERITY = Severity.WARNING
SUMMARY = 'A `nightly=True` registration whose suite is run only by invocations that do not select nightly registrations (no `--nightly`, no `--cadence nightly|weekly|release`): the runner never runs it.'
FIXABLE = False


def check_registration(facts: TreeFacts, reg: Registration) -> list:
    """Reported as REG013: "this test never runs" is one finding (see the module's docs)."""
    return []
