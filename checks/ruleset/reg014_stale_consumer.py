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
"""

from checks.model import Severity

CODE = "REG014"
NAME = "stale-consumer"
SEVERITY = Severity.WARNING
SUMMARY = "A workflow runs a suite that is not in the inventory: that job selects nothing (or fails)."
FIXABLE = False
IMPLEMENTED_IN = "checks/rules_suites.py (_stale_consumers)"
