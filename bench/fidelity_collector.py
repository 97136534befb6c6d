"""Collector adapter: list the registrations a target's OWN runner would collect, statically.

Run as a child process with cwd = an exported tree of one commit of the target:

    python bench/fidelity_collector.py --runner tests/ci/run_suite.py \
        --register-module tests/ci/ci_register.py=tests.ci.ci_register

It never runs a test, and it reimplements nothing the target defines:
  1. The target's register module is loaded from its file under its own dotted name. Its parent
     packages are set up as bare packages whose __path__ points at the real directories, so their
     __init__.py (which in sglang imports torch) is not executed; sibling modules the runner
     imports (tests.ci.labels, tests.ci.ci_policy, ...) are then imported for real.
  2. The runner module (run_suite.py) is executed as a module (not as __main__, so main() does not
     run). A module that cannot be imported on this machine (tabulate, torch, psycopg, ...) is
     replaced by an empty stand-in; the stand-ins are listed in the output. They matter only if
     the runner's collection path calls into them, which it does not in the revisions measured.
  3. The runner function that calls `collect_tests(...)` (run_a_suite in both targets) is located
     with ast; the statements before that call which do not depend on the function's parameters
     (the discovery: glob(...) or discover_ci_files()) are executed in the runner's namespace,
     then the runner's own `collect_tests` is called on the files it discovered, with the
     runner's own `sanity_check` value. Statements right after it that take only the collected
     list (sglang's `validate_all_suites(all_tests)`) are run too: they are part of what the
     target accepts.
  4. To list every registration even when one file makes the runner raise, `collect_tests` is
     also called file by file; the files that raise are reported as `errors` (the target rejects
     them), and `accepted` says whether the whole collection, as the runner does it, passed.

Prints one JSON object: {"registrations": [...], "errors": [...], "accepted": bool, ...}.
"""

from __future__ import annotations

import argparse
import ast
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import types


class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()


class _Anything:
    def __call__(self, *a, **k):
        return _Anything()

    def __getattr__(self, name):
        return _Anything()

    def __mro_entries__(self, bases):
        return (object,)


