"""What the target repository itself says, read statically from its own source (never executed).

- the register functions and the keywords they accept (tests/ci/ci_register.py),
- the suite inventory: the CI_SUITES dict(s) keyed by HWBackend.X (tests/ci/run_suite.py),
- the known labels (KNOWN_LABELS in tests/ci/labels.py).
Values are resolved as far as a careful reader can: list/tuple literals, module-level names bound
to them, list(NAME), tuple(NAME), [*A, *B], A + B and, in the inventory dict, `{**A, KEY: ...}`
(A a dict bound at module level; later keys win, as at run time). Anything else is a REG901
finding, and the part that could not be read is marked unknown so no rule fails every
registration because of it.

Resolution is bounded (checks/limits.py `resolved_names`): every string produced and every
expression visited costs one, so `A1 = A0 + A0 ... A40` stops after the cap with a REG902 finding
instead of expanding 2**40 names.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, field

from checks.config.schema import Config, Paths
from checks.limits import Budget, count_tokens
from checks.model import code, Backend, Finding, Span
from checks.target.runner import RunnerFacts, Source, anchor_sources, module_bindings as _module_bindings, read_runner
from checks.ruleset.reading import reg901_unreadable_contract as reg901
from checks.source import decode_source, node_span
from checks.target.suites import NearNames

# The register functions when the register module cannot be read (radixark/miles' layout). A
# readable module declares its own: every top-level `def register_<name>_ci`, its backend from the
# module's function -> HWBackend map (`_REGISTER_BACKEND_MAP`, `REGISTER_MAPPING`), else its name.
REGISTER_FUNCTIONS = {"register_cpu_ci": Backend.CPU, "register_cuda_ci": Backend.CUDA, "register_rocm_ci": Backend.ROCM}
REGISTER_NAME = re.compile(r"register_([a-z][a-z0-9_]*?)_ci")


@dataclass(frozen=True)
class Signature:
    """A register function's parameters as the repository declares them."""

    function: str
    backend: Backend
    positional: tuple[str, ...]  # may be passed by position, in order
    keyword_only: tuple[str, ...]
    required: frozenset[str]
    var_keyword: bool = False  # **kwargs in the signature: any keyword accepted

    @property
    def accepted(self) -> frozenset[str]:
        return frozenset(self.positional) | frozenset(self.keyword_only)


def _default_signature(function: str, backend: Backend) -> Signature:
    # radixark/miles' tests/ci/ci_register.py: est_time: float, suite: str, *, labels, nightly=False, disabled=None
    return Signature(function, backend, ("est_time", "suite"), ("labels", "nightly", "disabled"), frozenset({"est_time", "suite"}))


DEFAULT_SIGNATURES = {name: _default_signature(name, backend) for name, backend in REGISTER_FUNCTIONS.items()}


@dataclass(frozen=True)
class Suite:
    name: str
    backend: Backend
    file: str
    span: Span
    comment: str  # the comment lines just above the entry (or trailing it): who consumes it


