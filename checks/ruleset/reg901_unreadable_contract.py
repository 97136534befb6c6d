"""REG901 unreadable-contract: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The rules need the suite inventory, the register signatures and the labels; what cannot be read
statically (the check never executes the target's code) is reported, and only the rules that
depend on it are skipped, so no registration fails because of a reader's limit.

## Example
```python
# tests/ci/run_suite.py
CI_SUITES = build_suites()
```
Reports:

> `CI_SUITES` is not a dict literal keyed by HWBackend: the inventory cannot be read statically

## How to fix
Keep the suite inventory, the register functions' signatures and the labels as literals the
check can read without running code, or point `paths:` in `.github/ci-registrar.yml` at them.
"""

from checks.model import Severity

CODE = "REG901"
NAME = "unreadable-contract"
SEVERITY = Severity.WARNING
SUMMARY = "The suite inventory, register signatures or labels cannot be read statically; rules that depend on the unreadable part are skipped."
FIXABLE = False
IMPLEMENTED_IN = "checks/contract.py"
