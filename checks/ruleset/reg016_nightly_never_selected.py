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

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.model import Registration, Severity, code

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG016"
NAME = "nightly-never-selected"
SEVERITY = Severity.WARNING
SUMMARY = 'A `nightly=True` registration whose suite is run only by invocations that do not select nightly registrations (no `--nightly`, no `--cadence nightly|weekly|release`): the runner never runs it.'
FIXABLE = False


def check_registration(facts: TreeFacts, reg: Registration) -> list:
    """nightly=True, but every invocation that runs the suite for this backend leaves nightly tests out."""
    from checks.rules import make_finding

    if reg.suite is None or not reg.nightly or reg.disabled is not None or facts.consumers_partial:
        return []
    uses = facts.selecting(reg)
    if not uses or not all(u.nightly is False for u in uses):
        return []
    consumers = {u.consumer for u in uses}
    return [make_finding(
        CODE, reg.file, reg.anchor("nightly"),
        f"registered with nightly=True, but no consumer of suite {code(reg.suite)} selects nightly registrations: "
        f"{', '.join(sorted(consumers))} run{'s' if len(consumers) == 1 else ''} it without {code('--nightly')} "
        f"or {code('--cadence nightly')}, so the runner never runs this test")]
