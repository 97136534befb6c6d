"""What the target's runner does with registrations, read statically from its own code (never run).

Read from the register module (`paths.register_module`) and the runner (`paths.suites_module`):

- discovery: the files handed to `collect_tests(...)` in the runner function that calls it:
  `glob.glob(...)` patterns (string literals, `os.path.join`/`dirname`/`abspath(__file__)`,
  f-strings over a loop variable), list comprehensions that filter them (`f.endswith(...)`,
  `"..." in f`, `os.path.basename(f) in (...)`, `not`/`and`/`or`), `+`, `+=`, `.extend(...)`,
  `sorted(...)`/`list(...)` and calls of a function of either module that returns such a list
  (miles' `discover_ci_files()`);
- `sanity_check=` of that call (a literal, or a local name bound to one): False means an
  unregistered file is a warning of the runner, not an error;
- the implicit-CPU roots: `file.startswith("tests/fast/")` tests in `collect_tests` (directly or
  through a one-line helper);
- the `__main__` requirement: `collect_tests` or the file parser compares with `"__main__"`;
- est_time bounds: an ordering comparison on `est_time` in the register module;
- the composed suite: an f-string over `self.<keyword-only parameter>`s (sglang's
  `CIRegistry.effective_suite`, `f"{self.stage}-test-{self.runner_config}"`);
- which backends the runner validates against the inventory: `t.backend not in NAME` with NAME a
  module-level set of `HWBackend.X` (sglang's `_SUITE_CHECKED_BACKENDS`), and whether that
  validation sees disabled registrations too (it never reads `.disabled`);
- its command-line options: every `parser.add_argument("--name", ...)` (whether it takes a value,
  and its `choices=` when they are literals), so an on-demand run passes only flags this revision
  of the runner accepts (`--cadence`, `--auto-partition-id`, `--enable-retry`, ...).

Whatever is not read is None here, and the caller falls back to the configuration.
"""

from __future__ import annotations

import ast
import dataclasses
import posixpath
import re
from dataclasses import dataclass, field
from typing import Callable

_REPO = "/__repo__"  # stands for the repository root when the runner builds absolute paths
_START = "/__start__"  # the directory the runner is started in (os.getcwd() before any os.chdir)
_PATH_TYPES = ("Path", "pathlib.Path", "PurePath", "PurePosixPath", "pathlib.PurePath", "pathlib.PurePosixPath")
_MAX_STEPS = 20_000  # statements and expressions followed: a discovery past it is not read
_MAX_SOURCES = 256  # globs: each discovered path is matched against every one


