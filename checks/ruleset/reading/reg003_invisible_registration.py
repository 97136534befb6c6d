"""REG003 invisible-registration: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
Nothing fails: the runner only collects top-level `register_<backend>_ci(...)` expression
statements that call the function by its bare name. Any other spelling is silently skipped, so
the author believes the test is registered while it never runs.

## Example
```python
from tests.ci.ci_register import register_rocm_ci as reg

reg(est_time=600, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])
```
Reports:

> `register_rocm_ci` is imported as `reg`: the runner only sees calls to the bare name ...

## How to fix
Call the register function by its own name, as a top-level statement of the module: `from
tests.ci.ci_register import register_rocm_ci` then `register_rocm_ci(...)`, not inside `if`, a
function, an expression, or through an alias or attribute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.findings import FindingMaker
from checks.model import Finding, Severity, code

if TYPE_CHECKING:
    import ast

CODE = "REG003"
NAME = "invisible-registration"
SEVERITY = Severity.WARNING
SUMMARY = "A registration the runner silently ignores: aliased import, attribute call, call not a top-level expression statement, call inside `if`."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


# Applied while reading (checks/scanning/registrations.py _FileReader.run calls these).


def aliased_import(path: str, lines: list[str], alias: ast.alias) -> Finding | None:
    """`from ... import register_x_ci as other`: calls through the alias are never collected."""
    if not alias.asname or alias.asname == alias.name:
        return None
    from checks.source import node_span

    return make_finding(
        CODE, path, node_span(alias, lines),
        f"{code(alias.name)} is imported as {code(alias.asname)}: the runner only sees calls to the bare name {code(alias.name)}, so calls through the alias are never registered",
    )


def invisible_calls(path: str, lines: list[str], tree: ast.Module, functions, aliases: dict[str, str]) -> list[Finding]:
    """Register calls the runner would not collect, with why, in the order of the module's walk
    (iterative: deep code must not exhaust the recursion limit). `functions`: the register
    functions' names; `aliases`: alias -> the function it was imported as."""
    import ast

    from checks.source import node_span

    found: list[Finding] = []
    names = set(functions) | set(aliases)
    stack: list[tuple[ast.AST, str | None, bool]] = [(tree, None, True)]
    # Without an alias, every call found names a register function in its own text, so only the
    # top-level statements whose lines mention one are walked; the rest hold nothing to find (a
    # file reaches here for one mention in a comment or docstring, and its other statements were
    # walked for nothing). The order of the findings is the whole walk's.
    walked = None if aliases else _statements_mentioning(tree, lines, functions)
    while stack:
        node, where, is_module = stack.pop()
        for child in (walked if is_module and walked is not None else ast.iter_child_nodes(node)):
            if isinstance(child, ast.Call):
                func = child.func
                target = why = None
                if isinstance(func, ast.Name) and func.id in aliases:
                    target, why = aliases[func.id], f"it calls the alias {code(func.id)}, not the bare name {code(aliases[func.id])}"
                elif isinstance(func, ast.Name) and func.id in names and where is not None:
                    target, why = func.id, where
                elif isinstance(func, ast.Attribute) and func.attr in functions:
                    target, why = func.attr, f"it is an attribute call (`….{func.attr}(...)`), and the runner only sees the bare name"
                if target is not None:
                    found.append(make_finding(CODE, path, node_span(child, lines),
                                              f"this `{target}(...)` call is invisible to the runner: {why}; the test is never registered by it"))
            if (
                is_module
                and isinstance(child, ast.Expr)
                and isinstance(child.value, ast.Call)
                and isinstance(child.value.func, ast.Name)
                and child.value.func.id in functions
            ):
                continue  # collected already
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = "it is inside a function, not at module top level"
            elif isinstance(child, ast.ClassDef):
                inner = "it is inside a class body, not at module top level"
            elif where is None and isinstance(child, ast.If):
                inner = "it is inside an `if` block"
            elif where is None and isinstance(child, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)):
                inner = f"it is inside a {code(type(child).__name__.lower())} block, not at module top level"
            elif where is None and is_module and isinstance(child, ast.stmt):
                inner = "it is not a top-level expression statement (the runner reads only `register_...(...)` statements)"
            stack.append((child, inner, False))
    return found


def _statements_mentioning(tree: ast.Module, lines: list[str], functions) -> list[ast.stmt]:
    """The module's top-level statements whose lines (decorators included) hold the text of a
    register function's name."""
    mentioned = [i + 1 for i, line in enumerate(lines) if any(name in line for name in functions)]
    if not mentioned:
        return []
    import bisect

    chosen = []
    for stmt in tree.body:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        at = bisect.bisect_left(mentioned, first)
        if at < len(mentioned) and mentioned[at] <= (stmt.end_lineno or stmt.lineno):
            chosen.append(stmt)
    return chosen
