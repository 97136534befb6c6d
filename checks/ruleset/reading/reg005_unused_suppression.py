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

from __future__ import annotations

from checks.findings import FindingMaker
from checks.model import Finding, Severity, Span

CODE = "REG005"
NAME = "unused-suppression"
SEVERITY = Severity.NOTICE
SUMMARY = "A `# ci-registrar: ignore[...]` comment that suppresses no finding."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)

# How a suppression is written, as the messages explain it.
SYNTAX = ("`# ci-registrar: ignore[REG010]` or `ignore[unknown-suite]`: whole rule codes or names, "
          "comma-separated, then the reason")


# Applied while suppressions are read and applied (checks/scanning/suppressions.py calls these).


def bare(path: str, at: Span) -> Finding:
    """`# ci-registrar: ignore` without brackets: a blanket ignore would hide the next finding too."""
    return make_finding(CODE, path, at, "unused suppression: a bare `ci-registrar: ignore` "
                        f"suppresses nothing; name what it ignores: {SYNTAX}")


def names_nothing(path: str, at: Span) -> Finding:
    """`ignore[]`."""
    return make_finding(CODE, path, at, f"unused suppression: `ignore[]` names no rule; write {SYNTAX}")


def not_a_rule(path: str, at: Span, selector: str, codes) -> Finding:
    """A selector that is no whole rule code or name (`codes`: every rule's code): a code prefix,
    which `--select` takes but a suppression does not (it would silence rules nobody named), or
    nothing at all."""
    prefix = [c for c in codes if c.startswith(selector.upper())] if selector.upper().startswith("REG") else []
    if prefix:
        return make_finding(CODE, path, at, f"unused suppression: `{selector}` is a code prefix "
                            f"({', '.join(prefix)}); a suppression takes {SYNTAX}")
    return make_finding(CODE, path, at, f"unused suppression: `{selector}` is no rule code "
                        f"or name; write {SYNTAX}")


def unused(path: str, line: int, column: int, rule: str) -> Finding:
    """A code of a suppression comment that took no finding of that rule out of the report."""
    return make_finding(CODE, path, Span(line, column, line, column + 1), f"unused suppression: no {rule} finding on this registration")
