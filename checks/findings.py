"""A rule's findings, made in the rule's own module without importing the registry back.

A rule module (checks/ruleset/regNNN_*.py) binds `make_finding = FindingMaker(CODE, NAME, SEVERITY)`
beside its declaration, and its checks call `make_finding(CODE, file, span, message)`: the
finding's title and default severity are the module's own, so the rule imports only downward
(here, checks/model.py) and the registry (checks/rules.py) is what imports the rules. A maker
makes its own rule's findings and no other's: one file per rule, at run time too.
"""

from __future__ import annotations

from dataclasses import dataclass

from checks.model import Finding, Fix, Severity, Span


@dataclass(frozen=True)
class FindingMaker:
    """Makes the findings of one rule: its code, name and default severity."""

    code: str
    name: str
    severity: Severity

    def __call__(
        self,
        code: str,
        file: str,
        span: Span,
        message: str,
        *,
        severity: Severity | None = None,
        suggestion: str | None = None,
        fix: Fix | None = None,
    ) -> Finding:
        if code != self.code:
            raise ValueError(f"{self.code}'s maker makes {self.code} findings, not {code}")
        return Finding(
            rule=code,
            severity=severity or self.severity,
            file=file,
            span=span,
            message=message,
            suggestion=suggestion,
            fix=fix,
            title=f"{code} {self.name}",
        )
