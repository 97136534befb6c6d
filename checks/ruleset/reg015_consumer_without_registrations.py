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

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from checks.findings import FindingMaker
from checks.model import Severity, code

if TYPE_CHECKING:
    from checks.ruleset.facts import TreeFacts

CODE = "REG015"
NAME = "consumer-without-registrations"
SEVERITY = Severity.WARNING
SUMMARY = 'A consumer (a workflow of the repository, or a configured external one read from its file) runs a suite of the inventory that no registration names, for the backend it passes with `--hw`: that job selects no test.'
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_tree(facts: TreeFacts) -> list:
    """A consumer runs an inventory suite that no registration names (for its --hw). Only when
    every discovered file was read: a file not read (a diff check, a syntax error, a cap) may hold
    the registration. A diff check reports what the diff brings: consumers in the workflows it
    changed, and consumers of a suite whose last registrations for the consumer's --hw the diff
    removed or moved elsewhere (the workflow is untouched, the PR empties its suite), or that the
    diff added to the inventory; every consumer when the diff changes how registrations read."""
    ctx = facts.ctx
    if not getattr(ctx, "registrations_complete", False):
        return []
    changed = getattr(ctx, "changed_paths", None)
    emptied = getattr(ctx, "emptied_suites", None) or {}
    contract = facts.contract
    known = set().union(*(set(s) for s in contract.suites.values())) if contract.inventory_known and contract.suites else None
    registered: dict[str, set[str]] = defaultdict(set)
    unread: set[str] = set()  # backends with a registration whose suite is not read (not a literal, composed)
    for reg in ctx.registrations():
        if reg.suite:
            registered[reg.suite].add(reg.backend.value)
        else:  # (an implicit registration always has its suite)
            unread.add(reg.backend.value)
    out = []
    reported = set()
    for use in facts.consumers_of_all:
        if known is not None and use.suite not in known and facts.runner_rejects(use.hw):
            continue  # REG014's finding
        backends = registered.get(use.suite, set())
        if (backends if use.hw is None else use.hw in backends) or (use.consumer, use.suite, use.hw) in reported:
            continue
        if changed is not None and use.file not in changed and not emptied_for(emptied.get(use.suite), use.hw):
            continue
        if (use.hw is None and unread) or use.hw in unread:
            continue  # a registration whose suite could not be read may name it
        reported.add((use.consumer, use.suite, use.hw))
        if use.file is not None:
            file, span = use.file, use.span
        else:
            where = contract.find_suite(use.suite)
            if where is None:
                continue
            file, span = where.file, where.span
        hw = f" with {code('--hw ' + use.hw)}" if use.hw else ""
        out.append(make_finding(
            CODE, file, span,
            f"{use.consumer} runs suite {code(use.suite)}{hw}, but no registration names that suite"
            + (f" for {use.hw}" if use.hw else "") + ": that job selects no test"))
    return out


def emptied_for(backends: set[str] | None, hw: str | None) -> bool:
    """The diff took this suite's registrations out for the backends a consumer with `hw` selects
    (or added the suite to the inventory: "*", every backend)."""
    return bool(backends) and (hw is None or hw in backends or "*" in backends)