@dataclass
class Contract:
    signatures: dict[str, Signature] = field(default_factory=lambda: dict(DEFAULT_SIGNATURES))
    suites: dict[Backend, dict[str, Suite]] = field(default_factory=dict)
    # backends whose list could not be fully read: REG010 would be guesswork there
    partial_backends: set[Backend] = field(default_factory=set)
    inventory_known: bool = False
    labels: frozenset[str] | None = None  # None: unknown, label membership is not checked
    findings: list[Finding] = field(default_factory=list)
    near: NearNames = field(default_factory=NearNames, compare=False, repr=False)  # bounded did-you-mean searches
    # What the runner does, read from its code (checks/target/runner.py) and resolved against the
    # configuration (`paths`, `validity`): see resolve_validity().
    facts: RunnerFacts = field(default_factory=RunnerFacts, compare=False, repr=False)
    discovery: list[Source] | None = None  # None: the configured roots/pattern (paths.test_roots ...)
    implicit_cpu_roots: list[str] = field(default_factory=lambda: ["tests/fast"])
    unregistered_severity: str = "failure"  # REG004: "warning" where the runner runs collect_tests(sanity_check=False)
    unregistered_configured: bool = False  # validity.unregistered_file says it: per-glob sanity_check does not apply
    est_time_positive: bool = False  # the runner rejects est_time <= 0
    main_block_required: bool = False  # the runner rejects an enabled file without `if __name__ == "__main__":`
    suite_template: tuple[str, tuple[str, ...]] | None = None  # ("{stage}-test-{runner_config}", ("stage", "runner_config"))
    suite_checked_backends: set[Backend] | None = None  # None: every backend's suites are validated
    unknown_suite_when_disabled: str = "warning"  # REG010 on a disabled registration
    unknown_suite_warns: str = ""  # where the runner only warns about an unknown suite (RunnerFacts)
    notes: list[str] = field(default_factory=list)  # what was read from where (for `check --explain`-like output)

    @property
    def functions(self) -> dict[str, Backend]:
        return {name: sig.backend for name, sig in self.signatures.items()}

    def unregistered_severity_of(self, path: str) -> str:
        """REG004's severity for `path`: a runner whose branches glob with different
        `sanity_check=` (sglang in December 2025) rejects an unregistered file only where a strict
        branch discovers it. Otherwise the one severity of the contract."""
        if self.unregistered_configured or not self.discovery:
            return self.unregistered_severity
        matching = [s for s in self.discovery if s.sanity_check is not None and s.matcher()(path)]
        if not matching:
            return self.unregistered_severity
        return "failure" if any(s.sanity_check for s in matching) else "warning"

    def suite_names(self, backend: Backend) -> set[str]:
        return set(self.suites.get(backend, {}))

    def owners(self, name: str) -> list[Backend]:
        return [b for b, suites in self.suites.items() if name in suites]

    def find_suite(self, name: str) -> Suite | None:
        for suites in self.suites.values():
            if name in suites:
                return suites[name]
        return None


def _parse_module(path: str, data: bytes | None, contract: Contract, what: str, budget: Budget | None = None, consequence: str = "") -> tuple[ast.Module | None, list[str]]:
    if data is None:
        return None, []
    text, error = decode_source(data)
    if text is None:
        contract.findings.append(reg901.undecodable(path, what, error))
        return None, []
    if budget is not None and not budget.parse_allowed(text, path, consequence):
        return None, []
    try:
        return ast.parse(text, filename=path), text.split("\n")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        contract.findings.append(reg901.unparsable(path, what, exc))
        return None, []


class Unresolvable(Exception):
    def __init__(self, node: ast.AST, why: str):
        super().__init__(why)
        self.node = node
        self.why = why


class ResolveLimit(Exception):
    """The resolver spent its `resolved_names` budget."""

    def __init__(self, node: ast.AST):
        super().__init__("resolved_names")
        self.node = node


class _Steps:
    """The resolver's budget: strings produced plus expressions visited."""

    def __init__(self, limit: int | None):
        self.left = limit if limit is not None else Budget().limits.resolved_names

    def spend(self, n: int, node: ast.AST) -> None:
        self.left -= n
        if self.left < 0:
            raise ResolveLimit(node)


def resolve_strings(node: ast.expr, bindings: dict[str, ast.expr], _seen: frozenset[str] = frozenset(), *, steps: _Steps | None = None) -> list[ast.Constant]:
    """The string constants a sequence expression evaluates to, resolved statically.

    Raises Unresolvable for what cannot be read, ResolveLimit once the budget is spent.
    """
    steps = steps if steps is not None else _Steps(None)
    steps.spend(1, node)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out: list[ast.Constant] = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                out.extend(resolve_strings(elt.value, bindings, _seen, steps=steps))
            elif isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                steps.spend(1, elt)
                out.append(elt)
            else:
                raise Unresolvable(elt, "an element that is not a string literal")
        return out
    if isinstance(node, ast.Dict):  # a dict's keys (KNOWN_LABELS = {"label": "description"})
        out = []
        for key, _value in _dict_entries(node, bindings, _seen, steps):
            if key is None:
                raise Unresolvable(_value, f"{code('**' + ast.unparse(_value)[:60])} is not a dict literal bound at module level")
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                steps.spend(1, key)
                out.append(key)
            else:
                raise Unresolvable(key, "a key that is not a string literal")
        return out
    if isinstance(node, ast.Name):
        if node.id in _seen:
            raise Unresolvable(node, f"{code(node.id)} refers to itself")
        if node.id not in bindings:
            raise Unresolvable(node, f"{code(node.id)} is not bound at module level in this file")
        return resolve_strings(bindings[node.id], bindings, _seen | {node.id}, steps=steps)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return resolve_strings(node.left, bindings, _seen, steps=steps) + resolve_strings(node.right, bindings, _seen, steps=steps)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "tuple", "set", "frozenset", "sorted")
        and len(node.args) == 1
        and not node.keywords
    ):
        return resolve_strings(node.args[0], bindings, _seen, steps=steps)
    raise Unresolvable(node, f"{code(ast.unparse(node)[:60])} is not a literal the inventory can be read from")


