"""REG010 unknown-suite: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The runner selects tests by suite name and checks them against its inventory: a registration to
a suite that is not in the inventory for its backend is rejected by a runner that validates that
backend (the job fails), and is a stale inventory where the runner lets it through.

## Example
```python
register_rocm_ci(est_time=600, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])
```
Reports:

> suite `nightly-stage-c-4-gpu-mi35` is not a ROCm suite in the inventory (tests/ci/run_suite.py), so the runner rejects this registration (it raises for an unknown suite); did you mean `nightly-stage-c-4-gpu-mi350` or `stage-c-4-gpu-mi350`?

## How to fix
Use a suite from the inventory for that backend (`CI_SUITES` in the suites module). The finding
names the closest suite and, when the name belongs to another backend, that backend;
`ci-registrar check --fix` applies a confident correction.

Did-you-mean and the fix only name a suite that states the same GPU count and hardware model as
the name written (`stage-c-8-gpu-b200` is never corrected to `stage-c-8-gpu-h200`, nor an 8-GPU
suite to a 4-GPU one); a token that is no hardware model and no word of the inventory (`mi35`)
is taken for a typo. A disabled registration gets the hint, never a one-click fix: it may be
disabled precisely because its hardware has no CI yet.

Severity: the runner's era and the backend decide. Where the runner validates this backend's
suites and raises for an unknown one, the registration is rejected (**failure**: the runner
raises, so the job fails). Where it lets the name through (it does not validate that backend's
suites, as sgl-project/sglang's AMD and NPU suites, which `validate_all_suites` never checks; or
it only prints "Unknown suite", as sglang's runner until April 2026) it is a **warning**: add the
suite to the inventory; the finding names the job that runs it, when one does. A disabled
registration is a warning where the runner accepts one with an unknown suite.

Whether the test runs at all is not this rule's to say: REG013 is the one finding that says
"this test never runs", read from how every suite runs (checks/target/suite_runs.py), in every era
and for every backend alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.findings import FindingMaker
from checks.model import Registration, Severity, code
from checks.wording import article, backend_name

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG010"
NAME = "unknown-suite"
SEVERITY = Severity.FAILURE
SUMMARY = "The suite is not in the inventory for that backend (did-you-mean, and the backend that owns the name)."
FIXABLE = True
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_registration(facts: TreeFacts, reg: Registration) -> list:
    from checks.ruleset.facts import quoted, suite_span

    contract = facts.contract
    suite = reg.suite
    if suite is None or not contract.inventory_known or reg.backend in contract.partial_backends:
        return []
    known_here = contract.suite_names(reg.backend)
    if suite in known_here:
        return []
    composed = reg.composed_suite is not None
    owners = [b for b in contract.owners(suite) if b is not reg.backend]
    checked = contract.suite_checked_backends is None or reg.backend in contract.suite_checked_backends
    backend = backend_name(reg.backend.value)
    inventory = f"not {article(backend + ' suite')} in the inventory ({facts.config.paths.suites_module})"
    what = f"suite {code(suite)}" + (" (composed from `stage=` and `runner_config=`)" if composed else "")
    parts = [f"{what} is {inventory}"]
    if owners:
        parts.append(f"{code(suite)} belongs to {', '.join(b.value for b in owners)}")
    # did-you-mean and fixes keep the GPU count and hardware the name states (b200 never
    # becomes h200, an 8-GPU suite never a 4-GPU one)
    keep = facts.hardware.same_hardware
    near = contract.near.close(suite, known_here, reg.backend, keep)
    if near:
        parts.append("did you mean " + " or ".join(f"{code(n)}" for n in near) + "?")
    fix_to = contract.near.correction(suite, known_here, reg.backend, keep) if not composed else None
    if reg.disabled is not None and fix_to is not None:
        # disabled on purpose (its hardware may have no CI yet): a hint, never a one-click move
        parts.append("no fix is offered for a disabled registration")
        fix_to = None
    # The runner's era decides: where it raises for this backend, the registration is rejected
    # (failure); where it lets the name through, the inventory is out of date (warning). Whether
    # the test runs is REG013's one finding.
    severity = None
    lets_through = not checked or bool(contract.unknown_suite_warns)
    if reg.disabled is not None and (not checked or contract.unknown_suite_when_disabled == "warning"):
        severity = Severity.WARNING
        if not checked:
            parts[0] += f"; the runner does not validate {backend} suites against it"
    elif lets_through:
        severity = Severity.WARNING
        run_by = [u for u in facts.consumers_of.get(suite, []) if u.selects(reg.backend.value)
                  and (u.nightly is None or bool(u.nightly) == reg.nightly)]
        direct = facts.runs.direct_run(reg.file)
        runner = (f"the runner ({contract.unknown_suite_warns}) only prints \"Unknown suite\" and runs it anyway"
                  if checked else f"the runner does not validate {backend} suites against it")
        if run_by:
            use = run_by[0]
            flags = f"--hw {use.hw} " if use.hw else ""
            flags += f"--suite {suite}" + (" --nightly" if use.nightly else "")
            where = f"{use.file}:{use.span.line}" if use.file else use.consumer
            parts[0] = f"{what} is {inventory}; {runner}, and {where} runs it ({code(flags)}): add the suite to the inventory"
        elif direct is not None:
            parts[0] = (f"{what} is {inventory}; {runner}; no job runs the suite, and {direct} runs the file itself: "
                        f"register it in a suite that job runs, or add the suite to the inventory")
        else:
            parts[0] = f"{what} is {inventory}; {runner}: add the suite to the inventory"
    else:
        parts[0] = f"{what} is {inventory}, so the runner rejects this registration (it raises for an unknown suite)"
    return [make_finding(CODE, reg.file, suite_span(reg), "; ".join(parts), severity=severity,
                         suggestion=quoted(fix_to) if fix_to else None)]
