"""REG004 unregistered-test-file: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The runner discovers the file but finds no registration, so no suite selects it: the test never
runs in CI, and nothing says so (outside the implicit-CPU roots, where the runner registers such
files as CPU).

## Example
```python
# tests/e2e/test_new_feature.py, with no register_<backend>_ci(...) call
def test_new_feature():
    ...
```
Reports:

> no registration: this test file is discovered under tests/e2e but declares no register_<backend>_ci(...) call, so the runner never runs it

## How to fix
Add a registration for every backend the test should run on, e.g.
`register_rocm_ci(est_time=600, suite="stage-c-4-gpu-mi350", labels=["long"])`, or move the file
out of the discovery roots if it is not a test the CI should run.
"""

from checks.findings import FindingMaker
from checks.model import Severity, Span, code

CODE = "REG004"
NAME = "unregistered-test-file"
SEVERITY = Severity.FAILURE
SUMMARY = "A test file in a discovery root with no registration (outside the implicit-CPU roots): the runner never runs it."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_tree(facts) -> list:
    """Each checked file that declares no registration and is not one the runner registers
    implicitly (an implicit-CPU root); a file that does not parse is REG001's."""
    ctx, contract, config = facts.ctx, facts.contract, facts.config
    out = []
    for path in sorted(facts.checked):
        scan = ctx.scans[path]
        if scan.registrations or scan.unreadable or path in ctx.implicit:
            continue
        why = " (its register calls are invisible to the runner, see REG003)" if scan.invisible else ""
        start = (f"no registration: this test file is discovered under {discovery_root_of(path, config, contract)} "
                 f"but declares no register_<backend>_ci(...) call{why}")
        if contract.unregistered_severity_of(path) == "failure":
            out.append(make_finding(CODE, path, Span.at_line(1), f"{start}, so the runner never runs it"))
        else:
            where = contract.facts.discovery_where or config.paths.suites_module
            out.append(make_finding(
                CODE, path, Span.at_line(1),
                f"{start}; the runner ({where}) collects with `sanity_check=False`, so it skips the file with a "
                "warning and never runs it", severity=Severity.WARNING))
    return out


def discovery_root_of(path: str, config, contract=None) -> str:
    """The discovery pattern (or configured root) a file was found under, for the message."""
    if contract is not None and contract.discovery is not None:
        for source in contract.discovery:
            if source.matcher()(path):
                return code(source.pattern)
    for root in [d.root for d in config.paths.discovery] or config.paths.test_roots:
        if path.startswith(root.rstrip("/") + "/"):
            return root
    return "a discovery root"