def _deref(node: ast.expr, bindings: dict[str, ast.expr], seen: frozenset[str], steps: _Steps) -> tuple[ast.expr, frozenset[str]]:
    """Follow module-level `NAME = OTHER` bindings to the expression they name."""
    while isinstance(node, ast.Name) and node.id in bindings and node.id not in seen:
        steps.spend(1, node)
        seen = seen | {node.id}
        node = bindings[node.id]
    return node, seen


def _dict_entries(node: ast.Dict, bindings: dict[str, ast.expr], seen: frozenset[str], steps: _Steps) -> list[tuple[ast.expr | None, ast.expr]]:
    """A dict display's (key, value) pairs in order, with `**A` spread in place when A is a dict
    display bound at module level; a spread that cannot be read stays as (None, expression)."""
    out: list[tuple[ast.expr | None, ast.expr]] = []
    for key, value in zip(node.keys, node.values):
        steps.spend(1, value)
        if key is not None:
            out.append((key, value))
            continue
        target, inner_seen = _deref(value, bindings, seen, steps)
        if isinstance(target, ast.Dict):
            out.extend(_dict_entries(target, bindings, inner_seen, steps))
        else:
            out.append((None, value))
    return out


def _backend_key(key: ast.expr | None) -> Backend | None:
    # HWBackend.ROCM, or a bare string "rocm" in simpler layouts
    if isinstance(key, ast.Attribute):
        name = key.attr
    elif isinstance(key, ast.Constant) and isinstance(key.value, str):
        name = key.value
    else:
        return None
    try:
        return Backend(name.lower())  # open: HWBackend.AMD, .NPU, ... each a backend of its own
    except ValueError:
        return None


