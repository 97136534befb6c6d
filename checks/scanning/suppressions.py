"""Inline suppressions: `# ci-registrar: ignore[REG010]` (optionally with a reason) on a registration.

The comment may sit on any line of the registration's statement (or on a finding's own line
elsewhere in a test file) and names rule codes or rule names, comma-separated, as mypy's
`# type: ignore[code]` and pyright's `# pyright: ignore[rule]` do. A suppressed finding leaves the
report's findings for `report.suppressed`, with the comment's reason: renderers show it as
suppressed (JSON `suppressed`, SARIF `suppressions`), and it counts toward no exit status. A code
in a comment that suppresses nothing is a REG005 notice (its messages: checks/ruleset/reading/reg005_unused_suppression.py). Findings that say the result cannot be
trusted (REG900-REG902) are never suppressed.

Only whole codes and names are taken: a code prefix (`ignore[REG01]`, which `--select` accepts)
would silence rules nobody named, so it gets a notice explaining the syntax, and so does a bare
`# ci-registrar: ignore` (a blanket ignore would hide the next, unrelated finding too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checks.model import Finding, Report, Span
from checks.ruleset import UNSELECTABLE, rule_names
from checks.ruleset.reading import reg005_unused_suppression as reg005

MARK = "ci-registrar:"
# `ignore[...]` with its reason; a bare or malformed `ignore` too (its body None), to explain it.
_COMMENT = re.compile(r"#\s*ci-registrar:\s*ignore(?:\[([^\]]*)\])?(.*?)\s*$")


@dataclass(frozen=True)
class Suppression:
    file: str
    line: int
    column: int
    codes: tuple[str, ...]
    written: tuple[str, ...]  # as written, for the REG005 message
    reason: str

    def as_json(self) -> dict:
        return {"kind": "inSource", "line": self.line, "codes": list(self.codes), "justification": self.reason}


def marks(text: str) -> list[list]:
    """The suppression comments of a file's text, as scan facts: [line, column, codes as written,
    reason] (checks/scanning/registrations.py keeps them with the file's scan, so a cached scan has them)."""
    out: list[list] = []
    if MARK not in text:
        return out
    for number, line in enumerate(text.split("\n"), start=1):
        if MARK in line and (match := _COMMENT.search(line)) is not None:
            if match.group(1) is None and match.group(2)[:1].isalnum():
                continue  # `ignore` was the start of another word (`ignored`, `ignores`)
            out.append([number, match.start() + 1, match.group(1), match.group(2).strip()])
    return out


def _rule_code(selector: str) -> str | None:
    """The code a whole code or rule name stands for (case-insensitive), else None."""
    upper = selector.upper()
    if upper in rule_names():
        return upper
    return next((code for code, name in rule_names().items() if name.lower() == selector.lower()), None)


def _suppressions(path: str, found: list[list]) -> tuple[list[Suppression], list[Finding]]:
    out, problems = [], []
    for number, column, body, reason in found:
        at = Span(number, column, number, column + 1)
        if body is None:
            problems.append(reg005.bare(path, at))
            continue
        written = tuple(part.strip() for part in str(body).split(",") if part.strip())
        if not written:
            problems.append(reg005.names_nothing(path, at))
        codes: list[str] = []
        for selector in written:
            code = _rule_code(selector)
            if code is not None:
                codes.append(code)
            else:
                problems.append(reg005.not_a_rule(path, at, selector, rule_names()))
        out.append(Suppression(path, int(number), int(column), tuple(dict.fromkeys(codes)), written, str(reason)))
    return out, problems


def apply_suppressions(report: Report, marks_by_file: dict[str, list[list]]) -> None:
    """Move suppressed findings to `report.suppressed`; add a REG005 notice per unused code.

    `marks_by_file`: each checked file's suppression comments (`marks`), from its scan.
    """
    statements: dict[str, list[tuple[int, int]]] = {}
    for reg in report.registrations:
        if not reg.implicit:
            statements.setdefault(reg.file, []).append(reg.statement_lines)
    kept, notices = [], []
    by_file: dict[str, list[Suppression]] = {}
    for path, found in marks_by_file.items():
        if found:
            by_file[path], problems = _suppressions(path, found)
            notices += problems
    used: set[tuple[str, int, str]] = set()
    for f in report.findings:
        hit = None if f.rule in UNSELECTABLE else _covering(f, by_file.get(f.file, ()), statements.get(f.file, ()))
        if hit is None:
            kept.append(f)
        else:
            used.add((hit.file, hit.line, f.rule))
            report.suppressed.append((f, hit))
    for suppressions in by_file.values():
        for s in suppressions:
            for code in s.codes:
                if (s.file, s.line, code) not in used:
                    notices.append(reg005.unused(s.file, s.line, s.column, code))
    report.findings = sorted(kept + notices, key=Finding.sort_key)


def _covering(f: Finding, suppressions, statements) -> Suppression | None:
    lines = {f.span.line}
    for first, last in statements:
        if first <= f.span.line <= last:
            lines = set(range(first, last + 1))
            break
    return next((s for s in suppressions if s.line in lines and f.rule in s.codes), None)
