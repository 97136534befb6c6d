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

from __future__ import annotations

from checks.findings import FindingMaker
from checks.model import Finding, Severity, Span

CODE = "REG001"
NAME = "unparsable-file"
SEVERITY = Severity.FAILURE
SUMMARY = "The file does not parse (syntax error, not UTF-8, too deep): the runner cannot read it."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


# Applied while reading (checks/scanning/registrations.py scan_file calls these).


def undecodable(path: str, error: str) -> Finding:
    """The file's bytes are not Python source (checks/source.decode_source says why)."""
    return make_finding(CODE, path, Span.at_line(1), f"the file cannot be read as Python source: {error}")


def unparsable(path: str, text: str, exc: Exception) -> Finding:
    """`ast.parse(text)` raised `exc` (SyntaxError, ValueError, RecursionError or MemoryError)."""
    if isinstance(exc, SyntaxError):
        line = exc.lineno or 1
        col = exc.offset or 1
        nul = text.find("\0")
        if exc.lineno is None and nul >= 0:  # Python 3.11 gives no position for a null byte
            line = text.count("\n", 0, nul) + 1
            col = nul - (text.rfind("\n", 0, nul) + 1) + 1
        return make_finding(CODE, path, Span(line, max(col, 1), line, max(col, 1) + 1),
                            f"the file does not parse: {exc.msg} (line {line}); the runner cannot read its registrations")
    why = "it nests too deeply" if isinstance(exc, (RecursionError, MemoryError)) else str(exc)
    return make_finding(CODE, path, Span.at_line(1), f"the file does not parse: {why}")
