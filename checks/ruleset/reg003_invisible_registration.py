"""REG003 invisible-registration: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
Nothing fails: the runner only collects top-level `register_<backend>_ci(...)` expression
statements that call the function by its bare name. Any other spelling is silently skipped, so
the author believes the test is registered while it never runs.

## Example
```python
from tests.ci.ci_register import register_rocm_ci as reg

reg(est_time=600, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])
```
Reports:

> `register_rocm_ci` is imported as `reg`: the runner only sees calls to the bare name ...

## How to fix
Call the register function by its own name, as a top-level statement of the module: `from
tests.ci.ci_register import register_rocm_ci` then `register_rocm_ci(...)`, not inside `if`, a
function, an expression, or through an alias or attribute.
"""

from checks.model import Severity

CODE = "REG003"
NAME = "invisible-registration"
SEVERITY = Severity.WARNING
SUMMARY = "A registration the runner silently ignores: aliased import, attribute call, call not a top-level expression statement, call inside `if`."
FIXABLE = False
IMPLEMENTED_IN = "checks/scanning/registrations.py (_FileReader.find_invisible)"
