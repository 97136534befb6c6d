"""What `check --fix`, `--diff` and `--new-only` do with a report (no click, no output here).

A Fix replaces whole lines of one file (checks/model.py). Fixes are applied to the working tree
only where those lines still read as the engine saw them, bottom-up, one per statement: two fixes
of one call overlap, so the second waits for the next round (`--fix` runs rounds until nothing
changes).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from checks.model import Change, Finding, Report

# Findings that describe the diff itself: new by construction.
_ABOUT_THE_DIFF = {"REG050"}


@dataclass
class Edits:
    files: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (old text, new text)
    fixed: list[Finding] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.fixed)

    def __bool__(self) -> bool:
        return bool(self.files)

    def diff(self) -> str:
        out = []
        for path, (old, new) in sorted(self.files.items()):
            out.extend(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                            fromfile=f"a/{path}", tofile=f"b/{path}"))
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out)


def _ending(line: str) -> str:
    for end in ("\r\n", "\n", "\r"):
        if line.endswith(end):
            return end
    return ""


def plan(root: Path, tree, findings: list[Finding]) -> tuple[Edits, list[str]]:
    """The edits the fixes make to the files under `root`, and why any fix was left out."""
    edits = Edits()
    skipped: list[str] = []
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        if f.fix is not None:
            by_file.setdefault(f.fix.file, []).append(f)
    for path, group in sorted(by_file.items()):
        disk_path = root / path
        try:
            old = disk_path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped.append(f"{path}: not fixed ({getattr(exc, 'strerror', None) or exc})")
            continue
        seen = tree.read(path)
        seen_lines = seen.decode("utf-8", "replace").splitlines(keepends=True) if seen is not None else []
        lines = old.splitlines(keepends=True)
        taken: list[tuple[int, int]] = []
        applied: set[tuple[int, int, str]] = set()
        # bottom-up, so earlier line numbers stay valid while later lines change
        for f in sorted(group, key=lambda f: (f.fix.start_line, f.fix.end_line), reverse=True):
            fix = f.fix
            key = (fix.start_line, fix.end_line, fix.text)
            if key in applied:  # two findings, one identical fix
                edits.fixed.append(f)
                continue
            start, end = fix.start_line - 1, fix.end_line
            if any(start < e and s < end for s, e in taken):
                skipped.append(f"{path}:{fix.start_line}: {f.rule} fix overlaps another fix of the same statement (left for the next round)")
                continue
            if end > len(lines) or [l.rstrip("\r\n") for l in lines[start:end]] != [l.rstrip("\r\n") for l in seen_lines[start:end]]:
                skipped.append(f"{path}:{fix.start_line}: {f.rule} not fixed: the file differs from the checked revision there")
                continue
            ending = _ending(lines[end - 1]) or ("\n" if end < len(lines) else "")
            sep = "\r\n" if ending == "\r\n" else "\n"
            parts = fix.text.split("\n")
            new_lines = [p + sep for p in parts[:-1]] + [parts[-1] + ending]
            lines[start:end] = new_lines
            taken.append((start, end))
            applied.add(key)
            edits.fixed.append(f)
        new = "".join(lines)
        if new != old:
            edits.files[path] = (old, new)
    return edits, skipped


def apply(root: Path, edits: Edits) -> list[str]:
    """Write the edits; the paths written."""
    written = []
    for path, (_old, new) in sorted(edits.files.items()):
        (root / path).write_bytes(new.encode("utf-8"))
        written.append(path)
    return written


def new_findings(report: Report, added_files: set[str], base_report=None, changed: dict | None = None) -> list[Finding]:
    """Findings on registrations the diff added or changed, in files it added, or about the diff;
    and, with `base_report` (a callable: the base revision checked whole, run only when some
    finding is left to decide), every other finding the base did not have (checks/introduced.py):
    what the diff broke elsewhere, in files and registrations it never touched."""
    spans: dict[str, list[tuple[int, int]]] = {}
    renamed: dict[str, list[tuple[int, int]]] = {}
    for reg in report.registrations:
        if reg.change is Change.CHANGED and _only_the_suite_renamed(reg):
            # a suite rename (sglang b7d62bd72: stage-a/b/c -> base-a/b/c in 473 files) carries the
            # registration's old findings along: the same finding under the new name is not new
            renamed.setdefault(reg.file, []).append(reg.statement_lines)
        elif reg.change in (Change.ADDED, Change.CHANGED):
            spans.setdefault(reg.file, []).append(reg.statement_lines)
    kept, undecided = set(), []
    for f in report.findings:
        if f.rule in _ABOUT_THE_DIFF or f.file in added_files:
            kept.add(id(f))
        elif any(first <= f.span.line <= last for first, last in spans.get(f.file, ())):
            kept.add(id(f))
        elif any(first <= f.span.line <= last for first, last in renamed.get(f.file, ())) and base_report is None:
            kept.add(id(f))  # no base to compare with: what the diff touched is reported
        else:
            undecided.append(f)
    if undecided and base_report is not None:
        from checks.introduced import introduced

        kept.update(id(f) for f in introduced(report, base_report(), changed or {}, undecided))
    return [f for f in report.findings if id(f) in kept]


def _only_the_suite_renamed(reg) -> bool:
    """The registration changed only its suite (or the parts sglang composes it from)."""
    base = reg.base
    if base is None or base.suite == reg.suite:
        return False
    names = set(reg.arguments) | set(base.arguments)
    return all(reg.value(n) == base.value(n) for n in names - {"suite", "stage", "runner_config"}) \
        and all((reg.arguments.get(n) is None) == (base.arguments.get(n) is None) for n in names)