def module_bindings(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level `NAME = value` and `NAME: T = value` bindings (the last one wins, as at run time)."""
    bindings: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    bindings[target.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            bindings[stmt.target.id] = stmt.value
    return bindings


class Unreadable(Exception):
    pass


@dataclass(frozen=True)
class Source:
    """One glob of the runner and the comprehension filters applied to what it returns."""

    pattern: str  # repository-relative glob (`**` recursive); relative to the start directory while `relative`
    absolute: bool  # the runner globbed an absolute path (filters see `/repo/<path>`)
    filters: tuple[Callable[[str], bool], ...] = ()
    text: str = ""  # how it reads, for messages
    # The runner globbed a relative name: it reads it from the directory it is started in, which
    # the code alone does not say (anchor_sources decides, from the tree).
    relative: bool = False
    base: str = ""  # the start directory, repository-relative: filters see names relative to it
    sanity_check: bool | None = None  # collect_tests' sanity_check on the branch that globbed it (None: the call's)

    def matcher(self) -> Callable[[str], bool]:
        regex = re.compile(_glob_regex(self.pattern))
        prefix = self.pattern.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]
        filters = self.filters
        absolute = self.absolute
        cut = len(self.base) + 1 if self.base else 0

        def match(path: str) -> bool:
            if not path.startswith(prefix) or not regex.fullmatch(path):
                return False
            seen = f"{_REPO}/{path}" if absolute else path[cut:]
            return all(f(seen) for f in filters)

        return match


def _literal_prefix(pattern: str) -> str:
    """The directories a glob names before its first wildcard ("registered/" of "registered/**/*.py")."""
    head = pattern.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]
    return head.rsplit("/", 1)[0] + "/" if "/" in head else ""


def anchor_sources(sources: list[Source], runner_dir: str, paths) -> list[Source]:
    """Relative globs read from the runner's start directory: the repository root (miles runs
    `python tests/ci/run_suite.py` from it) or the runner's own directory (sglang's workflows run
    `cd test && python3 run_suite.py`, and its runner globbed `registered/**/*.py` until March
    2026). The code does not say which, the tree does: a glob whose leading directories exist
    under one of the two and not the other is read there; a glob that names none (`**/*.py`)
    follows the others of the same discovery; else the root."""
    if not any(s.relative for s in sources):
        return sources
    dirs = set()
    for path in paths:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]) + "/")
    runner_dir = runner_dir.strip("/")

    def exists(base: str, prefix: str) -> bool:
        return not prefix or (f"{base}/{prefix}" if base else prefix) in dirs

    chosen: list[str | None] = []  # per source: its start directory, or None while undecided
    for s in sources:
        prefix = _literal_prefix(s.pattern) if s.relative else ""
        base = None
        if prefix:
            at_root, at_runner = exists("", prefix), bool(runner_dir) and exists(runner_dir, prefix)
            if at_runner and not at_root:
                base = runner_dir
            elif at_root and not at_runner:
                base = ""
        chosen.append(base)
    fallback = next((c for c in chosen if c is not None), "")
    out = []
    for s, base in zip(sources, chosen):
        if not s.relative:
            out.append(s)
            continue
        if base is None:
            base = fallback
        pattern = posixpath.join(base, s.pattern) if base else s.pattern
        out.append(dataclasses.replace(s, pattern=pattern, text=s.text if not base else f"{s.text} (from {base}/)", relative=False, base=base))
    return out


@dataclass
class RunnerFacts:
    sources: list[Source] | None = None  # None: discovery not read
    discovery_where: str = ""  # "test/run_suite.py:330", for messages
    discovery_problem: str = ""  # why discovery was not read
    sanity_check: bool | None = None
    implicit_cpu_roots: list[str] | None = None
    main_block_required: bool | None = None
    est_time_positive: bool | None = None
    suite_template: tuple[str, tuple[str, ...]] | None = None  # ("{stage}-test-{runner_config}", ("stage", "runner_config"))
    suite_checked_backends: list[str] | None = None  # None: every backend (or not read)
    validates_disabled: bool | None = None  # the suite validation sees disabled registrations
    options: dict[str, "RunnerOption"] | None = None  # None: no argparse options read
    # "test/run_suite.py:116": where a runner that validates nothing only prints "Unknown suite"
    # and runs the suite a job names anyway (sglang until April 2026); "" otherwise
    unknown_suite_warns: str = ""


@dataclass(frozen=True)
class RunnerOption:
    """One `add_argument("--flag", ...)` of the runner."""

    flag: str
    takes_value: bool  # False for store_true/store_false/store_const/count
    choices: tuple[str, ...] | None = None  # None: any value (or choices the engine cannot read)
    default: int | str | None = None  # a literal `default=` (the runner's --timeout-per-file when none is passed)


def _glob_regex(pattern: str) -> str:
    out = []
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append("(?:[^/.][^/]*/)*" if not last else ".*")
            continue
        seg = []
        j = 0
        while j < len(part):
            c = part[j]
            if c == "*":
                seg.append("[^/]*")
            elif c == "?":
                seg.append("[^/]")
            elif c == "[":
                k = part.find("]", j + 1)
                if k < 0:
                    seg.append(re.escape(c))
                else:
                    inner = part[j + 1 : k]
                    if inner.startswith("!"):
                        inner = "^" + inner[1:]
                    seg.append(f"[{inner}]")
                    j = k
            else:
                seg.append(re.escape(c))
            j += 1
        text = "".join(seg)
        if part[:1] in ("*", "?", "["):
            text = "(?!\\.)" + text  # glob skips hidden names unless the pattern names the dot
        out.append(text + ("" if last else "/"))
    return "".join(out)


def _functions(tree: ast.Module | None) -> dict[str, ast.FunctionDef]:
    if tree is None:
        return {}
    return {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return ""


class _Module:
    def __init__(self, path: str, tree: ast.Module | None):
        self.path = path
        self.tree = tree
        self.bindings = module_bindings(tree) if tree is not None else {}
        self.functions = _functions(tree)


class _Evaluator:
    """Evaluates the runner's discovery expressions: strings, and lists of Sources."""

    def __init__(self, runner: _Module, register: _Module, sanity_name: str | None = None):
        self.runner = runner
        self.register = register
        self.depth = 0
        self.steps = 0
        self.cwd = _START  # os.chdir(...) moves it; relative globs are read from it
        self.sanity_name = sanity_name  # the local handed to collect_tests(sanity_check=...)
        self.unread: dict[str, str] = {}  # locals that looked like file lists and could not be read: why

    def absolute(self, path: str) -> str:
        if path.startswith(_REPO) or path.startswith(_START):
            return posixpath.normpath(path)
        if path.startswith("/"):
            raise Unreadable(f"the path `{path}` is outside the repository")
        return posixpath.normpath(posixpath.join(self.cwd, path))

    def spend(self) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise Unreadable(f"the discovery takes more than {_MAX_STEPS:,} steps to follow")

    # -- strings ---------------------------------------------------------------------------
    def string(self, node: ast.expr, env: dict, module: _Module) -> str | list[str]:
        self.spend()
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return f"{_REPO}/{module.path}"
            if node.id in env:
                if isinstance(env[node.id], bool):
                    raise Unreadable(f"`{node.id}` is a flag, not a path")
                return env[node.id]
            if node.id in module.bindings:
                return self.string(module.bindings[node.id], {}, module)
            raise Unreadable(f"`{node.id}` is not bound where the runner uses it")
        if isinstance(node, ast.JoinedStr):
            text = ""
            for value in node.values:
                if isinstance(value, ast.Constant):
                    text += str(value.value)
                elif isinstance(value, ast.FormattedValue) and value.format_spec is None and value.conversion == -1:
                    part = self.string(value.value, env, module)
                    if not isinstance(part, str):
                        raise Unreadable("an f-string over a list")
                    text += part
                else:
                    raise Unreadable("an f-string with a format")
            return text
        if isinstance(node, ast.Attribute) and node.attr == "parent":  # Path(__file__).parent
            return posixpath.dirname(self.path(node.value, env, module))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # Path(...) / "registered"
            return posixpath.join(self.path(node.left, env, module), self.path(node.right, env, module))
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            name = _dotted(node.func)
            if name in ("os.getcwd", "Path.cwd", "pathlib.Path.cwd"):
                return self.cwd
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "absolute", "as_posix"):
                inner = self.path(node.func.value, env, module)
                return inner if node.func.attr == "as_posix" else self.absolute(inner)
        if isinstance(node, ast.Call) and not node.keywords:
            name = _dotted(node.func)
            if name in _PATH_TYPES or name in ("os.fspath",):
                parts = [self.path(a, env, module) for a in node.args]
                return posixpath.join(*parts) if parts else "."
            args = [self.string(a, env, module) for a in node.args]
            if any(not isinstance(a, str) for a in args):
                raise Unreadable(f"`{ast.unparse(node)[:60]}`")
            if name in ("os.path.join", "posixpath.join", "join") and args:
                return posixpath.join(*args)
            if name in ("os.path.dirname", "posixpath.dirname", "dirname") and len(args) == 1:
                return posixpath.dirname(args[0])
            if name in ("os.path.abspath", "os.path.realpath", "os.path.normpath", "str") and len(args) == 1:
                return posixpath.normpath(args[0])
        if isinstance(node, (ast.Tuple, ast.List)):
            out = []
            for elt in node.elts:
                v = self.string(elt, env, module)
                if not isinstance(v, str):
                    raise Unreadable("a nested list")
                out.append(v)
            return out
        raise Unreadable(f"`{ast.unparse(node)[:60]}` is not a path the engine can read")

    def path(self, node: ast.expr, env: dict, module: _Module) -> str:
        value = self.string(node, env, module)
        if not isinstance(value, str):
            raise Unreadable(f"`{ast.unparse(node)[:60]}` is a list, not a path")
        return value

    def source(self, pattern: str, recursive: bool) -> Source:
        """A glob of `pattern` (absolute, or relative to the current directory) as a Source.
        The names it returns are absolute when the pattern was, else relative to the current
        directory: what the comprehension filters see."""
        given_absolute = pattern.startswith(_REPO) or pattern.startswith(_START)
        full = self.absolute(pattern)
        if not recursive:
            full = full.replace("**", "*")
        if full.startswith(_REPO + "/") or full == _REPO:
            rel = full[len(_REPO) + 1 :]
            if given_absolute:
                return Source(rel, True, (), rel)
            base = self.cwd[len(_REPO) + 1 :] if self.cwd.startswith(_REPO + "/") else ""  # after os.chdir(<repo dir>)
            return Source(rel, False, (), f"{pattern} (from {base or '.'}/)", base=base)
        if full.startswith(_START + "/"):
            rel = full[len(_START) + 1 :]
            if rel.startswith(".."):
                raise Unreadable(f"the glob `{pattern}` leaves the start directory")
            return Source(rel, False, (), rel, relative=True)
        raise Unreadable(f"the glob `{pattern}` leaves the repository")

    # -- file lists ------------------------------------------------------------------------
    def files(self, node: ast.expr, env: dict, lists: dict, module: _Module) -> list[Source]:
        self.spend()
        out = self._files(node, env, lists, module)
        if len(out) > _MAX_SOURCES:
            raise Unreadable(f"the discovery has more than {_MAX_SOURCES} globs")
        return out

    def _files(self, node: ast.expr, env: dict, lists: dict, module: _Module) -> list[Source]:
        if isinstance(node, ast.Name) and node.id in lists:
            return list(lists[node.id])
        if isinstance(node, ast.Name) and node.id in self.unread:
            raise Unreadable(self.unread[node.id])
        if isinstance(node, ast.List) and not node.elts:
            return []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.files(node.left, env, lists, module) + self.files(node.right, env, lists, module)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            gen = node.generators[0]
            if not (isinstance(gen.target, ast.Name) and isinstance(node.elt, ast.Name) and node.elt.id == gen.target.id and not gen.is_async):
                raise Unreadable(f"`{ast.unparse(node)[:60]}` transforms the file names")
            inner = self.files(gen.iter, env, lists, module)
            preds = tuple(_predicate(c, gen.target.id, lambda n: self.string(n, env, module), module.functions) for c in gen.ifs)
            return [dataclasses.replace(s, filters=s.filters + preds) for s in inner]
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in ("glob.glob", "glob", "glob.iglob", "iglob") and node.args:
                pattern = self.string(node.args[0], env, module)
                if not isinstance(pattern, str):
                    raise Unreadable("a glob over a list")
                recursive = any(k.arg == "recursive" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords)
                root_dir = next((k.value for k in node.keywords if k.arg == "root_dir"), None)
                if root_dir is not None:
                    # names come back relative to root_dir: filters see them so, the runner opens
                    # them from the current directory (where they are not: sglang never did this)
                    raise Unreadable("`glob(..., root_dir=...)` returns names relative to another directory")
                return [self.source(pattern, recursive)]
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("glob", "rglob") and len(node.args) == 1 \
                    and not node.keywords and name not in ("glob.glob",):
                base = self.path(node.func.value, env, module)  # Path(__file__).parent.rglob("test_*.py")
                pattern = self.path(node.args[0], env, module)
                if node.func.attr == "rglob":
                    pattern = posixpath.join("**", pattern)
                return [self.source(posixpath.join(base, pattern), True)]
            if name in ("sorted", "list") and len(node.args) == 1 and not node.keywords:
                return self.files(node.args[0], env, lists, module)
            if isinstance(node.func, ast.Name) and not node.args and not node.keywords:
                for mod in (module, self.runner, self.register):
                    fn = mod.functions.get(node.func.id)
                    if fn is not None:
                        return self.function_result(fn, mod)
        raise Unreadable(f"`{ast.unparse(node)[:80]}` is not a file list the engine can read")

    def function_result(self, fn: ast.FunctionDef, module: _Module) -> list[Source]:
        self.depth += 1
        if self.depth > 4:
            raise Unreadable("discovery nests too deeply")
        env: dict = {}
        lists: dict = {}
        for stmt in fn.body:
            if isinstance(stmt, ast.Return) and stmt.value is not None:
                return self.files(stmt.value, env, lists, module)
            self.statement(stmt, env, lists, module)
        raise Unreadable(f"`{fn.name}()` returns no file list the engine can read")

    def statement(self, stmt: ast.stmt, env: dict, lists: dict, module: _Module) -> None:
        """Track the locals a discovery uses; statements that bind nothing tracked are skipped."""
        self.spend()
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is None or len(targets) != 1 or not isinstance(targets[0], ast.Name):
                return
            name = targets[0].id
            if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, bool):
                lists.pop(name, None)
                env[name] = stmt.value.value  # sanity_check = False
                return
            try:
                lists[name] = self.files(stmt.value, env, lists, module)
                env.pop(name, None)
                self.unread.pop(name, None)
                return
            except Unreadable as exc:
                lists.pop(name, None)
                self.unread[name] = f"`{name}` (line {stmt.lineno}): {exc}"  # why, if collect_tests is given it
            try:
                env[name] = self.string(stmt.value, env, module)
            except Unreadable:
                env.pop(name, None)
            return
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and isinstance(stmt.op, ast.Add) and stmt.target.id in lists:
            lists[stmt.target.id] = lists[stmt.target.id] + self.files(stmt.value, env, lists, module)
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if _dotted(call.func) in ("os.chdir", "chdir") and len(call.args) == 1 and not call.keywords:
                self.cwd = self.absolute(self.path(call.args[0], env, module))
                return
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.value.id in lists:
                if call.func.attr == "extend" and len(call.args) == 1:
                    lists[call.func.value.id] = lists[call.func.value.id] + self.files(call.args[0], env, lists, module)
                    return
                if call.func.attr == "sort":
                    return
                raise Unreadable(f"`{ast.unparse(call)[:60]}` changes the file list")
            return
        if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) and not stmt.orelse:
            touched = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)} & set(lists)
            if not touched:
                return
            values = self.string(stmt.iter, env, module)
            if isinstance(values, str):
                raise Unreadable("a loop over a string")
            for value in values:
                inner = dict(env)
                inner[stmt.target.id] = value
                for s in stmt.body:
                    self.statement(s, inner, lists, module)
            return
        if isinstance(stmt, ast.If):
            self.branches(stmt, env, lists, module)
            return
        touched = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} & set(lists)
        if touched:
            raise Unreadable(f"the file list is changed at line {stmt.lineno}")

    def branches(self, stmt: ast.If, env: dict, lists: dict, module: _Module) -> None:
        """`if nightly: files = glob(A); sanity_check = False / else: files = glob(B)` (sglang in
        December 2025): the test depends on how the runner is called, so the discovery is what
        either branch finds, each glob keeping the branch's own sanity_check."""
        outcomes = []
        cwd = self.cwd
        for body in (stmt.body, stmt.orelse):
            b_env, b_lists = dict(env), dict(lists)
            self.cwd = cwd
            for inner in body:
                self.statement(inner, b_env, b_lists, module)
            sanity = b_env.get(self.sanity_name) if self.sanity_name else None
            if isinstance(sanity, bool):
                b_lists = {k: v if lists.get(k) == v else [s if s.sanity_check is not None else _with_sanity(s, sanity) for s in v]
                           for k, v in b_lists.items()}
            outcomes.append((b_env, b_lists, self.cwd))
        if outcomes[0][2] != outcomes[1][2]:
            raise Unreadable(f"the branches at line {stmt.lineno} change to different directories")
        for name in set(outcomes[0][1]) | set(outcomes[1][1]):
            merged: list[Source] = []
            for _e, b_lists, _c in outcomes:
                merged.extend(s for s in b_lists.get(name, lists.get(name, [])) if s not in merged)
            if name in outcomes[0][1] and name in outcomes[1][1] or name in lists:
                lists[name] = merged
                env.pop(name, None)
        for name in set(outcomes[0][0]) & set(outcomes[1][0]):
            if outcomes[0][0][name] == outcomes[1][0][name]:
                env[name] = outcomes[0][0][name]
            elif name == self.sanity_name:
                env.pop(name, None)  # per glob, above
        self.cwd = outcomes[0][2]


