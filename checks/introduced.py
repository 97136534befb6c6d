"""What a branch introduces: the findings of its head that its base did not have.

`--new-only` reports what a diff brings and nothing older. Findings on the registrations the diff
added or changed are new by construction (bot/commands/fixing.new_findings), but a diff also
breaks what it never touched: a file whose registrations it removed (REG004 on that file), a
workflow change that leaves suites with no job (REG013 on untouched files), an inventory change
that renames or empties a suite a job still runs (REG010, REG014, REG015). Those are new exactly
when the base revision, checked whole, did not report them.

A finding is matched with the base's by what it is about, never by its line (lines shift with
every edit above): its rule, severity and file (renames followed back to the base path) and,
on a registration, that registration (its function and ordinal among that function's calls in
the file) and the argument; on no registration, its message. A finding that became more severe
is new. Matching counts: two findings of one identity at head and one at base leave one new.
"""

from __future__ import annotations

from collections import Counter

from checks.model import Change, Finding, Report


def identities(report: Report, path_at_base=lambda path: path) -> list[tuple]:
    """One identity per finding of `report`, in order; `path_at_base` maps a head path to the
    path the same file has at the base (the identity of a base finding uses its own paths)."""
    calls: dict[str, list[tuple[tuple[int, int], str, dict]]] = {}
    for reg in sorted(report.registrations, key=lambda r: (r.file, r.span.line, r.span.column)):
        if reg.implicit or reg.change is Change.REMOVED:
            continue
        same = sum(1 for c in calls.get(reg.file, []) if c[1].startswith(reg.function + "#"))
        spans = {a.span: name for name, a in reg.arguments.items()}
        calls.setdefault(reg.file, []).append((reg.statement_lines, f"{reg.function}#{same}", spans))
    out = []
    for f in report.findings:
        about = f.message
        for (first, last), ident, spans in calls.get(f.file, []):
            if first <= f.span.line <= last:
                about = f"{ident}:{spans.get(f.span, '')}"
                break
        out.append((f.rule, f.severity.value, path_at_base(f.file), about))
    return out


def introduced(head: Report, base: Report, changed: dict[str, str | None], findings: list[Finding] | None = None) -> list[Finding]:
    """The findings of `head` (or the given subset of them) that `base` does not have.

    `changed`: head path -> base path of the diff (None: added); a renamed file's findings are
    compared with the base's under its old path.
    """
    def path_at_base(path: str) -> str:
        return changed.get(path) or path

    left = Counter(identities(base))
    wanted = None if findings is None else {id(f) for f in findings}
    out = []
    for f, ident in zip(head.findings, identities(head, path_at_base)):
        if left[ident] > 0:
            left[ident] -= 1
            continue
        if wanted is None or id(f) in wanted:
            out.append(f)
    return out
