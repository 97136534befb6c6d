"""REG013 unconsumed-suite: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A suite that no workflow passes to the runner (and no configured external consumer lists) is
never run: every test registered in it is dead weight that looks covered.

## Example
```python
register_cpu_ci(est_time=60, suite="stage-z-cpu")  # in the inventory, but no workflow runs it
```
Reports:

> no consumer runs suite `stage-z-cpu` for cpu: no workflow in this repository or its configured consumers runs suite `stage-z-cpu` for cpu (none passes `--suite stage-z-cpu`), so this test never runs

## How to fix
Add the suite to a workflow (`run_suite.py --hw <backend> --suite <name>`), or name the external
workflow that runs it under `consumers:` in `.github/ci-registrar.yml` (`repository` + `workflow`:
it is read from that file); otherwise its tests never run.

In a diff, a pull request that removes or changes the job that ran a suite is told here, on every
registration it leaves without a consumer (files it did not touch included): the diff re-reads
every registration when it changes a workflow, and `--new-only` keeps what the base did not have.
"""

from checks.model import Severity

CODE = "REG013"
NAME = "unconsumed-suite"
SEVERITY = Severity.WARNING
SUMMARY = "No workflow in the repository runs the suite (for the registration's backend, when the workflow passes `--hw`) and no configured external consumer runs it: its tests never run."
FIXABLE = False
IMPLEMENTED_IN = "checks/rules_suites.py"
