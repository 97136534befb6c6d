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

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.model import Registration, Severity, code

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG013"
NAME = "unconsumed-suite"
SEVERITY = Severity.WARNING
SUMMARY = "No workflow in the repository runs the suite (for the registration's backend, when the workflow passes `--hw`) and no configured external consumer runs it: its tests never run."
FIXABLE = False


def check_registration(facts: TreeFacts, reg: Registration) -> list:
    """Not when a workflow could not be read whole: its suites may be the missing consumers."""
    from checks.rules import make_finding
    from checks.ruleset.facts import suite_span

    suite, contract = reg.suite, facts.contract
    if suite is None or reg.disabled is not None or facts.consumers_partial:
        return []
    if contract.inventory_known and suite not in contract.suite_names(reg.backend):
        return []  # REG010's finding
    backend = reg.backend.value
    all_uses = facts.consumers_of.get(suite) or []
    if facts.selecting(reg):
        return []
    if all_uses:
        hws = ", ".join(sorted({code("--hw " + u.hw) for u in all_uses if u.hw}))
        detail = f"{facts.who_runs(suite)} runs {code(suite)} only with {hws}, which does not select {backend} registrations"
    else:
        detail = (f"no workflow in this repository or its configured consumers runs suite {code(suite)} for {backend} "
                  f"(none passes {code('--suite ' + suite)})")
    return [make_finding(CODE, reg.file, suite_span(reg),
                         f"no consumer runs suite {code(suite)} for {backend}: {detail}, so this test never runs")]
