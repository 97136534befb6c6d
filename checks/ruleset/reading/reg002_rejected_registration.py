"""REG002 rejected-registration: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The runner raises when it collects this call, so the whole collection (every suite, not just
this file) fails, or the registration is dropped. The checks follow the register function's own
signature as the repository declares it (positional order, keyword-only parameters, required
ones) and the values it validates.

## Example
```python
register_rocm_ci(est_time=-5, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])
```
Reports:

> est_time must be a positive number of seconds, not -5

## How to fix
Write the call the way the register function's signature accepts it: literal values
(`est_time=300`, `suite="stage-c-4-gpu-mi350"`, `labels=["long"]`), the two positionals at most,
each keyword once, no `*args`/`**kwargs`, and the required keywords present.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.findings import FindingMaker
from checks.model import Argument, Finding, Registration, Severity, Span, code

if TYPE_CHECKING:
    import ast

CODE = "REG002"
NAME = "rejected-registration"
SEVERITY = Severity.FAILURE
SUMMARY = (
    "A registration the target's own runner rejects: non-literal or starred arguments, too many"
    " positionals, unknown, duplicate or missing keywords, bad est_time, suite, labels, nightly"
    " or disabled."
)
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


# Applied while reading: checks/scanning/registrations.py (_FileReader.read_registration) calls
# these on each register call as it reads it, in this order (check_function, bind, check_literal
# for each argument bound, check_composition, check_required, check_values); the engine calls
# check_main_block on each checked file's scan.


def _finding(path: str, lines: list[str], where, message: str, **kw) -> Finding:
    """A REG002 finding at an ast node (positions from `lines`) or a Span."""
    from checks.source import node_span

    span = where if isinstance(where, Span) else node_span(where, lines)
    return make_finding(CODE, path, span, message, **kw)


def _did_you_mean(word: str, candidates) -> str:
    if not candidates:
        return ""
    import difflib

    close = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.6)
    return f"; did you mean {code(close[0])}?" if close else ""


def check_function(path: str, lines: list[str], call: ast.Call, name: str, backend, signatures: dict,
                   implicit_cpu: bool) -> list[Finding]:
    """The register function itself: defined by the register module (`signatures`), and not a GPU
    one in a root whose files the runner registers as CPU."""
    out = []
    if name not in signatures:
        out.append(_finding(
            path, lines, call.func,
            f"{code(name)} is not defined in the repository's register module, so the runner cannot collect it (defined: {', '.join(sorted(signatures)) or 'none'})",
        ))
    if implicit_cpu and backend.is_gpu:
        out.append(_finding(path, lines, call.func, f"{code(name)} in an implicit-CPU root: the runner registers files here as CPU and rejects a GPU registration"))
    return out


def bind(path: str, lines: list[str], call: ast.Call, name: str, signature, bound: dict):
    """The runner's binding of a register call's arguments to `signature`, in its order: yields
    (parameter, value node) for each argument it binds, and a Finding for each it rejects.
    `bound`: the arguments bound so far (the reader adds each one it is given before the next)."""
    import ast

    for arg in call.args:
        if isinstance(arg, ast.Starred):
            yield _finding(path, lines, arg, f"starred arguments are not supported in {name}(): the runner raises")
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    for i, arg in enumerate(positional):
        if i >= len(signature.positional):
            allowed = " and ".join(signature.positional) or "nothing"
            yield _finding(path, lines, arg, f"too many positional arguments in {name}(): only {allowed} may be passed by position")
            continue
        yield signature.positional[i], arg
    for kw in call.keywords:
        if kw.arg is None:
            yield _finding(path, lines, kw, f"**kwargs are not supported in {name}(): the runner raises")
            continue
        if kw.arg not in signature.accepted and not signature.var_keyword:
            yield _finding(
                path, lines, kw,
                f"unknown keyword {code(kw.arg)} in {name}(): the signature accepts {', '.join(sorted(signature.accepted))}{_did_you_mean(kw.arg, signature.accepted)}",
            )
            continue
        if kw.arg in bound:
            yield _finding(path, lines, kw, f"duplicated argument {code(kw.arg)} in {name}(): the runner raises")
            continue
        yield kw.arg, kw.value


def check_literal(path: str, lines: list[str], argument: Argument, value: ast.expr) -> Finding | None:
    """The runner reads arguments without executing the file: each must be a literal."""
    if argument.is_literal:
        return None
    return _finding(path, lines, value, f"{code(argument.name)} must be a literal (number, string, list of strings, True/False/None): the runner reads it without executing the file")


def check_composition(path: str, lines: list[str], call: ast.Call, reg: Registration,
                      template: tuple[str, tuple[str, ...]]) -> Finding | None:
    """sglang since May 2026: `stage=` and `runner_config=` compose the suite
    (`CIRegistry.effective_suite`: `{stage}-test-{runner_config}`); exactly one of the pair or
    `suite` must be given, or the runner raises."""
    text, fields = template
    given = [f for f in fields if f in reg.arguments]
    has_suite = "suite" in reg.arguments
    if (len(given) == len(fields) and not has_suite) or (not given and has_suite):
        return None
    shape = ", ".join(f"{f}={'set' if f in reg.arguments else 'unset'}" for f in (*fields, "suite"))
    return _finding(path, lines, call, f"{reg.function}() must give either {' and '.join(code(f) for f in fields)} (the suite is {code(text)}) or {code('suite')}, not both or a part ({shape}): the runner raises")


def check_required(path: str, lines: list[str], call: ast.Call, reg: Registration, signature) -> Finding | None:
    """Every parameter the signature requires is given."""
    missing = sorted(p for p in signature.required if p not in reg.arguments)
    if not missing:
        return None
    why = "GPU registrations need a non-empty `labels` list; " if reg.backend.is_gpu and "labels" in missing else ""
    return _finding(path, lines, call, f"{reg.function}() is missing {', '.join(f'{code(m)}' for m in missing)}: {why}the runner raises")


def check_values(path: str, reg: Registration, contract) -> list[Finding]:
    """The values the runner validates: est_time, suite, labels (known ones), nightly, disabled, num_gpus."""
    import math

    out: list[Finding] = []
    args = reg.arguments
    a = args.get("est_time")
    if a is not None and a.is_literal:
        v = a.value
        number = isinstance(v, (int, float))  # the runners' own test: isinstance(est_time, (int, float))
        if not number or (isinstance(v, float) and not math.isfinite(v)):
            out.append(_finding(path, [], a.span, f"est_time must be a positive number of seconds, not {a.source}"))
        elif isinstance(v, bool) or not v > 0:
            if contract.est_time_positive:
                out.append(_finding(path, [], a.span, f"est_time must be a positive number of seconds, not {a.source}"))
            else:
                out.append(_finding(path, [], a.span, f"est_time must be a positive number of seconds, not {a.source}: the runner accepts it (it checks only for a number), but shard balancing and the timeout treat it as {float(v):g} s",
                                    severity=Severity.WARNING))
    a = args.get("suite")
    if a is not None and a.is_literal and not isinstance(a.value, str):
        out.append(_finding(path, [], a.span, f"suite must be a string, not {a.source}"))
    a = args.get("labels")
    labels: list[str] = []
    if a is not None and a.is_literal and a.value is not None:
        if not isinstance(a.value, list) or not all(isinstance(x, str) for x in a.value):
            out.append(_finding(path, [], a.span, f"labels must be a list of string literals, not {a.source}"))
        else:
            labels = a.value
            out += _unknown_labels(path, a, contract)
    sig = contract.signatures.get(reg.function)
    missing_reported = a is None and sig is not None and "labels" in sig.required
    wrong_type = a is not None and (not a.is_literal or (a.value is not None and not isinstance(a.value, list)))
    # Non-empty labels are the target's rule only where its signature makes `labels` required
    # (miles since August 2026: `*, labels: list[str]`); a `labels=None` default (miles in May)
    # means a GPU test without a label is accepted.
    labels_required = sig is None or "labels" in sig.required
    params = sig.accepted if sig else frozenset()
    if reg.backend.is_gpu and "labels" in params and labels_required and not labels \
            and not missing_reported and not wrong_type:
        where = a.span if a is not None else reg.span
        out.append(_finding(path, [], where, f"{reg.function}() needs a non-empty `labels` list: GPU registrations without a label are rejected"))
    a = args.get("nightly")
    if a is not None and a.is_literal and not isinstance(a.value, bool):
        out.append(_finding(path, [], a.span, f"nightly must be True or False, not {a.source}"))
    a = args.get("disabled")
    if a is not None and a.is_literal and a.value is not None and not isinstance(a.value, str):
        out.append(_finding(path, [], a.span, f"disabled must be a reason string or None, not {a.source}"))
    a = args.get("num_gpus")
    if a is not None and a.is_literal and (isinstance(a.value, bool) or not isinstance(a.value, int)):
        out.append(_finding(path, [], a.span, f"num_gpus must be an integer, not {a.source}"))
    return out


def _unknown_labels(path: str, arg: Argument, contract) -> list[Finding]:
    known = contract.labels
    if known is None:
        return []
    out = []
    for i, label in enumerate(arg.value):
        if label not in known:
            hint = contract.near.lookup("label", label, known, "labels", _did_you_mean)
            out.append(_finding(path, [], _element_span(arg, i), f"unknown label {code(label)}: not a key of KNOWN_LABELS{hint}"))
    return out


def _element_span(arg: Argument, index: int) -> Span:
    """The span of item `index` of a list argument, re-derived from the argument's source."""
    import ast

    try:
        node = ast.parse(arg.source, mode="eval").body
        elt = node.elts[index]
    except (SyntaxError, AttributeError, IndexError):
        return arg.span
    # offsets inside the argument's own source, shifted to the file
    line = arg.span.line + elt.lineno - 1
    col = (arg.span.column - 1 if elt.lineno == 1 else 0) + len(arg.source.split("\n")[elt.lineno - 1].encode()[: elt.col_offset].decode(errors="ignore"))
    end_line = arg.span.line + elt.end_lineno - 1
    end_col = (arg.span.column - 1 if elt.end_lineno == 1 else 0) + len(arg.source.split("\n")[elt.end_lineno - 1].encode()[: elt.end_col_offset].decode(errors="ignore"))
    return Span(line, col + 1, end_line, end_col + 1)


def check_main_block(path: str, scan, contract) -> Finding | None:
    """sglang's runner (collect_tests) rejects a file with an enabled registration and no
    top-level `if __name__ == "__main__":` block (`python3 file.py` would not run it)."""
    if not (contract.main_block_required and not scan.has_main and any(r.disabled is None for r in scan.registrations)):
        return None
    first = scan.registrations[0]
    return _finding(path, [], first.span, 'no top-level `if __name__ == "__main__":` block: the runner rejects a file with an enabled registration that `python3 file.py` would not run (its collect_tests checks for the block)')
