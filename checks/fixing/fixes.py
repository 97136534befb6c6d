"""Fixes: change one argument of a registration, keep everything else, byte for byte.

Most fixes are a corrected literal on a one-line call that still fits the line: a plain text edit
of the argument's exact span, with no parser loaded. Anything else (a call over several lines, a
line that would pass the target's black line length) goes through a libcst codemod of the one
statement (checks/fixing/codemods.py), which wraps the call the way black wraps it.
"""

from __future__ import annotations

import ast

from checks.model import Finding, Fix, Registration

LINE_LENGTH = 120


def _text_edit(lines: list[str], reg: Registration, name: str, new_value_source: str) -> Fix | None:
    """The fix as a text edit of the argument's span, when that is certainly what libcst would write."""
    first, last = reg.statement_lines
    arg = reg.arguments.get(name)
    if arg is None or first != last or "\n" in new_value_source or not (arg.span.line == arg.span.end_line == first):
        return None
    try:
        ast.literal_eval(new_value_source)  # a literal, as every suggestion is; anything else is the parser's
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    line = lines[first - 1]
    start, end = arg.span.column - 1, arg.span.end_column - 1
    if line[start:end] != arg.source:
        return None  # the span and the text disagree: let the parser decide
    text = line[:start] + new_value_source + line[end:]
    if len(text) > LINE_LENGTH or text == line:
        return None
    return Fix(reg.file, first, last, text)


def replace_argument(lines: list[str], reg: Registration, name: str, new_value_source: str, position: int | None = None) -> Fix | None:
    """The whole-line Fix that sets argument `name` of `reg` to `new_value_source`."""
    fix = _text_edit(lines, reg, name, new_value_source)
    if fix is not None:
        return fix
    from checks.fixing.codemods import replace_argument_cst  # libcst: only for what a text edit cannot do

    return replace_argument_cst(lines, reg, name, new_value_source, position)


def attach_fixes(findings: list[Finding], registrations: list[Registration], lines_of) -> None:
    """Give each finding that suggests a new argument value its formatted whole-line fix.

    `lines_of(path)` returns the file's lines (the engine kept them from its scan).
    """
    by_position = {}
    for reg in registrations:
        for arg in reg.arguments.values():
            by_position[(reg.file, arg.span)] = (reg, arg)
    for finding in findings:
        if finding.suggestion is None or finding.fix is not None:
            continue
        hit = by_position.get((finding.file, finding.span))
        if hit is None:
            continue
        reg, arg = hit
        lines = lines_of(reg.file)
        if not lines:
            continue
        sig_position = ("est_time", "suite").index(arg.name) if arg.name in ("est_time", "suite") else None
        finding.fix = replace_argument(lines, reg, arg.name, finding.suggestion, position=sig_position)
