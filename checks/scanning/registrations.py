"""Reading registrations out of one test file, exactly as the target's runner reads them.

The runner collects top-level expression statements that call a register function by its bare
name, and raises on anything it cannot take (REG002). Calls it silently skips are REG003. This
module reads; the rules applied while it reads (REG001, REG002, REG003) are their own modules'
functions (checks/ruleset/reg00N_*.py), which it calls as it goes.

Speed: a file that never names a register function cannot hold a registration, so it is not
parsed at all; a file that does is parsed once with Python's own `ast` (what the runner pays),
never with libcst (fixes re-parse only the one statement they change).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from checks.target.contract import REGISTER_FUNCTIONS, Contract, Signature
from checks.limits import FILE_CHECKS, Budget
from checks.model import Argument, Backend, Finding, Registration, Span
from checks.ruleset.reading import reg001_unparsable_file as reg001
from checks.ruleset.reading import reg002_rejected_registration as reg002
from checks.ruleset.reading import reg003_invisible_registration as reg003
from checks.source import decode_source, node_span, source_segment
from checks.scanning.suppressions import marks as suppression_marks

# any register_<backend>_ci: which of them the runner collects is the contract's (Contract.functions)
# A mention of a register function is `\bregister_..._ci\b`. The leading `\b` is checked by hand
# (_mentions): a pattern that starts with a literal is searched for that literal at C speed, one
# that starts with `\b` is tried at every position of the file (ten times slower on sglang's tree).
_MENTION = re.compile(r"register_[a-z][a-z0-9_]*?_ci\b")
_WORD_CHAR = re.compile(r"\w")
# `^if ...` (multi-line) is tried at every position; the literal `if` first, the line start by hand.
_MAIN = re.compile(r"if[ \t(]+__name__[ \t]*==[ \t]*[\"']__main__[\"']")
# The next line that starts a new top-level statement (column 0, not a closing bracket or comment).
_NEXT_TOP_LEVEL = re.compile(r"\n(?=[^\s#)\]}])")
_NUM_GPUS = re.compile(r"^NUM_GPUS[ \t]*(?::[^=\n]*)?=[ \t]*(\d+)[ \t]*(?:#.*)?$", re.MULTILINE)
_GPU_IN_NAME = re.compile(r"(\d+)x?gpu", re.IGNORECASE)
_UNSET = object()


@dataclass
class FileScan:
    path: str
    registrations: list[Registration] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    parsed: bool = False
    unreadable: bool = False  # REG001: nothing in the file can be trusted
    invisible: int = 0  # REG003 calls
    num_gpus_constant: tuple[int, Span] | None = None
    lines: list[str] = field(default_factory=list)
    has_main: bool = True  # a top-level `if __name__ == "__main__":` (sglang's runner requires one)
    suppressions: list = field(default_factory=list)  # [line, column, codes, reason] of each ignore comment


def _mentions(text: str):
    """The matches of `\bregister_[a-z][a-z0-9_]*?_ci\b` in `text`, in order. A match the leading
    word boundary rules out hides no other: it holds only word characters, so none starts inside it."""
    for match in _MENTION.finditer(text):
        at = match.start()
        if at == 0 or _WORD_CHAR.match(text, at - 1) is None:
            yield match


def _has_main_block(text: str) -> bool:
    """A line that starts `if __name__ == "__main__"` (the runner's `^if...` test, multi-line)."""
    return any(m.start() == 0 or text[m.start() - 1] == "\n" for m in _MAIN.finditer(text))


def mentions_register_function(text: str) -> bool:
    # plain substring tests first: C-speed, and most files in a tree fail them
    if "register_" not in text:
        return False
    return next(_mentions(text), None) is not None


def registration_prefix(text: str, also: int = -1) -> str | None:
    """The file up to the end of the top-level statement holding its last register mention (or
    the character at `also`, if that comes later).

    Parsing this prefix yields the same top-level statements as the whole file for everything up
    to that point (a cut inside a string or bracket does not parse, and the caller then parses
    the whole file). None when the prefix is the whole file.
    """
    last = -1
    for match in _mentions(text):  # one linear pass: the last mention of any register function
        last = match.start()
    if last < 0:
        return None
    last = max(last, also)
    cut = _NEXT_TOP_LEVEL.search(text, last)
    if cut is None:
        return None
    return text[: cut.start() + 1]


def _literal(node: ast.expr):
    """The value of a literal the runner accepts, or _UNSET."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant):
        v = node.operand.value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
        return _UNSET
    if isinstance(node, (ast.List, ast.Tuple)):
        values = [_literal(e) for e in node.elts]
        if any(v is _UNSET for v in values):
            return _UNSET
        return values if isinstance(node, ast.List) else tuple(values)
    return _UNSET


class _FileReader:
    def __init__(self, path: str, text: str, contract: Contract, implicit_cpu: bool, exact: bool):
        self.path = path
        self.text = text
        self.exact = exact
        self._whole_tree = None
        self._prefix_allowed = True  # False once something past the prefix was found to matter
        self.contract = contract
        self.implicit_cpu = implicit_cpu
        self.scan = FileScan(path)
        # the functions the runner collects, and the default ones it would not (REG002 "not defined")
        self.functions = {**REGISTER_FUNCTIONS, **contract.functions}

    def add(self, found: Finding | list[Finding] | None) -> None:
        """Keep what a rule applied while reading found (a finding, a list of them, or None)."""
        if isinstance(found, Finding):
            self.scan.findings.append(found)
        elif found:
            self.scan.findings.extend(found)

    def run(self) -> FileScan:
        scan = self.scan
        tree = None
        # exact: the whole file must parse (REG001 anywhere), but only its prefix need be read
        # when nothing past it matters; checked below, and read whole otherwise.
        prefix_of_whole = False
        num_gpus = _NUM_GPUS.search(self.text) if "NUM_GPUS" in self.text else None
        if not self.exact or self._prefix_allowed and self._may_read_prefix_only():
            # read whole, the prefix takes in the NUM_GPUS line too: whether it is a module constant
            prefix = registration_prefix(self.text, num_gpus.start() if num_gpus and self.exact else -1)
            if prefix is not None and (not self.exact or _symtable_accepts(self.text, self.path)):
                try:
                    tree = ast.parse(prefix, filename=self.path)
                    prefix_of_whole = self.exact
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None  # the cut fell inside a string or bracket: read the whole file
        try:
            if tree is None:
                tree = self._whole_tree = ast.parse(self.text, filename=self.path)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            scan.unreadable = True
            self.add(reg001.unparsable(self.path, self.text, exc))
            return scan
        scan.parsed = True
        scan.lines = self.text.split("\n")
        scan.has_main = _has_main_block(self.text)
        aliases: dict[str, str] = {}
        accounted = 0
        for stmt in tree.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name):
                name = stmt.value.func.id
                if name in self.functions:
                    accounted += 1
                    self.read_registration(stmt, stmt.value, name)
                    continue
            if isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if alias.name in self.functions:
                        accounted += 1
                        if alias.asname and alias.asname != alias.name:
                            aliases[alias.asname] = alias.name
                            self.add(reg003.aliased_import(self.path, scan.lines, alias))
        mentions = sum(1 for _ in _mentions(self.text))
        if num_gpus:
            line = self.text.count("\n", 0, num_gpus.start()) + 1
            parsed_to = tree.body[-1].end_lineno if tree.body else 0
            if prefix_of_whole and line > parsed_to:
                return self._read_whole()  # the whole tree says whether this line is a module constant
            if line <= parsed_to and not any(isinstance(st, (ast.Assign, ast.AnnAssign)) and st.lineno == line for st in tree.body):
                num_gpus = None  # the text sits inside a string or a block, not a module constant
        if num_gpus:
            col = num_gpus.start(1) - num_gpus.start() + 1
            scan.num_gpus_constant = (int(num_gpus.group(1)), Span(line, col, line, col + len(num_gpus.group(1))))
        if aliases and not self.exact and len(tree.body) and tree is not self._whole_tree:
            # calls through an alias do not name the function: the prefix may have cut them off
            return self._read_whole()
        # Every mention not accounted for above is a call the runner may skip: find it.
        if aliases or mentions > accounted:
            if prefix_of_whole:
                return self._read_whole()  # REG003 walks the whole module
            invisible = reg003.invisible_calls(self.path, scan.lines, tree, self.functions, aliases)
            scan.invisible += len(invisible)
            self.add(invisible)
        return scan

    def _may_read_prefix_only(self) -> bool:
        """Whether every register function's name has the shape of a mention (`register_x_ci`),
        so that no statement past the last mention can call or import one."""
        return all(_MENTION.fullmatch(name) for name in self.functions)

    def _read_whole(self) -> FileScan:
        """Read again from the whole file's tree: the prefix left something out that matters."""
        self.exact = True
        self._prefix_allowed = False
        self.scan = FileScan(self.path)
        return self.run()

    # -- one registration -------------------------------------------------------------------
    def read_registration(self, stmt: ast.Expr, call: ast.Call, name: str) -> None:
        scan = self.scan
        backend = self.functions[name]
        signature = self.contract.signatures.get(name)
        reg = Registration(
            file=self.path,
            function=name,
            backend=backend,
            span=node_span(call, scan.lines),
            statement_lines=(stmt.lineno, stmt.end_lineno or stmt.lineno),
        )
        scan.registrations.append(reg)
        self.add(reg002.check_function(self.path, scan.lines, call, name, backend, self.contract.signatures, self.implicit_cpu))
        if signature is None:
            signature = Signature(name, backend, ("est_time", "suite"), (), frozenset({"est_time", "suite"}), var_keyword=True)
        for bound in reg002.bind(self.path, scan.lines, call, name, signature, reg.arguments):
            if isinstance(bound, Finding):
                self.add(bound)
            else:
                self.take(reg, *bound)
        template = self.contract.suite_template
        if template is not None and set(template[1]) <= signature.accepted:
            self.compose_suite(reg, call, template)
        self.add(reg002.check_required(self.path, scan.lines, call, reg, signature))
        self.add(reg002.check_values(self.path, reg, self.contract))

    def compose_suite(self, reg: Registration, call: ast.Call, template: tuple[str, tuple[str, ...]]) -> None:
        """sglang since May 2026: `stage=` and `runner_config=` compose the suite
        (`CIRegistry.effective_suite`: `{stage}-test-{runner_config}`) when the call gives both
        and no `suite` (REG002 otherwise)."""
        rejected = reg002.check_composition(self.path, self.scan.lines, call, reg, template)
        if rejected is not None:
            self.add(rejected)
            return
        text, fields = template
        if any(f in reg.arguments for f in fields):  # all of them, as the rule accepted the call
            values = {f: reg.value(f) for f in fields}
            if all(isinstance(v, str) for v in values.values()):
                reg.composed_suite = text.format(**values)

    def take(self, reg: Registration, name: str, value: ast.expr) -> None:
        literal = _literal(value)
        span = node_span(value, self.scan.lines)
        reg.arguments[name] = Argument(name, None if literal is _UNSET else literal, literal is not _UNSET, span, source_segment(self.scan.lines, span))
        self.add(reg002.check_literal(self.path, self.scan.lines, reg.arguments[name], value))


def scan_file(path: str, data: bytes, contract: Contract, *, implicit_cpu: bool = False, exact: bool = True, budget: Budget | None = None) -> FileScan:
    """Registrations and per-file findings (REG001/002/003) of one file.

    exact=True reads the whole file (REG001 anywhere in it, also in a file that names no register
    function): the engine passes it for every file whose findings it reports (each discovered file
    of a whole-tree check, each changed file of a diff). exact=False parses only the part of the
    file that holds registrations and skips files that name no register function: for files read
    only for their registrations (a diff's base, untouched files). A file with more tokens than the `ast_nodes` cap is not parsed: it
    is marked unreadable (no REG004 either) and `budget` gets a REG902 finding.
    """
    text, error = decode_source(data)
    if text is None:
        scan = FileScan(path, unreadable=True)
        scan.findings.append(reg001.undecodable(path, error))
        return scan
    scan = _scan_text(path, text, contract, implicit_cpu=implicit_cpu, exact=exact, budget=budget)
    scan.suppressions = suppression_marks(text)  # `# ci-registrar: ignore[...]` (checks/scanning/suppressions.py)
    return scan


def _scan_text(path: str, text: str, contract: Contract, *, implicit_cpu: bool, exact: bool,
               budget: Budget | None) -> FileScan:
    if (exact or mentions_register_function(text)) and not (budget or Budget()).parse_allowed(text, path, FILE_CHECKS):
        return FileScan(path, unreadable=True)
    if not mentions_register_function(text):
        if exact and not parses(text, path):
            return _FileReader(path, text, contract, implicit_cpu, exact).run()  # REG001, with the parser's own message
        return FileScan(path)
    return _FileReader(path, text, contract, implicit_cpu, exact).run()


def _symtable_accepts(text: str, path: str) -> bool:
    """Whether the symbol-table builder accepts the source: then ast.parse does (see parses)."""
    import symtable

    try:
        symtable.symtable(text, path, "exec")
        return True
    except Exception:  # noqa: BLE001 - any refusal: ast.parse decides
        return False


def parses(text: str, path: str) -> bool:
    """Whether `ast.parse(text)` succeeds, as the runner's parse of a discovered file does.

    Asked of the symbol-table builder first: it runs the same parser into the same C syntax tree
    but builds no Python objects from it, a third cheaper than ast.parse on miles' tests. When it
    accepts, the parser did (the tree it builds is never deeper than the parser's own stack);
    when it refuses (a syntax error, or a rule of its own such as `nonlocal` at module level,
    which ast.parse accepts), ast.parse itself decides.
    """
    if _symtable_accepts(text, path):
        return True
    try:
        ast.parse(text, filename=path)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def gpu_count_from_name(path: str) -> int | None:
    match = _GPU_IN_NAME.search(path.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


def implicit_registration(path: str) -> Registration:
    """The runner's registration of a tests/fast file that declares none: CPU, stage-a-cpu, est_time 1."""
    span = Span.at_line(1)
    reg = Registration(file=path, function="register_cpu_ci", backend=Backend.CPU, span=span, statement_lines=(1, 1), implicit=True)
    reg.arguments["est_time"] = Argument("est_time", 1, True, span, "1")
    reg.arguments["suite"] = Argument("suite", "stage-a-cpu", True, span, '"stage-a-cpu"')
    return reg