def _with_sanity(source: Source, sanity: bool) -> Source:
    return dataclasses.replace(source, sanity_check=sanity)


def _predicate(node: ast.expr, var: str, string, functions: dict[str, ast.FunctionDef] | None = None,
               names: dict[str, Callable[[str], str]] | None = None, depth: int = 0) -> Callable[[str], bool]:
    """A comprehension filter over the file name `var` as a Python predicate, or Unreadable.
    `functions`: one-argument helpers of the module a filter may call (miles'
    `_is_e2e_discovery_file(f)`); `names`: their locals derived from the file name."""
    functions = functions or {}
    names = names or {}

    def subject(n: ast.expr) -> Callable[[str], str]:
        if isinstance(n, ast.Name) and n.id == var:
            return lambda f: f
        if isinstance(n, ast.Name) and n.id in names:
            return names[n.id]
        if isinstance(n, ast.Call) and _dotted(n.func) in ("os.path.basename", "posixpath.basename") and len(n.args) == 1:
            inner = subject(n.args[0])
            return lambda f: posixpath.basename(inner(f))
        if isinstance(n, ast.Attribute) and n.attr == "name" and isinstance(n.value, ast.Call) \
                and _dotted(n.value.func) in ("Path", "pathlib.Path", "PurePath") and len(n.value.args) == 1:
            inner = subject(n.value.args[0])
            return lambda f: posixpath.basename(inner(f))
        # the items of Path.glob/rglob: f.name, f.stem, f.suffix, str(f), f.as_posix()
        if isinstance(n, ast.Attribute) and n.attr in ("name", "stem", "suffix"):
            inner = subject(n.value)
            part = {"name": posixpath.basename,
                    "stem": lambda f: posixpath.splitext(posixpath.basename(f))[0],
                    "suffix": lambda f: posixpath.splitext(posixpath.basename(f))[1]}[n.attr]
            return lambda f: part(inner(f))
        if isinstance(n, ast.Call) and _dotted(n.func) in ("str", "os.fspath") and len(n.args) == 1 and not n.keywords:
            return subject(n.args[0])
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "as_posix" and not n.args:
            return subject(n.func.value)
        raise Unreadable(f"the filter `{ast.unparse(node)[:60]}`")

    def again(n: ast.expr) -> Callable[[str], bool]:
        return _predicate(n, var, string, functions, names, depth)

    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions and depth < 3 \
            and len(node.args) == 1 and not node.keywords:
        fn = functions[node.func.id]
        params = fn.args.posonlyargs + fn.args.args
        if len(params) != 1:
            raise Unreadable(f"the filter `{ast.unparse(node)[:60]}`")
        arg = subject(node.args[0])
        local: dict[str, Callable[[str], str]] = {params[0].arg: arg}
        for stmt in fn.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # docstring
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                local[stmt.targets[0].id] = _predicate_subject(stmt.value, params[0].arg, local, node)
                continue
            if isinstance(stmt, ast.Return) and stmt.value is not None:
                inner_names = {k: v for k, v in local.items() if k != params[0].arg}
                p = _predicate(stmt.value, params[0].arg, string, functions, inner_names, depth + 1)
                return lambda f: p(arg(f))
            raise Unreadable(f"the filter `{node.func.id}()`")
        raise Unreadable(f"the filter `{node.func.id}()` returns nothing")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        p = again(node.operand)
        return lambda f: not p(f)
    if isinstance(node, ast.BoolOp):
        ps = [again(v) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda f: all(p(f) for p in ps)
        return lambda f: any(p(f) for p in ps)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("endswith", "startswith") and len(node.args) == 1:
        get = subject(node.func.value)
        arg = string(node.args[0])
        arg = tuple(arg) if isinstance(arg, list) else arg
        if node.func.attr == "endswith":
            return lambda f: get(f).endswith(arg)
        return lambda f: get(f).startswith(arg)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn, ast.Eq, ast.NotEq)):
        op = node.ops[0]
        left, right = node.left, node.comparators[0]
        negate = isinstance(op, (ast.NotIn, ast.NotEq))
        if isinstance(op, (ast.In, ast.NotIn)):
            try:
                get = subject(right)  # "text" in f
                needle = string(left)
                if not isinstance(needle, str):
                    raise Unreadable("a list in a file name")
                test = lambda f: needle in get(f)  # noqa: E731
            except Unreadable:
                get = subject(left)  # basename(f) in ("a", "b")
                options = string(right)
                options = [options] if isinstance(options, str) else options
                test = lambda f: get(f) in options  # noqa: E731
        else:
            get = subject(left)
            value = string(right)
            test = lambda f: get(f) == value  # noqa: E731
        return (lambda f: not test(f)) if negate else test
    raise Unreadable(f"the filter `{ast.unparse(node)[:60]}`")