class _Comments:
    """The comment that names a suite's consumer: `# ...` lines right above the entry, or trailing
    it. Each comment block is read once, whatever the number of entries (or `*A` references) below it."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self._above: dict[int, str] = {}
        self._run_start: list[int] | None = None

    def _block_above(self, lineno: int) -> str:
        if lineno not in self._above:
            if self._run_start is None:
                starts = []
                for i, line in enumerate(self.lines):
                    starts.append((starts[i - 1] if i and starts[i - 1] >= 0 else i) if line.strip().startswith("#") else -1)
                self._run_start = starts
            end = lineno - 2  # the line above, 0-based
            text = ""
            if 0 <= end < len(self.lines) and self._run_start[end] >= 0:
                parts = (self.lines[i].strip().lstrip("#").strip() for i in range(self._run_start[end], end + 1))
                text = " ".join(p for p in parts if p)
            self._above[lineno] = text
        return self._above[lineno]

    def for_node(self, node: ast.Constant) -> str:
        comments = [self._block_above(node.lineno)]
        lines = self.lines
        line = lines[node.lineno - 1] if node.lineno - 1 < len(lines) else ""
        if node.end_lineno == node.lineno and "#" in line[node.end_col_offset :]:
            comments.append(line[node.end_col_offset :].split("#", 1)[1].strip())
        return " ".join(c for c in comments if c)


_INVENTORY_SKIPPED = "the suite inventory is not read: unknown-suite (REG010) and stale-consumer (REG014) checks are skipped"
_LABELS_SKIPPED = "the known labels are not read: label names are not checked"
_SIGNATURES_SKIPPED = "the register functions are not read: the documented signatures are used"


DEFAULT_INVENTORY_VARIABLES = ["CI_SUITES"]


def inventory_variables(bindings: dict[str, ast.expr]) -> list[str]:
    """Module-level dict literals keyed by HWBackend members (or `**` of another): the inventory's
    variables as the module declares them, in source order."""
    return [name for name, node in bindings.items()
            if isinstance(node, ast.Dict) and node.keys
            and all(k is None or (isinstance(k, ast.Attribute) and _backend_key(k) is not None) for k in node.keys)]


def read_inventory(path: str, data: bytes | None, variables: list[str], contract: Contract, budget: Budget | None = None) -> None:
    budget = budget or Budget()
    tree, lines = _parse_module(path, data, contract, "the suite inventory", budget, _INVENTORY_SKIPPED)
    if tree is None:
        if data is None and path not in budget.too_large:
            contract.findings.append(reg901.inventory_missing(path))
        return
    bindings = _module_bindings(tree)
    comments = _Comments(lines)
    steps = _Steps(budget.limits.resolved_names)
    found_any = False
    if list(variables) == DEFAULT_INVENTORY_VARIABLES and not any(v in bindings for v in variables):
        # The default names nothing this module binds: read the dicts the module itself keys by
        # HWBackend (miles before July 2026: PER_COMMIT_SUITES and NIGHTLY_SUITES) rather than check
        # no suite at all. A configured list is taken as it is.
        variables = inventory_variables(bindings) or variables
    for variable in variables:
        value = bindings.get(variable)
        if value is None:
            contract.findings.append(reg901.inventory_unbound(path, variable))
            continue
        try:
            value, seen = _deref(value, bindings, frozenset({variable}), steps)
            entries_in_order = _dict_entries(value, bindings, seen, steps) if isinstance(value, ast.Dict) else None
        except ResolveLimit as exc:
            budget.hit("resolved_names", path, f"{code(variable)} is not read further: {_INVENTORY_SKIPPED}", span=node_span(exc.node, lines))
            contract.partial_backends.update(Backend)
            continue
        if entries_in_order is None:
            contract.findings.append(reg901.inventory_not_a_dict(path, node_span(value, lines), variable))
            contract.partial_backends.update(Backend)
            continue
        found_any = True
        # Later keys win, as when Python builds the dict: `{**BASE, HWBackend.ROCM: [...]}`.
        per_backend: dict[Backend, ast.expr] = {}
        unknown: set[Backend] = set()
        for key, entries in entries_in_order:
            if key is None:
                contract.findings.append(reg901.inventory_unpacked(path, node_span(entries, lines), entries, variable))
                unknown = set(Backend)
                continue
            backend = _backend_key(key)
            if backend is None:
                contract.findings.append(reg901.inventory_key(path, node_span(key, lines), variable))
                continue
            per_backend[backend] = entries
            unknown.discard(backend)
        contract.partial_backends.update(unknown)
        for backend, entries in per_backend.items():
            suites = contract.suites.setdefault(backend, {})
            try:
                try:
                    constants = resolve_strings(entries, bindings, steps=steps)
                except RecursionError:
                    raise Unresolvable(entries, "the expression nests too deeply") from None
            except ResolveLimit as exc:
                contract.partial_backends.add(backend)
                budget.hit("resolved_names", path, f"the {backend.value} suites of {code(variable)} are not read further: unknown-suite checks (REG010) for {backend.value} are skipped", span=node_span(exc.node, lines))
                continue
            except Unresolvable as exc:
                contract.partial_backends.add(backend)
                contract.findings.append(reg901.inventory_backend_unread(path, node_span(exc.node, lines), backend.value, variable, exc.why))
                continue
            for const in constants:
                if const.value not in suites:
                    suites[const.value] = Suite(const.value, backend, path, node_span(const, lines), comments.for_node(const))
    contract.inventory_known = found_any


def read_labels(path: str, data: bytes | None, variable: str, contract: Contract, budget: Budget | None = None) -> None:
    budget = budget or Budget()
    tree, lines = _parse_module(path, data, contract, "the known labels", budget, _LABELS_SKIPPED)
    if tree is None:
        return  # no labels module: label membership is not checked
    value = _module_bindings(tree).get(variable)
    if value is None:
        contract.findings.append(reg901.labels_unbound(path, variable))
        return
    try:
        try:
            contract.labels = frozenset(c.value for c in resolve_strings(value, _module_bindings(tree), frozenset({variable}), steps=_Steps(budget.limits.resolved_names)))
        except RecursionError:
            raise Unresolvable(value, "the expression nests too deeply") from None
    except ResolveLimit as exc:
        budget.hit("resolved_names", path, f"{code(variable)} is not read further: {_LABELS_SKIPPED}", span=node_span(exc.node, lines))
    except Unresolvable as exc:
        contract.findings.append(reg901.labels_unread(path, node_span(exc.node, lines), variable, exc.why))


def read_signatures(path: str, data: bytes | None, contract: Contract, budget: Budget | None = None) -> None:
    tree, _lines = _parse_module(path, data, contract, "the register functions", budget, _SIGNATURES_SKIPPED)
    if tree is None:
        return  # keep the default contract (_default_signature: miles' register signature)
    found: dict[str, Signature] = {}
    mapped = _backend_map(tree)
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and REGISTER_NAME.fullmatch(stmt.name):
            a = stmt.args
            positional = tuple(p.arg for p in a.posonlyargs + a.args)
            keyword_only = tuple(p.arg for p in a.kwonlyargs)
            n_defaults = len(a.defaults)
            required = set(positional[: len(positional) - n_defaults] if n_defaults else positional)
            required |= {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None}
            backend = mapped.get(stmt.name) or Backend(REGISTER_NAME.fullmatch(stmt.name).group(1))
            found[stmt.name] = Signature(stmt.name, backend, positional, keyword_only, frozenset(required), a.kwarg is not None)
    if mapped:
        # The runner collects only the functions its map names (miles: `_REGISTER_BACKEND_MAP`,
        # sglang: `REGISTER_MAPPING`); a `def` the map leaves out is never collected.
        found = {name: sig for name, sig in found.items() if name in mapped}
    if found:
        # A repository without register_rocm_ci (older layouts) must not accept it silently.
        contract.signatures = found


def _backend_map(tree: ast.Module) -> dict[str, Backend]:
    """A module-level dict from register function names to `HWBackend.X` (or a tuple starting
    with it: miles' April `REGISTER_MAPPING = {"register_cpu_ci": (HWBackend.CPU, _CPU_PARAM_ORDER)}`)."""
    out: dict[str, Backend] = {}
    for node in _module_bindings(tree).values():
        if not isinstance(node, ast.Dict) or not node.keys:
            continue
        entries = {}
        for key, value in zip(node.keys, node.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and REGISTER_NAME.fullmatch(key.value)):
                entries = {}
                break
            if isinstance(value, ast.Tuple) and value.elts:
                value = value.elts[0]
            backend = _backend_key(value) if isinstance(value, ast.Attribute) else None
            if backend is None:
                entries = {}
                break
            entries[key.value] = backend
        out.update(entries)
    return out


def _tree_of(tree, path: str, budget: Budget) -> ast.Module | None:
    """The module parsed for the runner facts; a cap hit was reported when the module was read
    for the contract, so here it only means: not read."""
    data = tree.read(path)
    if data is None or len(data) > budget.limits.file_bytes:
        return None
    text, _error = decode_source(data)
    if text is None or (len(text) > budget.limits.ast_nodes and count_tokens(text, budget.limits.ast_nodes) > budget.limits.ast_nodes):
        return None
    try:
        return ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


_DEFAULT_PATHS = Paths()


def resolve_validity(contract: Contract, config: Config) -> None:
    """The runner's behaviour: configuration that differs from the defaults wins, then what the
    code says (contract.facts), then the defaults (radixark/miles' runner of August 2026)."""
    facts, p, v = contract.facts, config.paths, config.validity
    flat_configured = (p.test_roots != _DEFAULT_PATHS.test_roots or p.test_pattern != _DEFAULT_PATHS.test_pattern
                       or p.test_excludes != _DEFAULT_PATHS.test_excludes)
    if p.discovery or flat_configured:
        contract.discovery = None  # engine.discover uses the configuration
        contract.notes.append("discovery: from the configuration")
    elif facts.sources is not None:
        contract.discovery = facts.sources
        contract.notes.append(f"discovery: read from {facts.discovery_where}")
    else:
        contract.notes.append(f"discovery: the default roots ({facts.discovery_problem or 'not read'})")
        if facts.discovery_where:
            # The runner discovers its own way and the engine cannot follow it: the default roots
            # are a guess, so an unregistered file there is at most a warning.
            # A failure, not a warning: which files the runner runs is the one thing every other rule
            # rests on, and a guess that reads nothing would otherwise pass silently.
            line = int(facts.discovery_where.rsplit(":", 1)[1])
            contract.findings.append(reg901.discovery_unread(p.suites_module, line, facts.discovery_problem, p.test_roots, p.test_pattern))
            if v.unregistered_file is None:
                contract.unregistered_severity = "warning"
    if p.implicit_cpu_roots != _DEFAULT_PATHS.implicit_cpu_roots or facts.implicit_cpu_roots is None:
        contract.implicit_cpu_roots = list(p.implicit_cpu_roots)
    else:
        contract.implicit_cpu_roots = list(facts.implicit_cpu_roots)
    if v.unregistered_file is not None:
        contract.unregistered_severity = v.unregistered_file
        contract.unregistered_configured = True
    elif facts.sanity_check is False:
        contract.unregistered_severity = "warning"  # the runner warns and skips the file
    sanity = facts.sanity_check is not False
    contract.est_time_positive = v.est_time_positive if v.est_time_positive is not None else bool(facts.est_time_positive)
    contract.main_block_required = v.main_block_required if v.main_block_required is not None else bool(facts.main_block_required and sanity)
    if v.suite_template is not None:
        fields = tuple(re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", v.suite_template))
        contract.suite_template = (v.suite_template, fields) if fields else None
    else:
        contract.suite_template = facts.suite_template
    checked = v.suite_checked_backends if v.suite_checked_backends is not None else facts.suite_checked_backends
    contract.suite_checked_backends = {Backend(b.lower()) for b in checked} if checked is not None else None
    contract.unknown_suite_warns = facts.unknown_suite_warns
    if v.unknown_suite_when_disabled is not None:
        contract.unknown_suite_when_disabled = v.unknown_suite_when_disabled
    elif facts.validates_disabled:
        contract.unknown_suite_when_disabled = "failure"


def read_contract(tree, config: Config, budget: Budget | None = None) -> Contract:
    """The contract of one revision. REG902 findings for caps hit go to `budget.findings`."""
    budget = budget or Budget()
    contract = Contract()
    p = config.paths
    read_signatures(p.register_module, budget.read(tree, p.register_module, _SIGNATURES_SKIPPED), contract, budget)
    read_inventory(p.suites_module, budget.read(tree, p.suites_module, _INVENTORY_SKIPPED), p.suites_variables, contract, budget)
    read_labels(p.labels_module, budget.read(tree, p.labels_module, _LABELS_SKIPPED), p.labels_variable, contract, budget)
    keyword_only = {k for sig in contract.signatures.values() for k in sig.keyword_only}
    contract.facts = read_runner(p.suites_module, _tree_of(tree, p.suites_module, budget), p.register_module,
                                 _tree_of(tree, p.register_module, budget), keyword_only)
    resolve_validity(contract, config)
    # A tree that is read only at known paths (the App's PR base) has no listing: its relative globs
    # are anchored by engine.discover against the paths it is given, and its discovery is not
    # judged (only the head's is).
    if contract.discovery is not None and getattr(tree, "listed", True):
        paths = list(tree.paths())
        contract.discovery = anchor_sources(contract.discovery, posixpath.dirname(p.suites_module), paths)
        reads_nothing = reg901.discovery_reads_nothing(contract, config, paths)
        if reads_nothing is not None:
            contract.findings.append(reads_nothing)
    return contract
