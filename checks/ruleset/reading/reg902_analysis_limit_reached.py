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

from __future__ import annotations

from checks.findings import FindingMaker
from checks.model import Finding, Severity, Span

CODE = "REG902"
NAME = "analysis-limit-reached"
SEVERITY = Severity.WARNING
SUMMARY = "A file is larger or more expanded than an analysis limit allows (bytes, syntax nodes, YAML nodes after aliases, names, shards, matrix values, files): it is analysed no further, and the finding names the limit, its value, the file and the checks skipped."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


# Applied while reading: checks/limits.py (Budget.hit, for every cap a read hits) and
# checks/config/schema.py (a configuration over a cap) call this.


def limit_reached(limit: str, value: int, env_var: str, file: str, consequence: str, *, measured: str | None = None,
                  span: Span | None = None, severity: Severity | None = None, at: str | None = None) -> Finding:
    """The cap `limit` (its `value`, set by `env_var`) stopped the reading of `file`; `consequence`
    says what was not checked. `at`: the file the finding points to when `file` is not in the
    repository (an external consumer's workflow, named in the message)."""
    what = f" ({measured})" if measured else ""
    return make_finding(
        CODE,
        at or file,
        span or Span.at_line(1),
        f"analysis limit reached: {limit} = {value} ({env_var}) in {file}{what}; {consequence}",
        severity=severity,
    )
