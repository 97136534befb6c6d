"""REG902 analysis-limit-reached: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
Every read and expansion is bounded so that no input can make a check run away; when a cap is
hit the file is analysed no further, and the finding says which limit, its value, and which
checks were skipped.

## Example
```python
# a 6 MB generated test file, over the file_bytes cap
```
Reports:

> analysis limit reached: file_bytes = ... (CI_REGISTRAR_LIMIT_FILE_BYTES) in tests/e2e/test_huge.py; its registrations are not read, ...

## How to fix
Shrink or simplify the file the finding names (a generated inventory, an alias-heavy workflow, a
huge test file), or, if the file is legitimate, raise that limit for the deployment with
`CI_REGISTRAR_LIMIT_<NAME>` (docs/limits.md). The checks the finding lists were skipped there.
"""

from checks.model import Severity

CODE = "REG902"
NAME = "analysis-limit-reached"
SEVERITY = Severity.WARNING
SUMMARY = "A file is larger or more expanded than an analysis limit allows (bytes, syntax nodes, YAML nodes after aliases, names, shards, matrix values, files): it is analysed no further, and the finding names the limit, its value, the file and the checks skipped."
FIXABLE = False
IMPLEMENTED_IN = "checks/limits.py (Budget)"