STUBBED: list[str] = []


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: any module no other finder can find becomes an empty stand-in."""

    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if top in sys.stdlib_module_names or top.startswith("_") or top in ("org", "msvcrt"):
            return None  # optional platform imports the standard library already guards
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        STUBBED.append(spec.name)
        mod = _Stub(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module):
        pass


def _bare_package(name: str, directory: str) -> None:
    if name in sys.modules:
        return
    mod = types.ModuleType(name)
    mod.__path__ = [os.path.abspath(directory)]
    mod.__file__ = None
    sys.modules[name] = mod
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, mod)


def load_register_module(path: str, dotted: str) -> types.ModuleType:
    parts = dotted.split(".")
    directory = os.path.dirname(path)
    # python/sglang/test/ci/ci_register.py as sglang.test.ci.ci_register: sglang -> python/sglang
    dirs = []
    d = directory
    for _ in parts[:-1]:
        dirs.insert(0, d)
        d = os.path.dirname(d)
    root = d or "."
    if root not in sys.path:
        sys.path.insert(0, os.path.abspath(root))
    for i in range(1, len(parts)):
        _bare_package(".".join(parts[:i]), dirs[i - 1])
    spec = importlib.util.spec_from_file_location(dotted, os.path.abspath(path))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[dotted] = mod
    spec.loader.exec_module(mod)
    return mod


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _assigned(stmt: ast.stmt) -> set[str]:
    out = set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


def _collect_call(stmt: ast.stmt) -> ast.Call | None:
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if isinstance(f, ast.Name) and f.id == "collect_tests":
            return stmt.value
    return None


def find_collection(runner_tree: ast.Module) -> tuple[ast.FunctionDef, int]:
    for fn in ast.walk(runner_tree):
        if isinstance(fn, ast.FunctionDef):
            for i, stmt in enumerate(fn.body):
                if _collect_call(stmt) is not None:
                    return fn, i
    raise SystemExit("no `x = collect_tests(...)` statement found in the runner")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True, help="the runner module, repo-relative (run_suite.py)")
    ap.add_argument("--register-module", required=True, help="PATH=dotted.name of the register module")
    ap.add_argument("--timing-only", action="store_true", help="only the runner's own collection (for timing)")
    ap.add_argument("--start-dir", default="", help="the directory the runner is started in, relative to the tree (default: the tree)")
    args = ap.parse_args()
    tree_root = os.getcwd()
    sys.path.insert(0, tree_root)
    sys.meta_path.append(_StubFinder())

    reg_path, _, dotted = args.register_module.partition("=")
    load_register_module(reg_path, dotted)

    runner_path = os.path.abspath(args.runner)
    source = open(runner_path).read()
    sys.path.insert(0, os.path.dirname(runner_path))
    runner = types.ModuleType("__fidelity_runner__")
    runner.__file__ = runner_path
    sys.modules[runner.__name__] = runner
    exec(compile(source, runner_path, "exec"), runner.__dict__)

    fn, index = find_collection(ast.parse(source))
    tainted = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    if args.start_dir:
        os.chdir(args.start_dir)  # where the target's workflows start the runner (sglang: test/)
    # Each world is one way through the discovery: an `if` on the runner's arguments (sglang's
    # `if nightly:` of December 2025) runs both branches, each in its own world.
    worlds: list[dict] = [{}]
    skipped = []

    def run_plain(stmt, ns):
        exec(compile(ast.Module(body=[stmt], type_ignores=[]), runner_path, "exec"), runner.__dict__, ns)

    for stmt in fn.body[:index]:
        if isinstance(stmt, ast.If) and _names(stmt.test) & tainted:
            branched = []
            for ns in worlds:
                for body in (stmt.body, stmt.orelse):
                    w = dict(ns)
                    for inner in body:
                        if _names(inner) & tainted:
                            skipped.append(ast.unparse(inner).split("\n")[0])
                            continue
                        run_plain(inner, w)
                    branched.append(w)
            worlds = branched
            continue
        if _names(stmt) & tainted:
            tainted |= _assigned(stmt)
            skipped.append(ast.unparse(stmt).split("\n")[0])
            continue
        for ns in worlds:
            run_plain(stmt, ns)
    call = _collect_call(fn.body[index])
    result_name = fn.body[index].targets[0].id
    plans = []  # (files, sanity, ns) per world
    for ns in worlds:
        env = {**runner.__dict__, **ns}
        files = eval(compile(ast.Expression(call.args[0]), runner_path, "eval"), env)
        sanity = True
        for kw in call.keywords:
            if kw.arg == "sanity_check":
                sanity = eval(compile(ast.Expression(kw.value), runner_path, "eval"), env)
        if len(call.args) > 1:
            sanity = eval(compile(ast.Expression(call.args[1]), runner_path, "eval"), env)
        plans.append((files, sanity, ns))
    collect_tests = runner.__dict__["collect_tests"]

    # the runner's own call, whole, then the checks that take only its result
    accepted, reason = True, None
    import warnings

    for files, sanity, ns in plans:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                whole = collect_tests(files, sanity_check=sanity)
            ns[result_name] = whole
            for stmt in fn.body[index + 1 :]:
                if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
                    break
                if _names(stmt.value) - {result_name} - set(runner.__dict__):
                    break
                exec(compile(ast.Module(body=[stmt], type_ignores=[]), runner_path, "exec"), runner.__dict__, ns)
        except Exception as exc:  # the target rejects this commit
            accepted, reason = False, f"{type(exc).__name__}: {exc}"[:20000]
    # every file once, read with the strictest sanity_check of the worlds that discover it
    strictest: dict[str, bool] = {}
    for files, sanity, _ns in plans:
        for f in files:
            strictest[f] = strictest.get(f, False) or bool(sanity)
    files = list(strictest)
    sanity = plans[0][1] if len({p[1] for p in plans}) == 1 else [p[1] for p in plans]
    ns = plans[0][2]
    if args.timing_only:
        print(json.dumps({"accepted": accepted, "registrations": len(ns.get(result_name) or [])}))
        return

    regs, errors = [], []
    import warnings

    for f in files:
        rel = os.path.relpath(os.path.abspath(f), tree_root)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = collect_tests([f], sanity_check=strictest[f])
        except Exception as exc:
            errors.append({"file": rel, "error": f"{type(exc).__name__}: {exc}"[:500]})
            continue
        for r in found:
            suite = getattr(r, "effective_suite", None) or r.suite
            regs.append(
                {
                    "file": os.path.relpath(os.path.abspath(r.filename), tree_root),
                    "backend": r.backend.name.lower(),
                    "suite": suite,
                    "est_time": float(r.est_time),
                    "labels": list(getattr(r, "labels", None) or []),
                    "nightly": bool(getattr(r, "nightly", False)),
                    "disabled": getattr(r, "disabled", None),
                    "implicit": bool(getattr(r, "implicit", False)),
                }
            )
    print(
        json.dumps(
            {
                "runner_function": fn.name,
                "discovery_statements_skipped": skipped,
                "sanity_check": sanity,
                "files": len(files),
                "registrations": regs,
                "errors": errors,
                "accepted": accepted,
                "rejected_because": reason,
                "stubbed_modules": sorted(set(STUBBED)),
            }
        )
    )


if __name__ == "__main__":
    main()
