"""What the target repository itself says, read statically from its own source (never executed).

- the register functions and the keywords they accept (tests/ci/ci_register.py),
- the suite inventory: the CI_SUITES dict(s) keyed by HWBackend.X (tests/ci/run_suite.py),
- the known labels (KNOWN_LABELS in tests/ci/labels.py).
Values are resolved as far as a careful reader can: list/tuple literals, module-level names bound
to them, list(NAME), tuple(NAME), [*A, *B] and A + B. Anything else is a REG901 finding, and the
part that could not be read is marked unknown so no rule fails every registration because of it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from checks.config import Config
from checks.model import Backend, Finding, Span
from checks.rules import make_finding
from checks.source import decode_source, node_span

REGISTER_FUNCTIONS = {"register_cpu_ci": Backend.CPU, "register_cuda_ci": Backend.CUDA, "register_rocm_ci": Backend.ROCM}


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

    def suite_names(self, backend: Backend) -> set[str]:
        return set(self.suites.get(backend, {}))

    def owners(self, name: str) -> list[Backend]:
        return [b for b, suites in self.suites.items() if name in suites]

    def find_suite(self, name: str) -> Suite | None:
        for suites in self.suites.values():
            if name in suites:
                return suites[name]
        return None


def _parse_module(path: str, data: bytes | None, contract: Contract, what: str) -> tuple[ast.Module | None, list[str]]:
    if data is None:
        return None, []
    text, error = decode_source(data)
    if text is None:
        contract.findings.append(make_finding("REG901", path, Span.at_line(1), f"cannot read {what}: {error}"))
        return None, []
    try:
        return ast.parse(text, filename=path), text.split("\n")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 1
        contract.findings.append(make_finding("REG901", path, Span.at_line(line), f"cannot read {what}: {exc.__class__.__name__}: {getattr(exc, 'msg', exc)}"))
        return None, []


def _module_bindings(tree: ast.Module) -> dict[str, ast.expr]:
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


class Unresolvable(Exception):
    def __init__(self, node: ast.AST, why: str):
        super().__init__(why)
        self.node = node
        self.why = why


def resolve_strings(node: ast.expr, bindings: dict[str, ast.expr], _seen: frozenset[str] = frozenset()) -> list[ast.Constant]:
    """The string constants a sequence expression evaluates to, resolved statically."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out: list[ast.Constant] = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                out.extend(resolve_strings(elt.value, bindings, _seen))
            elif isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                out.append(elt)
            else:
                raise Unresolvable(elt, "an element that is not a string literal")
        return out
    if isinstance(node, ast.Dict):  # a dict's keys (KNOWN_LABELS = {"label": "description"})
        out = []
        for key in node.keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.append(key)
            else:
                raise Unresolvable(key if key is not None else node, "a key that is not a string literal")
        return out
    if isinstance(node, ast.Name):
        if node.id in _seen:
            raise Unresolvable(node, f"`{node.id}` refers to itself")
        if node.id not in bindings:
            raise Unresolvable(node, f"`{node.id}` is not bound at module level in this file")
        return resolve_strings(bindings[node.id], bindings, _seen | {node.id})
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return resolve_strings(node.left, bindings, _seen) + resolve_strings(node.right, bindings, _seen)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "tuple", "set", "frozenset", "sorted")
        and len(node.args) == 1
        and not node.keywords
    ):
        return resolve_strings(node.args[0], bindings, _seen)
    raise Unresolvable(node, f"`{ast.unparse(node)[:60]}` is not a literal the inventory can be read from")


def _backend_key(key: ast.expr | None) -> Backend | None:
    # HWBackend.ROCM, or a bare string "rocm" in simpler layouts
    if isinstance(key, ast.Attribute):
        name = key.attr
    elif isinstance(key, ast.Constant) and isinstance(key.value, str):
        name = key.value
    else:
        return None
    try:
        return Backend(name.lower())
    except ValueError:
        return None


def _comment_for(lines: list[str], node: ast.Constant) -> str:
    """The comment that names a suite's consumer: `# ...` lines right above the entry, or trailing it."""
    comments = []
    i = node.lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        comments.insert(0, lines[i].strip().lstrip("#").strip())
        i -= 1
    line = lines[node.lineno - 1] if node.lineno - 1 < len(lines) else ""
    if node.end_lineno == node.lineno and "#" in line[node.end_col_offset :]:
        comments.append(line[node.end_col_offset :].split("#", 1)[1].strip())
    return " ".join(c for c in comments if c)


