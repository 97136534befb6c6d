"""REG012 nightly-namespace-move: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
Moving between a PR-gate suite and a `nightly-` suite changes who runs the test and when: it
leaves (or joins) the gate every pull request pays for. Often intended, so it is a notice naming
the consumers on both sides.

## Example
```python
# base: register_rocm_ci(est_time=600, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])
register_rocm_ci(est_time=600, suite="stage-c-4-gpu-mi350", labels=["long"])
```
Reports:

> registration moved from `nightly-stage-c-4-gpu-mi350` (run by ...) to `stage-c-4-gpu-mi350` (run by ...): it joins the PR gate: it will run (and cost GPU time) on every PR

## How to fix
Nothing to fix if the move is intended: PR-gate suites run on pull requests, `nightly-` suites
run only in the nightly workflows the finding names. Check the new consumer runs the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.findings import FindingMaker
from checks.model import Change, Registration, Severity, code

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG012"
NAME = "nightly-namespace-move"
SEVERITY = Severity.NOTICE
SUMMARY = "A registration moved between a PR-gate suite and a nightly- suite; says who consumes each."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_registration(facts: TreeFacts, reg: Registration) -> list:
    """A changed registration whose suite crossed the `nightly-` namespace (either way)."""
    from checks.target.suites import is_nightly
    from checks.ruleset.facts import suite_span

    base, suite = reg.base, reg.suite
    if (suite is None or reg.change is not Change.CHANGED or base is None or not base.suite or base.suite == suite
            or is_nightly(base.suite) == is_nightly(suite)):
        return []
    if is_nightly(suite):
        cost = "it leaves the PR gate (which costs every ROCm PR) and runs only where the nightly consumer schedules it"
    else:
        cost = "it joins the PR gate: it will run (and cost GPU time) on every PR"
    message = (f"registration moved from {code(base.suite)} (run by {facts.who_runs(base.suite)}) to {code(suite)} "
               f"(run by {facts.who_runs(suite)}): {cost}")
    return [make_finding(CODE, reg.file, suite_span(reg), message)]
