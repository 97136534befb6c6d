"""The architecture, as the import graph shows it (docs/architecture.md draws the same picture).

Every module of app.py, bot/ and checks/ is read with `ast` (never imported), and every import
in it, at top level or inside a function, is an edge; so is every module it loads by name
(`loaded_by_name`: a registry's list of module names, an entry point "module:attribute", a
`pkgutil` walk that loads what it finds). Two properties are kept:

- no import circle: no module reaches itself through imports, however deep;
- imports only point down the roles of ROLES, which name packages (and the top-level modules of
  checks/), never a module carved out of a package: `checks/` (the analysis library, also the
  command line's) knows nothing of the App, and inside it the foundation comes first, then the
  rules applied while reading, the configuration, the workflows, the target's contract and plans,
  scanning, calibration, fixes and the rules' checks, the registry that loads every rule, then
  reporting and the check itself; in `bot/`, infrastructure (settings, logging, metrics, payloads)
  knows only the library; the adapters (the store, the GitHub client) know infrastructure; the
  worker knows the adapters; the web process may hand work to the worker (enqueue, the embedded
  worker of the single-process mode) but the worker never reaches into the web; the command line
  and app.py sit on top.

A new module must be given a role here; that is the point at which its place is decided.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# role -> the module names (a name covers its submodules; the longest name wins) that play it.
# Listed from the bottom up: a role may import the roles above it in this list, never below.
ROLES: dict[str, tuple[str, ...]] = {
    # checks/: the analysis library (also the command line's); it knows nothing of the App.
    # A finding is made with its rule's FindingMaker (checks/findings.py); checks/ruleset names the
    # rules from their file names without loading them (the catalogue the readers below need)
    "library: foundation": ("checks", "checks.model", "checks.findings", "checks.source", "checks.wording",
                            "checks.ruleset"),
    # the rules the readers apply as they read (they call their functions): REG001-003 the scanner,
    # REG005 the suppression comments, REG017 and REG901 the contract's and the workflows' readers,
    # REG900 the configuration loader, REG902 the limits, whose Budget applies it as a read hits a cap
    "library: the rules applied while reading": ("checks.ruleset.reading", "checks.limits"),
    "library: configuration": ("checks.config",),
    # GitHub Actions workflows interpreted: expressions, matrices, reusable jobs, images
    "library: workflows": ("checks.workflows",),
    # the runner's contract, suites, and how each suite runs (contract + workflows): the run plans
    "library: the target's contract": ("checks.target",),
    "library: scanning": ("checks.scanning",),
    "library: calibration": ("checks.calibration",),
    "library: fixes": ("checks.fixing",),
    # a rule module holds its docs, messages and check (checks.ruleset.* below), and facts.py what
    # one check hands every rule
    "library: rules' checks": ("checks.ruleset.*", "checks.introduced"),
    # the registry loads every rule by name (checks/rules.py walks checks/ruleset and its reading/),
    # so it sits above them all; docs/rules.md and SARIF rule help are generated from it
    "library: the rule registry": ("checks.rules", "checks.rule_docs"),
    "library: reporting": ("checks.reporting",),
    "library: the check": ("checks.engine",),
    # bot/: the App
    "infrastructure": ("bot", "bot.infra"),
    "adapters": ("bot.store", "bot.github"),
    # below the worker and on-demand, which both use them: stored durations (ingest, query, export,
    # the file formats), the tree sources and the bounded analysis
    "services": ("bot.durations", "bot.analysis"),
    # on-demand's stages (request, dispatch, completion, housekeeping) use the services; the worker's
    # handlers call them, never the other way round
    "on-demand": ("bot.ondemand",),
    "worker": ("bot.worker",),
    "web": ("bot.web",),
    "command line": ("bot.cli", "bot.commands"),
    "entry point": ("app",),
}
ORDER = list(ROLES)

# The one sanctioned exception, and why: the web process of the single-process mode starts the
# embedded worker and hands it deliveries (the queue), so the web may import the worker (it sits
# above it in ORDER anyway); nothing else crosses downward.

def _modules() -> dict[str, Path]:
    paths = [ROOT / "app.py", *ROOT.glob("bot/**/*.py"), *ROOT.glob("checks/**/*.py")]
    found = {}
    for path in paths:
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the project's modules it imports (the nearest existing module of each name)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges.update(resolve(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for alias in node.names:
                    edges.add(resolve(f"{base}.{alias.name}") or resolve(base))
        edges.update(loaded_by_name(tree, module, modules))
        edges.discard(None)
        edges.discard(module)
        graph[module] = edges
    return graph


_ENTRY_POINT = re.compile(r"^([A-Za-z_][\w.]*):[A-Za-z_]\w*$")  # "module:attribute"
_BY_NAME = {"import_module", "__import__"}
_WALKS = {"iter_modules", "walk_packages"}


def _imported_names(tree: ast.Module, module: str, modules) -> dict[str, str]:
    """local name -> the project package or module an import statement binds it to."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    names[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _loop_packages(tree: ast.Module, variable: str, packages: dict[str, str]) -> list[str]:
    """The imported packages a `for variable in (a, b)` (statement or comprehension) runs over."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) and node.target.id == variable:
            if isinstance(node.iter, (ast.Tuple, ast.List)):
                out += [packages[e.id] for e in node.iter.elts if isinstance(e, ast.Name) and e.id in packages]
    return out


def _submodules(package: str, modules, *, deep: bool) -> set[str]:
    return {m for m in modules if m.startswith(package + ".") and (deep or "." not in m[len(package) + 1:])}


def loaded_by_name(tree: ast.Module, module: str, modules) -> set[str]:
    """The project modules `module` loads by name rather than by an import statement:

    - in a module that imports by name (`importlib.import_module`, `__import__`), every string that
      names a project module (a registry's list: routing.HANDLER_MODULES);
    - anywhere, every "module:attribute" string naming a project module (an entry point loaded by
      name: the command line's SUBCOMMANDS, the analysis child's ENGINE);
    - in a module that imports by name, a `pkgutil.iter_modules` / `walk_packages` walk of a
      package's `__path__` (its own, an imported package's, or a loop's over imported packages):
      every module of the package (the rule registry's walk of checks/ruleset and its reading/);
      a walk this reader cannot follow fails, so that no registry is left unseen.
    """
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    imports_by_name = any(_callee(call) in _BY_NAME for call in calls)
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    out = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docstrings:
            continue
        entry = _ENTRY_POINT.match(node.value)
        if entry and entry.group(1) in modules:
            out.add(entry.group(1))
        elif imports_by_name and node.value in modules:
            out.add(node.value)
    packages = _imported_names(tree, module, modules)
    for call in calls:
        if _callee(call) not in _WALKS or not imports_by_name:
            continue  # a walk that only lists names loads nothing (checks/ruleset.rule_names)
        arg = call.args[0] if call.args else None
        if isinstance(arg, ast.Name) and arg.id == "__path__":
            package = module
        elif isinstance(arg, ast.Attribute) and arg.attr == "__path__" and isinstance(arg.value, ast.Name) and arg.value.id in packages:
            package = packages[arg.value.id]
        elif isinstance(arg, ast.Attribute) and arg.attr == "__path__" and isinstance(arg.value, ast.Name):
            # `for package in (a, b): pkgutil.iter_modules(package.__path__)`: every package the module imports
            # that the loop variable runs over; read as every package named in the module's imports
            walked = _loop_packages(tree, arg.value.id, packages)
            if not walked:
                raise AssertionError(f"{module}:{call.lineno}: a pkgutil walk this reader cannot follow")
            for package in walked:
                out.update(_submodules(package, modules, deep=_callee(call) == "walk_packages"))
            continue
        else:
            raise AssertionError(f"{module}:{call.lineno}: a pkgutil walk this reader cannot follow")
        out.update(_submodules(package, modules, deep=_callee(call) == "walk_packages"))
    return out


def role_of(module: str) -> str | None:
    best = None
    for role, names in ROLES.items():
        for name in names:
            # "pkg.*" names the package's submodules but not the package itself
            matches = module.startswith(name[:-1]) if name.endswith(".*") else (module == name or module.startswith(name + "."))
            if matches and (best is None or len(name) > len(best[1])):
                best = (role, name)
    return best[0] if best else None


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_import_circle():
    assert import_circles(import_graph()) == []


def _synthetic_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """import_graph's edges for made-up modules (name -> source; a package's name ends in .__init__)."""
    modules = {name.removesuffix(".__init__"): name for name in sources}
    graph = {}
    for name, text in sources.items():
        module = name.removesuffix(".__init__")
        tree = ast.parse(text)
        edges = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        edges |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                  for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        graph[module] = (edges | loaded_by_name(tree, module, modules)) & set(modules) - {module}
    return graph


def test_the_modules_a_registry_loads_by_name_are_edges():
    # a router that loads its handlers by name, a handler that imports the router back: a circle
    # only the names show; an entry point "module:attribute" anywhere; a pkgutil walk of a package
    sources = {
        "app.routing": ("import importlib\n"
                        "HANDLERS = ('app.handlers.one', 'app.handlers.two')\n"
                        "def build():\n    return [importlib.import_module(n) for n in HANDLERS]\n"),
        "app.handlers.__init__": "",
        "app.handlers.one": "def handle():\n    from app.routing import build\n",
        "app.handlers.two": "",
        "app.cli": "COMMANDS = {'run': 'app.handlers.two:main', 'docs': 'app.routing is a module, not an entry point'}\n",
        "app.rules.__init__": "import pkgutil\ndef names():\n    return [m.name for m in pkgutil.iter_modules(__path__)]\n",
        "app.rules.r1": "",
        "app.rules.sub.__init__": "",
        "app.rules.sub.r2": "",
        "app.registry": ("import importlib, pkgutil\nfrom app import rules\nfrom app.rules import sub\n"
                         "def load():\n    return [importlib.import_module(m.name) for package in (rules, sub)\n"
                         "            for m in pkgutil.iter_modules(package.__path__)]\n"),
        "app.walker.__init__": "import importlib, pkgutil\nMODS = [importlib.import_module(m.name) for m in pkgutil.walk_packages(__path__)]\n",
        "app.walker.a": "",
        "app.walker.b.__init__": "",
        "app.walker.b.c": "",
    }
    graph = _synthetic_graph(sources)
    assert graph["app.routing"] == {"app.handlers.one", "app.handlers.two"}
    assert graph["app.cli"] == {"app.handlers.two"}
    assert graph["app.rules"] == set()  # a walk that only lists names loads nothing
    assert graph["app.registry"] == {"app.rules", "app.rules.r1", "app.rules.sub", "app.rules.sub.r2"}
    assert graph["app.walker"] == {"app.walker.a", "app.walker.b", "app.walker.b.c"}
    assert import_circles(graph) == [["app.handlers.one", "app.routing"]]


def test_a_registry_walk_that_cannot_be_read_fails():
    walk = "import importlib, pkgutil\nMODS = [importlib.import_module(m.name) for m in pkgutil.iter_modules(['somewhere'])]\n"
    try:
        _synthetic_graph({"app.loader": walk})
    except AssertionError as exc:
        assert "cannot follow" in str(exc)
    else:
        raise AssertionError("an unreadable walk was let through")


def test_the_circle_finder_finds_a_circle():
    # the property above is only as good as the finder: a -> b -> c -> a is one circle, d is not in it
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_circles(graph) == [["a", "b", "c"]]


def test_every_module_has_a_role():
    assert [m for m in import_graph() if role_of(m) is None] == []


def test_imports_point_down_the_roles():
    upward = []
    for module, imported in sorted(import_graph().items()):
        role = role_of(module)
        for target in sorted(imported):
            target_role = role_of(target)
            if ORDER.index(target_role) > ORDER.index(role):
                upward.append(f"{module} ({role}) imports {target} ({target_role})")
    assert upward == []


def test_an_upward_import_is_seen():
    # the checker on a made-up edge: the library importing the store is refused
    assert role_of("checks.scanning.registrations") == "library: scanning"
    assert role_of("checks.ruleset.reg010_unknown_suite") == "library: rules' checks"
    assert role_of("checks.ruleset") == "library: foundation"
    assert role_of("checks.ruleset.reading.reg001_unparsable_file") == "library: the rules applied while reading"
    assert role_of("checks.workflows.expressions") == "library: workflows"
    assert ORDER.index(role_of("checks.rules")) > ORDER.index(role_of("checks.ruleset.reg030_suite_over_budget"))
    assert role_of("bot.worker.handlers.rocm_runs") == "worker"
    assert ORDER.index(role_of("bot.store.db")) > ORDER.index(role_of("checks.engine"))  # the library never imports the store


# -- one file per rule: a finding is made only in its rule's module -----------------------------
# A rule's docs, messages and check are one module (checks/ruleset/regNNN_*.py); a reader that
# applies a rule while reading calls that module's functions. So a finding made with a literal
# rule code (`make_finding("REG002", ...)`, `Finding(rule="REG002", ...)`, or through a function
# that passes its own parameter on as the code, like a reader's `self.finding(code, ...)`) is made
# in that rule's module and nowhere else.

FINDING_MAKERS = ("make_finding", "Finding", "FindingMaker")  # checks/rules.py, checks/model.py, checks/findings.py
_RULE_CODE = re.compile(r"REG\d{3}")
_RULE_MODULE = re.compile(r"checks\.ruleset\.(?:reading\.)?(reg\d{3})_\w+$")


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _code_argument(call: ast.Call) -> ast.expr | None:
    """What a finding maker is given as the rule code: its first positional, or `rule=`/`code=`."""
    if call.args and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return next((kw.value for kw in call.keywords if kw.arg in ("rule", "code")), None)


def finding_makers(trees) -> set[str]:
    """FINDING_MAKERS, and (by name, to any depth) every function that passes one of its own
    parameters on to one of them as the rule code."""
    makers = set(FINDING_MAKERS)
    changed = True
    while changed:
        changed = False
        for tree in trees:
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name in makers:
                    continue
                params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
                for call in ast.walk(fn):
                    if isinstance(call, ast.Call) and _callee(call) in makers:
                        arg = _code_argument(call)
                        if isinstance(arg, ast.Name) and arg.id in params:
                            makers.add(fn.name)
                            changed = True
                            break
    return makers


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "..."` bindings (`CODE = "REG010"`, `LIMIT_RULE = "REG902"`)."""
    out = {}
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        value = getattr(stmt, "value", None)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            out.update((t.id, value.value) for t in targets if isinstance(t, ast.Name))
    return out


def findings_outside_their_rule(sources: dict[str, str]) -> list[str]:
    """module name -> source: each finding made with a literal rule code outside that rule's module."""
    trees = {module: ast.parse(text) for module, text in sources.items()}
    makers = finding_makers(trees.values())
    out = []
    for module, tree in sorted(trees.items()):
        own = _RULE_MODULE.match(module)
        constants = _string_constants(tree)
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and _callee(call) in makers):
                continue
            arg = _code_argument(call)
            literal = (arg.value if isinstance(arg, ast.Constant) else
                       constants.get(arg.id) if isinstance(arg, ast.Name) else None)
            if isinstance(literal, str) and _RULE_CODE.fullmatch(literal) and not (own and own.group(1) == literal.lower()):
                out.append(f"{module}:{call.lineno} makes a {literal} finding ({_callee(call)})")
    return out


