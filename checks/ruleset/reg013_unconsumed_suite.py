"""REG013 unconsumed-suite: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A test that no job runs and no workflow runs directly is dead weight that looks covered. This is
the one finding that says "this test never runs": the same words and the same severity in every
era of the runner and for every backend, whether or not the suite is in the inventory (REG010
says the inventory part on its own).

## Example
```python
register_cpu_ci(est_time=60, suite="stage-z-cpu")  # in the inventory, but no workflow runs it
```
Reports:

> this test never runs: no job runs suite `stage-z-cpu` for CPU: no workflow in this repository or its configured consumers passes `--suite stage-z-cpu`, and none runs this file itself

## How to fix
Add the suite to a workflow (`run_suite.py --hw <backend> --suite <name>`), or name the external
workflow that runs it under `consumers:` in `.github/ci-registrar.yml` (`repository` + `workflow`:
it is read from that file); otherwise its tests never run.

It is read from how every suite runs at this revision (checks/target/suite_runs.py): a job of the
revision's workflows or of its configured consumers that runs the suite with the registration's
backend (`--hw`), and for a `nightly=True` registration admits nightly registrations (`--nightly`,
`--cadence nightly|weekly|release`, or a flag decided at run time), or a workflow that runs the file itself (`python3 file.py`, or pytest on the
file, its directory or a glob), means the test runs. A command in a shell comment (`# python3 run_suite.py
--suite x`) runs nothing and counts for nothing. Where a consumer could not be read (an
external workflow not given: REG017; a workflow not read whole: REG902) nothing is said: it may
be the job that runs it. A disabled registration is not judged.

In a diff, a pull request that removes or changes the job that ran a suite is told here, on every
registration it leaves without a consumer (files it did not touch included): the diff re-reads
every registration when it changes a workflow, and `--new-only` keeps what the base did not have.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.findings import FindingMaker
from checks.model import Registration, Severity, code
from checks.wording import backend_name

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG013"
NAME = "unconsumed-suite"
SEVERITY = Severity.FAILURE
SUMMARY = "This test never runs: no job runs its suite for its backend (`--hw`) and, for nightly=True, with a nightly cadence; no configured consumer does; no workflow runs the file itself."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def message(suite: str, backend: str, detail: str) -> str:
    """The one wording of "this test never runs"."""
    return f"this test never runs: no job runs suite {code(suite)} for {backend_name(backend)}: {detail}"


def check_registration(facts: TreeFacts, reg: Registration) -> list:
    """Only where every consumer was read: one not read may be the job that runs it."""
    from checks.ruleset.facts import suite_span

    suite = reg.suite
    if suite is None or reg.disabled is not None:
        return []
    if facts.runs.never_runs(reg) is not True:
        return []
    backend = reg.backend.value
    others = facts.consumers_of.get(suite) or []
    same_backend = [u for u in others if u.selects(backend)]
    if same_backend:  # they run it, but leave nightly=True registrations out
        consumers = sorted({u.consumer for u in same_backend})
        detail = (f"{', '.join(consumers)} run{'s' if len(consumers) == 1 else ''} {code(suite)} without "
                  f"{code('--nightly')} or {code('--cadence nightly')}, which does not select this nightly=True "
                  f"registration, and no workflow runs this file itself")
    elif others:
        hws = ", ".join(sorted({code("--hw " + u.hw) for u in others if u.hw}))
        detail = (f"{facts.who_runs(suite)} runs {code(suite)} only with {hws}, which does not select "
                  f"{backend_name(backend)} registrations, and no workflow runs this file itself")
    else:
        detail = (f"no workflow in this repository or its configured consumers passes {code('--suite ' + suite)}, "
                  f"and none runs this file itself")
    return [make_finding(CODE, reg.file, suite_span(reg), message(suite, backend, detail))]
