"""REG002 rejected-registration: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The runner raises when it collects this call, so the whole collection (every suite, not just
this file) fails, or the registration is dropped. The checks follow the register function's own
signature as the repository declares it (positional order, keyword-only parameters, required
ones) and the values it validates.

## Example
```python
register_rocm_ci(est_time=-5, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])
```
Reports:

> est_time must be a positive number of seconds, not -5

## How to fix
Write the call the way the register function's signature accepts it: literal values
(`est_time=300`, `suite="stage-c-4-gpu-mi350"`, `labels=["long"]`), the two positionals at most,
each keyword once, no `*args`/`**kwargs`, and the required keywords present.
"""

from checks.model import Severity

CODE = "REG002"
NAME = "rejected-registration"
SEVERITY = Severity.FAILURE
SUMMARY = (
    "A registration the target's own runner rejects: non-literal or starred arguments, too many"
    " positionals, unknown, duplicate or missing keywords, bad est_time, suite, labels, nightly"
    " or disabled."
)
FIXABLE = False
IMPLEMENTED_IN = "checks/scanning/registrations.py (_FileReader.read_registration, validate_values)"
