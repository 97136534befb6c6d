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

from checks.model import Severity

CODE = "REG004"
NAME = "unregistered-test-file"
SEVERITY = Severity.FAILURE
SUMMARY = "A test file in a discovery root with no registration (outside the implicit-CPU roots): the runner never runs it."
FIXABLE = False
IMPLEMENTED_IN = "checks/engine.py (check_tree)"