def read_inventory(path: str, data: bytes | None, variables: list[str], contract: Contract) -> None:
    tree, lines = _parse_module(path, data, contract, "the suite inventory")
    if tree is None:
        if data is None:
            contract.findings.append(make_finding("REG901", path, Span.at_line(1), f"the suite inventory {path} does not exist: suite names are not checked"))
        return
    bindings = _module_bindings(tree)
    found_any = False
    for variable in variables:
        value = bindings.get(variable)
        if value is None:
            contract.findings.append(make_finding("REG901", path, Span.at_line(1), f"{path} binds no `{variable}` at module level (paths.suites_variables)"))
            continue
        if isinstance(value, ast.Name) and value.id in bindings:
            value = bindings[value.id]
        if not isinstance(value, ast.Dict):
            contract.findings.append(make_finding("REG901", path, node_span(value, lines), f"`{variable}` is not a dict literal keyed by HWBackend: the inventory cannot be read statically"))
            contract.partial_backends.update(Backend)
            continue
        found_any = True
        for key, entries in zip(value.keys, value.values):
            backend = _backend_key(key)
            if backend is None:
                span = node_span(key if key is not None else entries, lines)
                contract.findings.append(make_finding("REG901", path, span, f"a key of `{variable}` is not HWBackend.CPU/CUDA/ROCM: its suites are not read"))
                continue
            suites = contract.suites.setdefault(backend, {})
            try:
                try:
                    constants = resolve_strings(entries, bindings)
                except RecursionError:
                    raise Unresolvable(entries, "the expression nests too deeply") from None
            except Unresolvable as exc:
                contract.partial_backends.add(backend)
                contract.findings.append(
                    make_finding("REG901", path, node_span(exc.node, lines), f"the {backend.value} suites of `{variable}` cannot be read statically: {exc.why}; unknown-suite checks for {backend.value} are skipped")
                )
                continue
            for const in constants:
                suites.setdefault(const.value, Suite(const.value, backend, path, node_span(const, lines), _comment_for(lines, const)))
    contract.inventory_known = found_any


def read_labels(path: str, data: bytes | None, variable: str, contract: Contract) -> None:
    tree, lines = _parse_module(path, data, contract, "the known labels")
    if tree is None:
        return  # no labels module: label membership is not checked
    value = _module_bindings(tree).get(variable)
    if value is None:
        contract.findings.append(make_finding("REG901", path, Span.at_line(1), f"{path} binds no `{variable}`: labels are not checked"))
        return
    try:
        try:
            contract.labels = frozenset(c.value for c in resolve_strings(value, _module_bindings(tree)))
        except RecursionError:
            raise Unresolvable(value, "the expression nests too deeply") from None
    except Unresolvable as exc:
        contract.findings.append(make_finding("REG901", path, node_span(exc.node, lines), f"`{variable}` cannot be read statically: {exc.why}; labels are not checked"))


def read_signatures(path: str, data: bytes | None, contract: Contract) -> None:
    tree, _lines = _parse_module(path, data, contract, "the register functions")
    if tree is None:
        return  # keep the default contract (_default_signature: miles' register signature)
    found: dict[str, Signature] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in REGISTER_FUNCTIONS:
            a = stmt.args
            positional = tuple(p.arg for p in a.posonlyargs + a.args)
            keyword_only = tuple(p.arg for p in a.kwonlyargs)
            n_defaults = len(a.defaults)
            required = set(positional[: len(positional) - n_defaults] if n_defaults else positional)
            required |= {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None}
            found[stmt.name] = Signature(stmt.name, REGISTER_FUNCTIONS[stmt.name], positional, keyword_only, frozenset(required), a.kwarg is not None)
    if found:
        # A repository without register_rocm_ci (older layouts) must not accept it silently.
        contract.signatures = found


def read_contract(tree, config: Config) -> Contract:
    contract = Contract()
    p = config.paths
    read_signatures(p.register_module, tree.read(p.register_module), contract)
    read_inventory(p.suites_module, tree.read(p.suites_module), p.suites_variables, contract)
    read_labels(p.labels_module, tree.read(p.labels_module), p.labels_variable, contract)
    return contract