def _predicate_subject(value: ast.expr, var: str, local: dict, where: ast.AST) -> Callable[[str], str]:
    """A helper's local derived from its file-name parameter (`basename = Path(filename).name`)."""
    if isinstance(value, ast.Attribute) and value.attr == "name" and isinstance(value.value, ast.Call) \
            and _dotted(value.value.func) in ("Path", "pathlib.Path", "PurePath") and len(value.value.args) == 1 \
            and isinstance(value.value.args[0], ast.Name) and value.value.args[0].id == var:
        return lambda f: posixpath.basename(f)
    if isinstance(value, ast.Call) and _dotted(value.func) in ("os.path.basename", "posixpath.basename") and len(value.args) == 1 \
            and isinstance(value.args[0], ast.Name) and value.args[0].id == var:
        return lambda f: posixpath.basename(f)
    raise Unreadable(f"the filter `{ast.unparse(where)[:60]}`")


def _collect_call(fn: ast.FunctionDef) -> tuple[int, ast.Call] | None:
    """The body index of the statement that calls collect_tests(...), and the call."""
    for i, stmt in enumerate(fn.body):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1] == "collect_tests":
                return i, node
    return None


def _literal_bool(node: ast.expr | None, before: list[ast.stmt]) -> bool | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        value = None
        for stmt in before:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets):
                value = stmt.value.value if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, bool) else None
        return value
    return None


