"""Which registrations the runner selects for a cadence, read statically from its policy code.

miles' runner (2026-08) selects a registration when its cadence admits it and its labels meet
the run's include set: `policy = resolve_policy(args.cadence, set(args.labels or []))`, then
`--match-all-labels` adds every known label, then `not labels or labels & include`. The include
set of a cadence comes from `resolve_policy` in `tests/ci/ci_policy.py`: an `if/elif` chain
assigning `scope` (`set(KNOWN_LABELS)`, `set(KNOWN_LABELS) - {"long", "ft-long"}`, `set()`), and
`admit_nightly_tests=cadence in full_cadences`. The nightly consumer passes `--cadence nightly`
and no label option, so a `long` test does not run there, and an on-demand run of that suite
must not list or charge it either.

Read from the default branch (the trusted copy), for the plan's own flags: no `--labels` (an
on-demand run is not a labelled pull request), `--match-all-labels` where the plan has it. What
this reader does not understand is None: the caller then lists every enabled registration of the
suite and says the runner may run fewer.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

ALL = None  # an include set of every known label


@dataclass(frozen=True)
class LabelSelection:
    """The runner's selection for one cadence: `include` None means every label but `exclude`."""

    include: frozenset[str] | None
    exclude: frozenset[str]
    admit_nightly: bool
    where: str = ""

    def selects(self, labels, nightly: bool) -> bool:
        if nightly and not self.admit_nightly:
            return False
        labels = set(labels or ())
        if not labels:
            return True  # a registration without labels always runs (the runner's own rule)
        if self.include is None:
            return bool(labels - self.exclude)
        return bool(labels & self.include)


class _Unreadable(Exception):
    pass


@dataclass
class LabelPolicy:
    """resolve_policy as read: how a cadence turns into (include set, admits nightly tests)."""

    function: ast.FunctionDef
    constants: dict
    known: str  # the name of the known-labels mapping (KNOWN_LABELS)
    match_all: bool  # the runner's --match-all-labels adds every known label
    where: str

    def selection(self, cadence: str, match_all: bool = False) -> LabelSelection | None:
        try:
            include, exclude, admit = self._evaluate(cadence)
        except (_Unreadable, RecursionError):
            return None
        if match_all and self.match_all:
            include, exclude = ALL, frozenset()
        return LabelSelection(include, exclude, admit, self.where)

    # -- a tiny evaluator of the function, with no labels requested --------------------------
    def _evaluate(self, cadence: str):
        params = [a.arg for a in self.function.args.args]
        if len(params) < 2:
            raise _Unreadable("signature")
        env = {params[0]: cadence, params[1]: frozenset()}
        scope = None
        admit = None
        for stmt in self.function.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                try:
                    env[stmt.targets[0].id] = self._value(stmt.value, env)
                except _Unreadable:
                    env[stmt.targets[0].id] = _Unreadable
            elif isinstance(stmt, ast.If) and any(isinstance(n, ast.Name) and n.id == "scope" and isinstance(n.ctx, ast.Store)
                                                  for n in ast.walk(stmt)):
                scope = self._chain(stmt, env)  # other `if`s guard their inputs (and raise)
            elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call):
                for kw in stmt.value.keywords:
                    if kw.arg == "admit_nightly_tests":
                        admit = self._value(kw.value, env)
        if scope is None or not isinstance(admit, bool):
            raise _Unreadable("resolve_policy's scope or admit_nightly_tests")
        return scope[0], scope[1], admit

    def _chain(self, node: ast.If, env):
        while True:
            test = self._value(node.test, env)
            if not isinstance(test, bool):
                raise _Unreadable("a condition")
            if test:
                return self._scope(node.body, env)
            if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
                node = node.orelse[0]
                continue
            return self._scope(node.orelse, env)

    def _scope(self, body, env):
        for stmt in body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id == "scope":
                return self._labels(stmt.value)
        raise _Unreadable("no scope")

    def _labels(self, node):
        """set(KNOWN) -> (ALL, {}); set() -> ({}, {}); set(KNOWN) - {...} -> (ALL, {...})."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("set", "frozenset"):
            if not node.args:
                return frozenset(), frozenset()
            if len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == self.known:
                return ALL, frozenset()
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            left = self._labels(node.left)
            right = self._value(node.right, {})
            if left[0] is ALL and isinstance(right, frozenset):
                return ALL, left[1] | right
        raise _Unreadable("a scope")

    def _value(self, node, env):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in env:
                if env[node.id] is _Unreadable:
                    raise _Unreadable(node.id)
                return env[node.id]
            if node.id in self.constants:
                return self._value(self.constants[node.id], {})
            raise _Unreadable(node.id)
        if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            values = [self._value(e, env) for e in node.elts]
            if all(isinstance(v, str) for v in values):
                return frozenset(values)
            raise _Unreadable("a set")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set") \
                and len(node.args) == 1:
            inner = self._value(node.args[0], env)
            if isinstance(inner, frozenset):
                return inner
        if isinstance(node, ast.BoolOp):
            values = [self._value(v, env) for v in node.values]
            if not all(isinstance(v, bool) for v in values):
                raise _Unreadable("a boolean")
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            value = self._value(node.operand, env)
            if isinstance(value, bool):
                return not value
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self._value(node.left, env), self._value(node.comparators[0], env)
            op = node.ops[0]
            if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(left, str) and isinstance(right, str):
                return (left == right) == isinstance(op, ast.Eq)
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(left, str) and isinstance(right, frozenset):
                return (left in right) == isinstance(op, ast.In)
        raise _Unreadable(ast.dump(node)[:60])


def _module_constants(tree: ast.Module) -> dict:
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            out[stmt.targets[0].id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            out[stmt.target.id] = stmt.value
    return out


def _parse(text: str | bytes | None) -> ast.Module | None:
    if text is None:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def read_label_policy(read, runner_path: str) -> LabelPolicy | None:
    """The runner's label policy, read from the runner (`runner_path`) and the module it imports
    `resolve_policy` from, through `read(path) -> bytes | None` (a tree of the default branch)."""
    runner = _parse(read(runner_path))
    if runner is None:
        return None
    module = None
    for stmt in ast.walk(runner):
        if isinstance(stmt, ast.ImportFrom) and stmt.module and any(a.name == "resolve_policy" for a in stmt.names):
            module = stmt.module
            break
    if module is None:
        return None
    path = module.replace(".", "/") + ".py"
    policy = _parse(read(path))
    if policy is None:
        return None
    function = next((s for s in policy.body if isinstance(s, ast.FunctionDef) and s.name == "resolve_policy"), None)
    if function is None:
        return None
    # `if args.match_all_labels: include_labels |= set(KNOWN_LABELS)` in the runner
    match_all = False
    known = "KNOWN_LABELS"
    for node in ast.walk(runner):
        if isinstance(node, ast.If) and "match_all_labels" in ast.unparse(node.test):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "set" \
                        and inner.args and isinstance(inner.args[0], ast.Name):
                    match_all, known = True, inner.args[0].id
    return LabelPolicy(function, _module_constants(policy), known, match_all, f"{path}:{function.lineno}")
