"""REG901 unreadable-contract: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The rules need the suite inventory, the register signatures and the labels; what cannot be read
statically (the check never executes the target's code) is reported, and only the rules that
depend on it are skipped, so no registration fails because of a reader's limit.

## Example
```python
# tests/ci/run_suite.py
CI_SUITES = build_suites()
```
Reports:

> `CI_SUITES` is not a dict literal keyed by HWBackend: the inventory cannot be read statically

The runner's discovery is the exception: it says which files run at all, so a discovery that
cannot be read, or that reads no file while `test_*.py` files exist under `tests/`, `test/` or
the configured roots, is a failure naming the globs (never a check that passes on nothing).

## How to fix
Keep the suite inventory, the register functions' signatures and the labels as literals the
check can read without running code, or point `paths:` in `.github/ci-registrar.yml` at them.
"""

from __future__ import annotations

from checks.findings import FindingMaker
from checks.model import Finding, Severity, Span, code

CODE = "REG901"
NAME = "unreadable-contract"
SEVERITY = Severity.WARNING
SUMMARY = "The suite inventory, register signatures or labels cannot be read statically; rules that depend on the unreadable part are skipped (a failure when it is the runner's discovery, or when that discovery reads no file while test files exist)."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


# Applied while reading: the contract's reader (checks/target/contract.py) and the workflows'
# (checks/workflows/runs.py) call these where what they read cannot be read statically.


def _at(path: str, span: Span | int, message: str, **kw) -> Finding:
    return make_finding(CODE, path, Span.at_line(span) if isinstance(span, int) else span, message, **kw)


# -- a contract module (the register module, the suite inventory, the labels) ---------------------
def undecodable(path: str, what: str, error: str) -> Finding:
    return _at(path, 1, f"cannot read {what}: {error}")


def unparsable(path: str, what: str, exc: Exception) -> Finding:
    """`ast.parse` raised `exc` on the module that holds `what`."""
    line = getattr(exc, "lineno", None) or 1
    return _at(path, line, f"cannot read {what}: {exc.__class__.__name__}: {getattr(exc, 'msg', exc)}")


def inventory_missing(path: str) -> Finding:
    return _at(path, 1, f"the suite inventory {path} does not exist: suite names are not checked")


def inventory_unbound(path: str, variable: str) -> Finding:
    return _at(path, 1, f"{path} binds no {code(variable)} at module level (paths.suites_variables)")


def inventory_not_a_dict(path: str, span: Span, variable: str) -> Finding:
    return _at(path, span, f"{code(variable)} is not a dict literal keyed by HWBackend: the inventory cannot be read statically")


def inventory_unpacked(path: str, span: Span, entries, variable: str) -> Finding:
    """`{**entries, ...}` where `entries` (an ast node) is no dict literal bound at module level."""
    import ast

    return _at(path, span, f"{code('**' + ast.unparse(entries)[:60])} in {code(variable)} is not a dict literal bound at module level: the backends it may set are not read")


def inventory_key(path: str, span: Span, variable: str) -> Finding:
    return _at(path, span, f"a key of {code(variable)} is not an `HWBackend.X` member (or a backend name): its suites are not read")


def inventory_backend_unread(path: str, span: Span, backend: str, variable: str, why: str) -> Finding:
    return _at(path, span, f"the {backend} suites of {code(variable)} cannot be read statically: {why}; unknown-suite checks for {backend} are skipped")


def labels_unbound(path: str, variable: str) -> Finding:
    return _at(path, 1, f"{path} binds no {code(variable)}: labels are not checked")


def labels_unread(path: str, span: Span, variable: str, why: str) -> Finding:
    return _at(path, span, f"{code(variable)} cannot be read statically: {why}; labels are not checked")


# -- the runner's discovery (a failure: which files run at all is what every other rule rests on) --
def discovery_unread(path: str, line: int, problem: str, roots, pattern: str) -> Finding:
    """The runner discovers its own way and the reader cannot follow it: the default roots are a guess."""
    return _at(path, line,
               f"{problem}; the default discovery ({', '.join(roots)}: {pattern}) is used and "
               "REG004 is a warning (set `paths.test_roots`/`paths.discovery` to state it)", severity=Severity.FAILURE)


# Where test files usually live, whatever a runner's discovery says: `tests/`, `test/` and the
# configured roots (radixark/miles' and sgl-project/sglang's layouts, every era).
USUAL_ROOTS = ("tests/", "test/")


def discovery_reads_nothing(contract, config, paths: list[str]) -> Finding | None:
    """A discovery read from the runner that finds no file while test files exist under the usual
    roots is a reading the engine got wrong (or a runner that runs nothing): a failure that names
    the globs, never a check that passes on zero registrations."""
    import fnmatch

    from checks.wording import plural

    matchers = [s.matcher() for s in contract.discovery]
    if any(any(m(path) for m in matchers) for path in paths):
        return None
    roots = tuple(r.rstrip("/") + "/" for r in config.paths.test_roots) + USUAL_ROOTS
    tests = [path for path in paths if path.startswith(roots) and path.endswith(".py")
             and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], "test_*.py")]
    if not tests:
        return None
    where = contract.facts.discovery_where or config.paths.suites_module
    line = int(where.rsplit(":", 1)[1]) if ":" in where else 1
    globs = ", ".join(code(s.text or s.pattern) for s in contract.discovery[:6]) or "no glob"
    return _at(
        config.paths.suites_module, line,
        f"the runner's discovery ({where}: {globs}) reads no file of this tree, while {plural(len(tests), 'test file')} exist "
        f"under the usual roots (e.g. {code(tests[0])}): no registration is checked; state the discovery with "
        "`paths.discovery`/`paths.test_roots` if the runner reads them from elsewhere", severity=Severity.FAILURE)


# -- a workflow of this repository ------------------------------------------------------------------
def workflow_not_utf8(path: str) -> Finding:
    return _at(path, 1, f"workflow {path} is not UTF-8: its suites are not counted as consumers")


def workflow_not_yaml(path: str, line: int) -> Finding:
    return _at(path, line, f"workflow {path} is not valid YAML: its suites are not counted as consumers")