def _param_default(fn: ast.FunctionDef | None, name: str) -> bool | None:
    if fn is None:
        return None
    a = fn.args
    params = a.posonlyargs + a.args
    defaults = dict(zip([p.arg for p in params][len(params) - len(a.defaults):], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    d = defaults.get(name)
    return d.value if isinstance(d, ast.Constant) and isinstance(d.value, bool) else None


def read_discovery(facts: RunnerFacts, runner: _Module, register: _Module) -> None:
    if runner.tree is None:
        facts.discovery_problem = f"{runner.path} could not be read"
        return
    found = None
    for fn in runner.functions.values():
        hit = _collect_call(fn)
        if hit is not None:
            found = (fn, *hit)
            break
    if found is None:
        facts.discovery_problem = f"{runner.path} calls no `collect_tests(...)` in a function"
        return
    fn, index, call = found
    facts.discovery_where = f"{runner.path}:{call.lineno}"
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    sanity = kw.get("sanity_check", call.args[1] if len(call.args) > 1 else None)
    collect_fn = register.functions.get("collect_tests") or runner.functions.get("collect_tests")
    facts.sanity_check = _literal_bool(sanity, fn.body[:index]) if sanity is not None else _param_default(collect_fn, "sanity_check")
    files_arg = call.args[0] if call.args else kw.get("files")
    if files_arg is None:
        facts.discovery_problem = f"`collect_tests(...)` at {facts.discovery_where} is given no file list"
        return
    ev = _Evaluator(runner, register, sanity.id if isinstance(sanity, ast.Name) else None)
    env: dict = {}
    lists: dict = {}
    try:
        for stmt in fn.body[:index]:
            ev.statement(stmt, env, lists, runner)
        facts.sources = ev.files(files_arg, env, lists, runner)
        flag = env.get(ev.sanity_name) if ev.sanity_name else None
        if facts.sanity_check is None and isinstance(flag, bool):
            facts.sanity_check = flag
        per_source = {s.sanity_check for s in facts.sources}
        if facts.sanity_check is None and len(per_source) == 1 and None not in per_source:
            facts.sanity_check = per_source.pop()  # every branch alike
    except (Unreadable, RecursionError) as exc:
        facts.sources = None
        facts.discovery_problem = f"the files given to `collect_tests` at {facts.discovery_where} cannot be read: {exc}"


def _startswith_prefixes(node: ast.AST, functions: dict[str, ast.FunctionDef], depth: int = 0) -> list[str]:
    out: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "startswith" and len(n.args) == 1:
            arg = n.args[0]
            values = [arg] if isinstance(arg, ast.Constant) else list(getattr(arg, "elts", []))
            out.extend(v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in functions and depth < 2:
            out.extend(_startswith_prefixes(functions[n.func.id], functions, depth + 1))
    return out


def read_register_module(facts: RunnerFacts, register: _Module, keyword_only: set[str]) -> None:
    tree = register.tree
    if tree is None:
        return
    collect = register.functions.get("collect_tests")
    if collect is not None:
        roots = []
        for node in ast.walk(collect):
            if isinstance(node, ast.If):
                roots.extend(p.rstrip("/") for p in _startswith_prefixes(node.test, register.functions))
        facts.implicit_cpu_roots = sorted(set(roots))
    # One pass, in ast.walk's order, for three facts (each was a walk of its own, and the first
    # walked every function again for each function or class around it):
    # - a "__main__" inside a function or class: collect_tests checks for the `__main__` block;
    # - est_time compared with <, <=, > or >=: the runner bounds est_time;
    # - the first f"{self.a}...{self.b}" of keyword-only fields: the composed suite's template.
    from collections import deque

    mentions_main = positive = False
    template = None
    todo: deque[tuple[ast.AST, bool]] = deque([(tree, False)])
    while todo:
        node, inside = todo.popleft()
        if isinstance(node, ast.Constant):
            mentions_main = mentions_main or (inside and node.value == "__main__")
        elif isinstance(node, ast.Compare):
            if not positive and any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
                names = {getattr(x, "id", None) or getattr(x, "attr", None) or (x.slice.value if isinstance(x, ast.Subscript) and isinstance(x.slice, ast.Constant) else None)
                         for x in [node.left, *node.comparators]}
                positive = "est_time" in names
        elif isinstance(node, ast.JoinedStr) and template is None:
            fields = [v.value.attr for v in node.values if isinstance(v, ast.FormattedValue)
                      and isinstance(v.value, ast.Attribute) and isinstance(v.value.value, ast.Name) and v.value.value.id == "self"]
            if len(fields) >= 2 and set(fields) <= keyword_only and all(isinstance(v, (ast.Constant, ast.FormattedValue)) for v in node.values):
                text = "".join(str(v.value) if isinstance(v, ast.Constant) else "{" + v.value.attr + "}" for v in node.values)
                template = (text, tuple(fields))
        inside = inside or isinstance(node, (ast.FunctionDef, ast.ClassDef))  # as before: not async defs
        todo.extend((child, inside) for child in ast.iter_child_nodes(node))
    facts.main_block_required = bool(mentions_main and collect is not None)
    facts.est_time_positive = positive
    if template is not None:
        facts.suite_template = template


def read_validation(facts: RunnerFacts, runner: _Module) -> None:
    """`for t in all_tests: if t.backend not in CHECKED: continue; ... t.suite not in valid` (sglang)."""
    if runner.tree is None:
        return
    for fn in runner.functions.values():
        compares = [n for n in ast.walk(fn) if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.NotIn)]
        suite_test = [c for c in compares if isinstance(c.left, ast.Attribute) and c.left.attr in ("suite", "effective_suite")
                      and isinstance(c.left.value, ast.Name)]
        loops = [n for n in ast.walk(fn) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)]
        if not suite_test or not any(c.left.value.id == loop.target.id for c in suite_test for loop in loops):
            continue
        facts.validates_disabled = not any(isinstance(n, ast.Attribute) and n.attr == "disabled" for n in ast.walk(fn))
        for c in compares:
            if isinstance(c.left, ast.Attribute) and c.left.attr == "backend" and isinstance(c.comparators[0], ast.Name):
                value = runner.bindings.get(c.comparators[0].id)
                if isinstance(value, (ast.Set, ast.List, ast.Tuple)) and all(isinstance(e, ast.Attribute) for e in value.elts):
                    facts.suite_checked_backends = [e.attr.lower() for e in value.elts]
        return


_FLAG_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version"}


def _literal_strings(node: ast.expr | None, bindings: dict[str, ast.expr], depth: int = 0) -> tuple[str, ...] | None:
    """`["a", "b"]`, `("a",)`, `{"a"}`, a module name bound to one, `sorted(...)`/`list(...)`/`frozenset(...)` of one."""
    if node is None or depth > 5:
        return None
    if isinstance(node, ast.Name) and node.id in bindings:
        return _literal_strings(bindings[node.id], bindings, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("sorted", "list", "tuple", "set", "frozenset") \
            and len(node.args) == 1 and not node.keywords:
        return _literal_strings(node.args[0], bindings, depth + 1)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return tuple(values) if len(values) == len(node.elts) else None
    return None


def read_options(facts: RunnerFacts, runner: _Module) -> None:
    """Every `<parser>.add_argument("--flag", ...)` call in the runner module's functions and
    top-level statements. Module-level assignments are not walked: the suite inventory is one, and
    it can hold hundreds of thousands of nodes."""
    if runner.tree is None:
        return
    options: dict[str, RunnerOption] = {}
    statements = [s for s in runner.tree.body if not isinstance(s, (ast.Assign, ast.AnnAssign))]
    for node in (n for s in statements for n in ast.walk(s)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--")]
        if not flags:
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        action = keywords.get("action")
        takes_value = not (isinstance(action, ast.Constant) and action.value in _FLAG_ACTIONS)
        choices = _literal_strings(keywords.get("choices"), runner.bindings)
        default = keywords.get("default")
        default = default.value if isinstance(default, ast.Constant) and isinstance(default.value, (int, str)) \
            and not isinstance(default.value, bool) else None
        for flag in flags:
            options[flag] = RunnerOption(flag, takes_value, choices, default)
    facts.options = options or None


_REPORTERS = ("print", "warnings.warn", "logger.warning", "logging.warning", "log.warning", "logger.warn")


def read_unknown_suite_policy(facts: RunnerFacts, runner: _Module) -> None:
    """`if suite not in valid_suites: print("Warning: Unknown suite ...")` with no raise, in a
    runner with no validation that rejects (read_validation found none): the runner runs an
    unknown suite that a job names."""
    if runner.tree is None or facts.validates_disabled is not None:
        return
    for fn in runner.functions.values():
        for node in ast.walk(fn):
            if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
                    and isinstance(node.test.ops[0], ast.NotIn)):
                continue
            left = node.test.left
            name = left.id if isinstance(left, ast.Name) else left.attr if isinstance(left, ast.Attribute) else ""
            if "suite" not in name:
                continue
            body = [n for stmt in node.body for n in ast.walk(stmt)]
            if any(isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and _dotted(n.func) in ("sys.exit", "exit")) for n in body):
                return  # it rejects
            if any(isinstance(n, ast.Call) and _dotted(n.func) in _REPORTERS for n in body):
                facts.unknown_suite_warns = f"{runner.path}:{node.lineno}"
                return


def read_runner(runner_path: str, runner_tree: ast.Module | None, register_path: str, register_tree: ast.Module | None, keyword_only: set[str]) -> RunnerFacts:
    facts = RunnerFacts()
    runner = _Module(runner_path, runner_tree)
    register = _Module(register_path, register_tree)
    read_discovery(facts, runner, register)
    read_register_module(facts, register, keyword_only)
    read_validation(facts, runner)
    read_options(facts, runner)
    read_unknown_suite_policy(facts, runner)
    return facts
