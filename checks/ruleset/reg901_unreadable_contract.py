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

The runner's discovery is the exception: it says which files run at all, so a discovery that
cannot be read, or that reads no file while `test_*.py` files exist under `tests/`, `test/` or
the configured roots, is a failure naming the globs (never a check that passes on nothing).

## How to fix
Keep the suite inventory, the register functions' signatures and the labels as literals the
check can read without running code, or point `paths:` in `.github/ci-registrar.yml` at them.
"""

from checks.model import Severity

CODE = "REG901"
NAME = "unreadable-contract"
SEVERITY = Severity.WARNING
SUMMARY = "The suite inventory, register signatures or labels cannot be read statically; rules that depend on the unreadable part are skipped (a failure when it is the runner's discovery, or when that discovery reads no file while test files exist)."
FIXABLE = False
IMPLEMENTED_IN = "checks/target/contract.py"