def _sources() -> dict[str, str]:
    return {module: path.read_text(encoding="utf-8") for module, path in _modules().items()}


def test_every_finding_is_made_in_its_rules_module():
    assert findings_outside_their_rule(_sources()) == []


def test_no_module_points_to_its_rule_elsewhere():
    # IMPLEMENTED_IN named the code that checked a rule when that was not its module: gone
    defined = [module for module, text in _sources().items()
               if any(isinstance(t, ast.Name) and t.id == "IMPLEMENTED_IN"
                      for node in ast.walk(ast.parse(text)) if isinstance(node, (ast.Assign, ast.AnnAssign))
                      for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    assert defined == []
    from checks.rules import RULES
    from checks.rules import rule_modules

    assert sorted(m.CODE for m in rule_modules()) == sorted(RULES)
    assert [m.__name__ for m in rule_modules() if hasattr(m, "IMPLEMENTED_IN")] == []


def test_a_finding_made_outside_its_rule_is_seen():
    # the scan on made-up modules: a reader that makes a rule's finding itself is refused, directly,
    # through a helper that passes the code on (two deep), by keyword, or through a named constant
    reader = (
        "from checks.rules import make_finding\n"
        "from checks.model import Finding\n"
        "LIMIT_RULE = 'REG902'\n"
        "def _at(code, path, message):\n"
        "    return make_finding(code, path, None, message)\n"
        "class Reader:\n"
        "    def finding(self, code, node, message, **kw):\n"
        "        self.out.append(_at(code, self.path, message))\n"
        "    def run(self):\n"
        "        self.finding('REG002', None, 'rejected')\n"
        "        self.out.append(make_finding('REG001', 'a.py', None, 'does not parse'))\n"
        "        self.out.append(Finding(rule='REG003', file='a.py'))\n"
        "        self.out.append(make_finding(LIMIT_RULE, 'a.py', None, 'limit'))\n"
        "        self.out.append(make_finding(self.code, 'a.py', None, 'not a literal: not judged here'))\n"
    )
    rule = (
        "CODE = 'REG001'\n"
        "def unparsable(path):\n"
        "    from checks.rules import make_finding\n"
        "    return [make_finding(CODE, path, None, 'm'), make_finding('REG001', path, None, 'm'),\n"
        "            make_finding('REG002', path, None, 'another rule')]\n"
    )
    found = findings_outside_their_rule({"checks.scanning.reader": reader, "checks.ruleset.reading.reg001_unparsable_file": rule})
    assert sorted(found) == [
        "checks.ruleset.reading.reg001_unparsable_file:5 makes a REG002 finding (make_finding)",
        "checks.scanning.reader:10 makes a REG002 finding (finding)",
        "checks.scanning.reader:11 makes a REG001 finding (make_finding)",
        "checks.scanning.reader:12 makes a REG003 finding (Finding)",
        "checks.scanning.reader:13 makes a REG902 finding (make_finding)",
    ]
    assert {"_at", "finding"} <= finding_makers([ast.parse(reader)])
