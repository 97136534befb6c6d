"""REG015 consumer-without-registrations: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A job that runs a suite nobody registers a test in spends a runner (often a GPU runner) to select
nothing; usually the registrations moved to another suite and the workflow was not updated.
It is reported only when every discovered file was read (a partial read cannot prove absence).
In a diff it is reported for what the diff brings: a workflow the diff changed, or a suite whose
last registrations (for the job's `--hw`) the diff removed or moved to another suite while an
untouched workflow still runs it, or a suite the diff added to the inventory; a diff that changes
how registrations read (the register module's signatures, a suite template) can empty any suite,
so then every consumer is checked.

## Example
```yaml
- run: python3 tests/ci/run_suite.py --hw rocm --suite stage-c-4-gpu-mi350   # no registration names it
```

## How to fix
Register the tests the job should run in that suite (for the backend the job passes with `--hw`),
or stop running the suite: remove it from the workflow's `--suite`/matrix (for an external
consumer, from that repository's workflow) and from the inventory.
"""

from checks.model import Severity

CODE = "REG015"
NAME = "consumer-without-registrations"
SEVERITY = Severity.WARNING
SUMMARY = 'A consumer (a workflow of the repository, or a configured external one read from its file) runs a suite of the inventory that no registration names, for the backend it passes with `--hw`: that job selects no test.'
FIXABLE = False
IMPLEMENTED_IN = "checks/rules_suites.py"
