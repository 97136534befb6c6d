"""REG014 stale-consumer: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A workflow that runs a suite the inventory no longer has selects no test, or makes the runner
fail; usually the suite was renamed and the workflow was not.

## Example
```yaml
# .github/workflows/pr-test.yml
      - run: python3 tests/ci/run_suite.py --hw cpu --suite stage-b-cpux
```
Reports:

> .github/workflows/pr-test.yml runs suite `stage-b-cpux`, which is not in the inventory: that job selects no test (the runner raises for an unknown suite); did you mean `stage-b-cpu`?

## How to fix
Update or remove the workflow's `--suite` value: the suite is no longer in the inventory, so
that job selects no test (or fails).

The runner's era decides: it is reported only where the revision's runner raises for a suite
outside its inventory for the job's `--hw` (it validates that backend's suites and does not only
warn). Where the runner only prints "Unknown suite" (sglang until April 2026) or does not check
that backend, the job runs whatever registrations name the suite; a job whose suite no
registration names is then REG015's finding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.findings import FindingMaker
from checks.model import Severity, code

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG014"
NAME = "stale-consumer"
SEVERITY = Severity.WARNING
SUMMARY = "A workflow runs a suite that is not in the inventory: that job selects nothing (or fails)."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_tree(facts: TreeFacts) -> list:
    """Each workflow step that runs a suite the inventory does not hold, once per (file, suite),
    where the runner of this revision raises for it (its era and the job's `--hw`)."""
    contract = facts.contract
    if not contract.inventory_known:
        return []
    known = set().union(*(set(s) for s in contract.suites.values())) if contract.suites else set()
    # A suite some registration names is selected by the job even outside the inventory, where the
    # runner does not validate that backend's suites (sglang's AMD nightlies): not stale. The
    # registration itself gets REG010 for the inventory.
    unchecked = contract.suite_checked_backends
    registered = {r.suite for r in facts.ctx.registrations() if r.suite and unchecked is not None and r.backend not in unchecked}
    out = []
    reported = set()
    for use in facts.runs.runs:
        if use.file is None or use.suite in known or use.suite in registered or (use.file, use.suite) in reported:
            continue
        if contract.partial_backends:
            continue  # cannot tell a stale name from one we could not read
        if not facts.runner_rejects(use.hw):
            continue  # the runner lets the name through (it only warns, or does not check this backend): REG015's
        reported.add((use.file, use.suite))
        keep = facts.hardware.same_hardware
        near = contract.near.close(use.suite, known, "all", keep)
        hint = f"; did you mean {' or '.join(f'{code(n)}' for n in near)}?" if near else ""
        fix_to = contract.near.correction(use.suite, known, "all", keep)
        out.append(make_finding(
            CODE, use.file, use.span,
            f"{use.consumer} runs suite {code(use.suite)}, which is not in the inventory: that job selects no test (the runner raises for an unknown suite){hint}",
            suggestion=fix_to))
    return out
