"""REG005 unused-suppression: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A suppression comment (`# ci-registrar: ignore[REG010]`, after the mypy and pyright convention)
takes a finding of a registration out of the report. Once the registration is fixed, or the rule
no longer fires there, the comment hides nothing, but it still reads as if something were wrong
and would silently hide the next real finding of that rule on that call.

## Example
```python
register_rocm_ci(est_time=600, suite="nightly-stage-c-4-gpu-mi350")  # ci-registrar: ignore[REG010]
```
Reports (the suite exists, so there is no REG010 to suppress):

> unused suppression: no REG010 finding on this registration

## How to fix
Delete the comment, or the codes in it that no longer suppress anything. A suppression names
the codes (or rule names) it hides, in brackets, optionally followed by the reason:
`# ci-registrar: ignore[REG020] runs longer on the nightly machines`.
"""

from checks.model import Severity

CODE = "REG005"
NAME = "unused-suppression"
SEVERITY = Severity.NOTICE
SUMMARY = "A `# ci-registrar: ignore[...]` comment that suppresses no finding."
FIXABLE = False
IMPLEMENTED_IN = "checks/scanning/suppressions.py"
