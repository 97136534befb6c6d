"""The libcst half of fixes: parse one statement, change one argument, wrap the way black wraps.

Imported only when a fix cannot be made as a plain text edit (checks/fixing/fixes.py says when): loading
libcst costs more than a whole-tree check of a typical repository.
"""

from __future__ import annotations

import libcst as cst

from checks.model import Fix, Registration

LINE_LENGTH = 120


class _ReplaceArgument(cst.CSTTransformer):
    """Set one argument of the registration call (and of no other call on the same lines)."""

    def __init__(self, function: str, name: str, position: int | None, new_value: cst.BaseExpression):
        self.function = function
        self.name = name
        self.position = position
        self.new_value = new_value
        self.done = False
        self.depth = 0

    def visit_Call(self, node: cst.Call) -> bool:
        self.depth += 1
        return self.depth == 1  # only the registration call's own arguments

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        self.depth -= 1
        if self.depth != 0 or self.done:
            return updated
        if not (isinstance(updated.func, cst.Name) and updated.func.value == self.function):
            return updated
        args = list(updated.args)
        positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
        for i, arg in enumerate(args):
            is_target = (arg.keyword is not None and arg.keyword.value == self.name) or (
                self.position is not None and arg.keyword is None and i in positional and positional.index(i) == self.position
            )
            if is_target:
                args[i] = arg.with_changes(value=self.new_value)
                self.done = True
        return updated.with_changes(args=args)


def _has_comment(node: cst.CSTNode) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_Comment(self, n):
            found.append(n)

    node.visit(V())
    return bool(found)


def _black_wrap(module: cst.Module, call: cst.Call, trailing: str) -> str:
    """Render `call` as black would at top level: one line, one indented line, or one arg per line."""
    func = module.code_for_node(call.func)
    parts = []
    for arg in call.args:
        value = module.code_for_node(arg.value)
        star = arg.star if isinstance(arg.star, str) else ""
        parts.append(f"{arg.keyword.value}={value}" if arg.keyword is not None else f"{star}{value}")
    magic_trailing_comma = bool(call.args) and isinstance(call.args[-1].comma, cst.Comma)
    one_line = f"{func}({', '.join(parts)}){trailing}"
    if not magic_trailing_comma and len(one_line) <= LINE_LENGTH and "\n" not in one_line:
        return one_line
    middle = "    " + ", ".join(parts)
    if not magic_trailing_comma and len(middle) <= LINE_LENGTH and "\n" not in middle:
        return f"{func}(\n{middle}\n){trailing}"
    body = "\n".join("    " + p.replace("\n", "\n    ") + "," for p in parts)
    return f"{func}(\n{body}\n){trailing}"


def replace_argument_cst(lines: list[str], reg: Registration, name: str, new_value_source: str, position: int | None = None) -> Fix | None:
    """The whole-line Fix that sets argument `name` of `reg` to `new_value_source`."""
    first, last = reg.statement_lines
    original = "\n".join(lines[first - 1 : last]) + "\n"
    try:
        module = cst.parse_module(original)
        new_value = cst.parse_expression(new_value_source)
    except cst.ParserSyntaxError:
        return None
    transformer = _ReplaceArgument(reg.function, name, position, new_value)
    updated = module.visit(transformer)
    if not transformer.done:
        return None
    text = updated.code.rstrip("\n")
    stmt = updated.body[0] if len(updated.body) == 1 else None
    if (
        max(len(line) for line in text.split("\n")) > LINE_LENGTH
        and isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1  # black would split `a(); b()` first: leave such lines as they are
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.Call)
        and not _has_comment(stmt.body[0].value)  # a comment inside the call has no safe new place
    ):
        comment = stmt.trailing_whitespace.comment
        trailing = f"  {comment.value}" if comment is not None else ""
        text = _black_wrap(updated, stmt.body[0].value, trailing)
    if text == original.rstrip("\n"):
        return None
    return Fix(reg.file, first, last, text)


