"""REG001 unparsable-file: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The target's runner reads registrations with Python's own parser. A file it cannot parse yields
no registration at all, and its tests are never scheduled, whichever line holds the error (also
one after the last registration, or in a file with no registration).

## Example
```python
register_rocm_ci(est_time=600, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])


def test_step(:
    pass
```
Reports:

> the file does not parse: invalid syntax (line 4); the runner cannot read its registrations

## How to fix
Make the file parse: fix the syntax error at the reported line, or save it as UTF-8. Until it
parses, the runner cannot collect any registration from it.
"""

from checks.model import Severity

CODE = "REG001"
NAME = "unparsable-file"
SEVERITY = Severity.FAILURE
SUMMARY = "The file does not parse (syntax error, not UTF-8, too deep): the runner cannot read it."
FIXABLE = False
IMPLEMENTED_IN = "checks/scanning/registrations.py (scan_file)"
