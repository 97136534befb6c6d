"""Mutation check: how much of the security-relevant and correction modules their tests pin.

Each mutant is one classic change to one module (a comparison, boolean or arithmetic operator
swapped, a constant changed, a statement deleted, a `not` dropped, a regular expression's
character class, quantifier or anchor tweaked); the module's test files run against it in a
forked copy of this process that imports the mutant in place of the module (nothing on disk
changes), and a mutant is *killed* when they fail (or run past their time), *survived* when they
pass. A survivor is either a test gap or an equivalent mutant (no input can tell it apart); the
report lists each one so that a person can say which.

Run on demand, not in CI (a few minutes per module on a quiet machine):

    .venv/bin/python bench/mutation.py [--modules grammar suites ...] [--sample N] [--jobs N] [--lines 12,40]

Prints killed/survived per module and each survivor (line, operator, the mutated line), then one
JSON line of the figures. The original module must pass its tests first (else nothing is measured).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    module: str  # path in the repository
    tests: tuple[str, ...]  # pytest arguments run against each mutant: test files, node ids, -k
    only: frozenset[str] = frozenset()  # top-level functions/assignments to mutate; empty: all


TARGETS = {
    "grammar": Target("bot/ondemand/grammar.py", ("tests/bot/ondemand/test_grammar.py",)),
    "suites": Target("checks/target/suites.py", ("tests/checks/target/test_suites.py",)),
    "durations": Target("checks/calibration/job_log.py", ("tests/checks/calibration/test_durations_parse.py", "-k", "timestamp or summary or lines"),
                        frozenset({"parse_timestamp", "_to_datetime", "_stamp_datetime", "_strip_prefix", "_TIMESTAMP",
                                   "_ANSI"})),
    "permissions": Target("bot/ondemand/permissions.py", ("tests/bot/ondemand/test_permissions.py",)),
    # REG010, the largest of the suite rules (once checks/rules_suites.py): the rule tests, the
    # fixture-per-rule examples, the targets' idioms (eras, backends, who runs what) and the
    # direct-run readings
    "unknown_suite": Target("checks/ruleset/reg010_unknown_suite.py", ("tests/checks/ruleset/", "tests/checks/test_engine.py",
                                                      "tests/checks/target/test_discovery_idioms.py",
                                                      "tests/checks/workflows/test_direct_runs.py")),
    "seen": Target("bot/ondemand/seen.py", ("tests/bot/ondemand/test_ondemand_seen.py",)),
    # issue 37: each module against its OWN fast test file(s), the ones a developer runs while editing it
    "cost": Target("checks/target/run_cost.py", ("tests/checks/target/test_ondemand_cost.py",)),  # was bot/ondemand/cost.py
    "ondemand_cost": Target("bot/ondemand/cost.py", ("tests/checks/target/test_ondemand_cost.py",)),  # what is left of it
    "dispatch_plan": Target("checks/target/dispatch_plan.py", ("tests/checks/target/test_dispatch_plan.py",)),
    "pr_summary": Target("checks/reporting/pr_summary.py", ("tests/checks/reporting/test_pr_summary_units.py",)),
    "reg020": Target("checks/ruleset/reg020_est_time_miscalibrated.py", ("tests/checks/ruleset/test_reg020_est_time_miscalibrated.py",)),
    "ondemand_states": Target("bot/store/ondemand_states.py", ("tests/bot/store/test_ondemand_transactions.py",)),
    # the calibration pull request's branch and pull request handling (issue 25 items 4 and 6), against
    # its own fast file (an in-memory GitHub; the simulator files run the same cycle over HTTP, minutes
    # a run); render_body and the schedule (run, sweep) are left to the calibration tests, not mutated
    "calibration_pr": Target("bot/worker/calibration_pr.py", ("tests/bot/worker/test_calibration_pr_units.py",),
                             frozenset({"_MARK", "_HELD", "_marker", "fingerprint", "refresh", "_by_app", "is_app_commit",
                                        "_foreign_commits", "_pushed_meanwhile", "_branch_head", "_who", "_mode", "held_comment", "_hold",
                                        "verdicts", "changed_verdicts", "after_ingest"})),
    # issue 25: the calibration policy and the verdict maths it rests on (pure, tested in-process)
    "calibration": Target("checks/calibration/policy.py", ("tests/checks/calibration/test_calibration_units.py", "tests/checks/calibration/test_calibration.py",
                                                    "-k", "not cli")),
    "durations-policy": Target("checks/calibration/estimates.py", ("tests/checks/calibration/test_calibration_units.py",),
                               frozenset({"MAX_ELAPSED_S", "elapsed_problem", "percentile", "duration_stats", "_round_up",
                                          "suggest_est_time", "runner_timeout", "calibrate", "estimate_from_other_backend",
                                          "_param", "_stats_of", "_s", "_since_date"})),
}

_COMPARE_SWAPS = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
                  ast.GtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_ARITH_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
                ast.Mod: ast.FloorDiv}
_REGEX_CALLS = {"compile", "match", "fullmatch", "search", "sub", "findall", "finditer", "split"}


@dataclass
class Mutant:
    line: int
    operator: str
    apply: object = field(repr=False)  # (tree) -> None, on a deep copy of the module's tree
    shown: str = ""  # the mutated line, filled in once applied


def _is_docstring(parent, node) -> bool:
    return (isinstance(parent, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and parent.body
            and isinstance(parent.body[0], ast.Expr) and parent.body[0].value is node)


def _regex_variants(pattern: str) -> list[tuple[str, str]]:
    """(operator, mutated pattern): a member dropped from a character class, a bound moved by one,
    `+` made `*`, an anchor dropped."""
    out = []
    for m in re.finditer(r"(?<!\\)\[(\^?)((?:\\.|[^\]\\])+)\]", pattern):
        members = re.findall(r"\\.|.-(?!\])(?:\\.|.)|.", m.group(2))
        if len(members) < 2:
            continue
        for i, member in enumerate(members):
            rest = "".join(members[:i] + members[i + 1:])
            out.append((f"regex class without {member!r}", pattern[:m.start(2)] + rest + pattern[m.end(2):]))
    for m in re.finditer(r"\{(\d+)(?:,(\d+))?\}", pattern):
        last = m.group(2) or m.group(1)
        start = m.start(2) if m.group(2) else m.start(1)
        out.append((f"regex bound {last}+1", pattern[:start] + str(int(last) + 1) + pattern[start + len(last):]))
    for m in re.finditer(r"(?<!\\)\+", pattern):
        out.append(("regex + to *", pattern[:m.start()] + "*" + pattern[m.end():]))
    if pattern.startswith("^"):
        out.append(("regex without ^", pattern[1:]))
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        out.append(("regex without $", pattern[:-1]))
    return out


def mutants(source: str, only: frozenset[str] = frozenset()) -> list[Mutant]:
    """Every mutant of `source`, in source order."""
    tree = ast.parse(source)
    found: list[Mutant] = []
    # index every node by its position in a walk, so a copy of the tree finds the same node
    def walk_with_parents(root):
        order = []
        stack = [(root, None)]
        while stack:
            node, parent = stack.pop()
            order.append((node, parent))
            for child in reversed(list(ast.iter_child_nodes(node))):
                stack.append((child, node))
        return order

    nodes = walk_with_parents(tree)
    allowed: set[int] = set()
    for top in tree.body:
        names = set()
        if isinstance(top, (ast.FunctionDef, ast.ClassDef)):
            names.add(top.name)
        elif isinstance(top, (ast.Assign, ast.AnnAssign)):
            targets = top.targets if isinstance(top, ast.Assign) else [top.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        else:
            continue
        if only and not names & only:
            continue
        allowed |= {id(n) for n in ast.walk(top)}
    # type annotations and decorators (`@dataclass(frozen=True)`) are not the module's behaviour
    annotations = {id(n) for node in ast.walk(tree)
                   for a in (getattr(node, "annotation", None), getattr(node, "returns", None), *getattr(node, "decorator_list", ()))
                   if a is not None for n in ast.walk(a)}

    def at(index: int, change):
        def apply(copy_tree):
            node, parent = walk_with_parents(copy_tree)[index]
            change(node, parent)
        return apply

    for index, (node, parent) in enumerate(nodes):
        if id(node) not in allowed or id(node) in annotations:
            continue
        line = getattr(node, "lineno", getattr(parent, "lineno", 0))
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                swap = _COMPARE_SWAPS.get(type(op))
                if swap:
                    found.append(Mutant(line, f"{type(op).__name__} -> {swap.__name__}",
                                        at(index, lambda n, p, k=k, s=swap: n.ops.__setitem__(k, s()))))
        elif isinstance(node, ast.BoolOp):
            other = ast.Or if isinstance(node.op, ast.And) else ast.And
            found.append(Mutant(line, f"{type(node.op).__name__} -> {other.__name__}",
                                at(index, lambda n, p, o=other: setattr(n, "op", o()))))
        elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH_SWAPS:
            swap = _ARITH_SWAPS[type(node.op)]
            found.append(Mutant(line, f"{type(node.op).__name__} -> {swap.__name__}",
                                at(index, lambda n, p, s=swap: setattr(n, "op", s()))))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            def drop_not(n, p):
                for name, value in ast.iter_fields(p):
                    if value is n:
                        setattr(p, name, n.operand)
                    elif isinstance(value, list):
                        for i, v in enumerate(value):
                            if v is n:
                                value[i] = n.operand
            found.append(Mutant(line, "not dropped", at(index, drop_not)))
        elif isinstance(node, ast.Constant) and not _is_docstring(parent, node):
            value = node.value
            if isinstance(value, bool):
                found.append(Mutant(line, f"{value} -> {not value}", at(index, lambda n, p: setattr(n, "value", not n.value))))
            elif isinstance(value, int):
                found.append(Mutant(line, f"{value} -> {value + 1}", at(index, lambda n, p: setattr(n, "value", n.value + 1))))
                if value > 1:
                    found.append(Mutant(line, f"{value} -> {value - 1}", at(index, lambda n, p: setattr(n, "value", n.value - 1))))
            elif isinstance(value, str) and isinstance(parent, ast.Call) and node in parent.args[:1] \
                    and isinstance(parent.func, ast.Attribute) and parent.func.attr in _REGEX_CALLS \
                    and isinstance(parent.func.value, ast.Name) and parent.func.value.id == "re":
                for operator, pattern in _regex_variants(value):
                    found.append(Mutant(line, operator, at(index, lambda n, p, v=pattern: setattr(n, "value", v))))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return, ast.Raise, ast.If, ast.For,
                             ast.Continue, ast.Break)) and not (isinstance(node, ast.Expr) and _is_docstring(parent, node.value)) \
                and isinstance(parent, (ast.FunctionDef, ast.If, ast.For, ast.While, ast.With, ast.Try)) :
            found.append(Mutant(line, f"{type(node).__name__} deleted", at(index, lambda n, p: _replace(p, n, ast.Pass()))))
    return found


def _replace(parent, node, new) -> None:
    for name, value in ast.iter_fields(parent):
        if isinstance(value, list) and node in value:
            value[value.index(node)] = new


def render(source: str, mutant: Mutant) -> str | None:
    tree = copy.deepcopy(ast.parse(source))
    mutant.apply(tree)
    ast.fix_missing_locations(tree)
    try:
        text = ast.unparse(tree)
        compile(text, "<mutant>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return None
    original = ast.unparse(ast.parse(source))
    if text == original:
        return None
    changed = [b for a, b in zip(original.splitlines(), text.splitlines()) if a != b]
    mutant.shown = (changed[0].strip() if changed else "")[:140]
    return text


# Third-party modules the tests import, loaded once in this process so that every forked run
# starts warm. No module of the project is imported here: each run imports the project afresh,
# the mutated module in place of the original.
_WARM = ("pytest", "hypothesis", "markdown_it", "msgspec", "yaml", "sqlalchemy", "requests", "flask", "gidgethub",
         "structlog", "cryptography", "jwt")


def _warm_up() -> None:
    import importlib

    for name in _WARM:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _run_in_fork(module_path: str, source: str | None, tests: tuple[str, ...]) -> int:
    """Fork; in the child, put `source` (None: the original) in place of `module_path` and run
    pytest on `tests`. Returns the child's pid; its exit status is pytest's."""
    pid = os.fork()
    if pid:
        return pid
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.chdir(ROOT)
        sys.path.insert(0, str(ROOT))
        if source is not None:
            import importlib
            import types

            name = module_path[:-3].replace("/", ".")
            package, _, leaf = name.rpartition(".")
            parent = importlib.import_module(package)
            module = types.ModuleType(name)
            module.__file__ = str(ROOT / module_path)
            module.__package__ = package
            sys.modules[name] = module  # before exec: dataclasses look their module up
            exec(compile(source, str(ROOT / module_path), "exec"), module.__dict__)
            setattr(parent, leaf, module)
        import pytest

        code = pytest.main(["-x", "-q", "-p", "no:cacheprovider", *tests])
    except BaseException:  # noqa: BLE001 - a mutant that cannot even be imported is killed
        code = 99
    os._exit(int(code))


def _wait(pid: int, timeout: float) -> bool | None:
    """True: the tests passed; False: they failed; None: past the time (the child is killed)."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) == 0
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)


def check_module(name: str, target: Target, sample: int | None, seed: int, jobs: int,
                 lines: frozenset[int] = frozenset()) -> dict:
    source = (ROOT / target.module).read_text()
    every = [m for m in mutants(source, target.only) if not lines or m.line in lines]
    rendered = [(m, text) for m in every if (text := render(source, m)) is not None]
    if sample is not None and sample < len(rendered):
        rendered = random.Random(seed).sample(rendered, sample)
        rendered.sort(key=lambda mt: mt[0].line)
    # the unparsed original (what mutants are made from) must pass, or no mutant means anything
    started = time.monotonic()
    if not _wait(_run_in_fork(target.module, ast.unparse(ast.parse(source)), target.tests), 600):
        raise SystemExit(f"{name}: the tests fail on the unmutated {target.module}; nothing to measure")
    baseline_s = time.monotonic() - started
    timeout = max(20.0, baseline_s * 4)
    results: list[tuple[Mutant, bool]] = []
    pending = list(rendered)
    running: dict[int, tuple[Mutant, float]] = {}
    while pending or running:
        while pending and len(running) < max(1, jobs):
            mutant, text = pending.pop(0)
            running[_run_in_fork(target.module, text, target.tests)] = (mutant, time.monotonic())
        for pid, (mutant, began) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done and time.monotonic() - began <= timeout:
                continue
            if not done:  # past its time: an endless loop is a kill
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                killed = True
            else:
                killed = os.waitstatus_to_exitcode(status) != 0
            del running[pid]
            results.append((mutant, killed))
            print(f"  {'killed  ' if killed else 'SURVIVED'} {target.module}:{mutant.line} {mutant.operator}: "
                  f"{mutant.shown}", flush=True)
        time.sleep(0.02)
    results.sort(key=lambda mk: mk[0].line)
    killed = sum(1 for _, k in results if k)
    survivors = [{"line": m.line, "operator": m.operator, "mutated": m.shown} for m, k in results if not k]
    return {"module": target.module, "tests": list(target.tests), "mutants": len(results), "killed": killed,
            "survived": len(survivors), "killed_pct": round(100.0 * killed / len(results), 1) if results else None,
            "baseline_s": round(baseline_s, 2), "survivors": survivors}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", nargs="*", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--sample", type=int, default=None, help="mutants per module, sampled (default: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lines", default="", help="only the mutants on these lines (comma-separated): the "
                                                    "survivors of an earlier run, against tests added since")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once (one repository copy each)")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = parser.parse_args(argv)
    if args.list:
        for name in args.modules:
            target = TARGETS[name]
            source = (ROOT / target.module).read_text()
            for m in mutants(source, target.only):
                if render(source, m) is not None:
                    print(f"{target.module}:{m.line} {m.operator}: {m.shown}")
        return {}
    _warm_up()
    rows = []
    for name in args.modules:
        print(f"{name}: {TARGETS[name].module} against {' '.join(TARGETS[name].tests)}", flush=True)
        rows.append(check_module(name, TARGETS[name], args.sample, args.seed, args.jobs,
                                 frozenset(int(n) for n in args.lines.split(",") if n.strip())))
    print()
    print(f"{'module':32} {'mutants':>8} {'killed':>7} {'survived':>9} {'killed %':>9}")
    for r in rows:
        print(f"{r['module']:32} {r['mutants']:>8} {r['killed']:>7} {r['survived']:>9} {r['killed_pct']:>8}%")
    for r in rows:
        for s in r["survivors"]:
            print(f"survived: {r['module']}:{s['line']} {s['operator']}: {s['mutated']}")
    result = {"bench": "mutation", "modules": rows}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
