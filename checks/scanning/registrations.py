"""Reading registrations out of one test file, exactly as the target's runner reads them.

The runner collects top-level expression statements that call a register function by its bare
name, and raises on anything it cannot take (REG002). Calls it silently skips are REG003.

Speed: a file that never names a register function cannot hold a registration, so it is not
parsed at all; a file that does is parsed once with Python's own `ast` (what the runner pays),
never with libcst (fixes re-parse only the one statement they change).
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from dataclasses import dataclass, field

from checks.target.contract import REGISTER_FUNCTIONS, Contract, Signature
from checks.limits import FILE_CHECKS, Budget
from checks.model import code, Argument, Backend, Finding, Registration, Severity, Span
from checks.rules import make_finding
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


def registration_prefix(text: str) -> str | None:
    """The file up to the end of the top-level statement holding its last register mention.

    Parsing this prefix yields the same top-level statements as the whole file for everything up
    to that point (a cut inside a string or bracket does not parse, and the caller then parses
    the whole file). None when the prefix is the whole file.
    """
    last = -1
    for match in _mentions(text):  # one linear pass: the last mention of any register function
        last = match.start()
    if last < 0:
        return None
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


def _did_you_mean(word: str, candidates) -> str:
    if not candidates:
        return ""
    close = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.6)
    return f"; did you mean {code(close[0])}?" if close else ""


class _FileReader:
    def __init__(self, path: str, text: str, contract: Contract, implicit_cpu: bool, exact: bool):
        self.path = path
        self.text = text
        self.exact = exact
        self._whole_tree = None
        self.contract = contract
        self.implicit_cpu = implicit_cpu
        self.scan = FileScan(path)
        # the functions the runner collects, and the default ones it would not (REG002 "not defined")
        self.functions = {**REGISTER_FUNCTIONS, **contract.functions}

    def finding(self, code: str, node_or_span, message: str, **kw) -> None:
        span = node_or_span if isinstance(node_or_span, Span) else node_span(node_or_span, self.scan.lines)
        self.scan.findings.append(make_finding(code, self.path, span, message, **kw))

    def run(self) -> FileScan:
        scan = self.scan
        tree = None
        if not self.exact:
            prefix = registration_prefix(self.text)
            if prefix is not None:
                try:
                    tree = ast.parse(prefix, filename=self.path)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None  # the cut fell inside a string or bracket: read the whole file
        try:
            if tree is None:
                tree = self._whole_tree = ast.parse(self.text, filename=self.path)
        except SyntaxError as exc:
            line = exc.lineno or 1
            col = exc.offset or 1
            nul = self.text.find("\0")
            if exc.lineno is None and nul >= 0:  # Python 3.11 gives no position for a null byte
                line = self.text.count("\n", 0, nul) + 1
                col = nul - (self.text.rfind("\n", 0, nul) + 1) + 1
            scan.unreadable = True
            self.finding("REG001", Span(line, max(col, 1), line, max(col, 1) + 1), f"the file does not parse: {exc.msg} (line {line}); the runner cannot read its registrations")
            return scan
        except (ValueError, RecursionError, MemoryError) as exc:
            scan.unreadable = True
            why = "it nests too deeply" if isinstance(exc, (RecursionError, MemoryError)) else str(exc)
            self.finding("REG001", Span.at_line(1), f"the file does not parse: {why}")
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
                            self.finding(
                                "REG003",
                                alias,
                                f"{code(alias.name)} is imported as {code(alias.asname)}: the runner only sees calls to the bare name {code(alias.name)}, so calls through the alias are never registered",
                            )
        num_gpus = _NUM_GPUS.search(self.text) if "NUM_GPUS" in self.text else None
        if num_gpus:
            line = self.text.count("\n", 0, num_gpus.start()) + 1
            parsed_to = tree.body[-1].end_lineno if tree.body else 0
            if line <= parsed_to and not any(isinstance(st, (ast.Assign, ast.AnnAssign)) and st.lineno == line for st in tree.body):
                num_gpus = None  # the text sits inside a string or a block, not a module constant
        if num_gpus:
            col = num_gpus.start(1) - num_gpus.start() + 1
            scan.num_gpus_constant = (int(num_gpus.group(1)), Span(line, col, line, col + len(num_gpus.group(1))))
        if aliases and not self.exact and len(tree.body) and tree is not self._whole_tree:
            # calls through an alias do not name the function: the prefix may have cut them off
            self.exact = True
            self.scan = FileScan(self.path)
            return self.run()
        # Every mention not accounted for above is a call the runner may skip: find it.
        if aliases or sum(1 for _ in _mentions(self.text)) > accounted:
            self.find_invisible(tree, aliases)
        return scan

    def find_invisible(self, tree: ast.Module, aliases: dict[str, str]) -> None:
        """Register calls the runner would not collect, with why (iterative: deep code must not
        exhaust the recursion limit)."""
        names = set(self.functions) | set(aliases)
        stack: list[tuple[ast.AST, str | None, bool]] = [(tree, None, True)]
        while stack:
            node, where, is_module = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Call):
                    func = child.func
                    target = why = None
                    if isinstance(func, ast.Name) and func.id in aliases:
                        target, why = aliases[func.id], f"it calls the alias {code(func.id)}, not the bare name {code(aliases[func.id])}"
                    elif isinstance(func, ast.Name) and func.id in names and where is not None:
                        target, why = func.id, where
                    elif isinstance(func, ast.Attribute) and func.attr in self.functions:
                        target, why = func.attr, f"it is an attribute call (`….{func.attr}(...)`), and the runner only sees the bare name"
                    if target is not None:
                        self.scan.invisible += 1
                        self.finding("REG003", child, f"this `{target}(...)` call is invisible to the runner: {why}; the test is never registered by it")
                if (
                    is_module
                    and isinstance(child, ast.Expr)
                    and isinstance(child.value, ast.Call)
                    and isinstance(child.value.func, ast.Name)
                    and child.value.func.id in self.functions
                ):
                    continue  # collected already
                inner = where
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    inner = "it is inside a function, not at module top level"
                elif isinstance(child, ast.ClassDef):
                    inner = "it is inside a class body, not at module top level"
                elif where is None and isinstance(child, ast.If):
                    inner = "it is inside an `if` block"
                elif where is None and isinstance(child, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)):
                    inner = f"it is inside a {code(type(child).__name__.lower())} block, not at module top level"
                elif where is None and is_module and isinstance(child, ast.stmt):
                    inner = "it is not a top-level expression statement (the runner reads only `register_...(...)` statements)"
                stack.append((child, inner, False))

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
        if signature is None:
            self.finding(
                "REG002",
                call.func,
                f"{code(name)} is not defined in the repository's register module, so the runner cannot collect it (defined: {', '.join(sorted(self.contract.signatures)) or 'none'})",
            )
            signature = Signature(name, backend, ("est_time", "suite"), (), frozenset({"est_time", "suite"}), var_keyword=True)
        if self.implicit_cpu and backend.is_gpu:
            self.finding("REG002", call.func, f"{code(name)} in an implicit-CPU root: the runner registers files here as CPU and rejects a GPU registration")

        for arg in call.args:
            if isinstance(arg, ast.Starred):
                self.finding("REG002", arg, f"starred arguments are not supported in {name}(): the runner raises")
        positional = [a for a in call.args if not isinstance(a, ast.Starred)]
        for i, arg in enumerate(positional):
            if i >= len(signature.positional):
                allowed = " and ".join(signature.positional) or "nothing"
                self.finding("REG002", arg, f"too many positional arguments in {name}(): only {allowed} may be passed by position")
                continue
            self.take(reg, signature.positional[i], arg, arg)
        for kw in call.keywords:
            if kw.arg is None:
                self.finding("REG002", kw, f"**kwargs are not supported in {name}(): the runner raises")
                continue
            if kw.arg not in signature.accepted and not signature.var_keyword:
                self.finding(
                    "REG002",
                    kw,
                    f"unknown keyword {code(kw.arg)} in {name}(): the signature accepts {', '.join(sorted(signature.accepted))}{_did_you_mean(kw.arg, signature.accepted)}",
                )
                continue
            if kw.arg in reg.arguments:
                self.finding("REG002", kw, f"duplicated argument {code(kw.arg)} in {name}(): the runner raises")
                continue
            self.take(reg, kw.arg, kw.value, kw)
        template = self.contract.suite_template
        if template is not None and set(template[1]) <= signature.accepted:
            self.compose_suite(reg, call, template)
        missing = sorted(p for p in signature.required if p not in reg.arguments)
        if missing:
            why = "GPU registrations need a non-empty `labels` list; " if backend.is_gpu and "labels" in missing else ""
            self.finding("REG002", call, f"{name}() is missing {', '.join(f'{code(m)}' for m in missing)}: {why}the runner raises")
        self.validate_values(reg)

    def compose_suite(self, reg: Registration, call: ast.Call, template: tuple[str, tuple[str, ...]]) -> None:
        """sglang since May 2026: `stage=` and `runner_config=` compose the suite
        (`CIRegistry.effective_suite`: `{stage}-test-{runner_config}`); exactly one of the pair or
        `suite` must be given, or the runner raises."""
        text, fields = template
        given = [f for f in fields if f in reg.arguments]
        has_suite = "suite" in reg.arguments
        if (len(given) == len(fields) and not has_suite) or (not given and has_suite):
            if given:
                values = {f: reg.value(f) for f in fields}
                if all(isinstance(v, str) for v in values.values()):
                    reg.composed_suite = text.format(**values)
            return
        shape = ", ".join(f"{f}={'set' if f in reg.arguments else 'unset'}" for f in (*fields, "suite"))
        self.finding("REG002", call, f"{reg.function}() must give either {' and '.join(code(f) for f in fields)} (the suite is {code(text)}) or {code('suite')}, not both or a part ({shape}): the runner raises")

    def take(self, reg: Registration, name: str, value: ast.expr, where: ast.AST) -> None:
        literal = _literal(value)
        span = node_span(value, self.scan.lines)
        reg.arguments[name] = Argument(name, None if literal is _UNSET else literal, literal is not _UNSET, span, source_segment(self.scan.lines, span))
        if literal is _UNSET:
            self.finding("REG002", value, f"{code(name)} must be a literal (number, string, list of strings, True/False/None): the runner reads it without executing the file")

    def validate_values(self, reg: Registration) -> None:
        args = reg.arguments
        a = args.get("est_time")
        if a is not None and a.is_literal:
            v = a.value
            number = isinstance(v, (int, float))  # the runners' own test: isinstance(est_time, (int, float))
            if not number or (isinstance(v, float) and not math.isfinite(v)):
                self.finding("REG002", a.span, f"est_time must be a positive number of seconds, not {a.source}")
            elif isinstance(v, bool) or not v > 0:
                if self.contract.est_time_positive:
                    self.finding("REG002", a.span, f"est_time must be a positive number of seconds, not {a.source}")
                else:
                    self.finding("REG002", a.span, f"est_time must be a positive number of seconds, not {a.source}: the runner accepts it (it checks only for a number), but shard balancing and the timeout treat it as {float(v):g} s",
                                 severity=Severity.WARNING)
        a = args.get("suite")
        if a is not None and a.is_literal and not isinstance(a.value, str):
            self.finding("REG002", a.span, f"suite must be a string, not {a.source}")
        a = args.get("labels")
        labels: list[str] = []
        if a is not None and a.is_literal and a.value is not None:
            if not isinstance(a.value, list) or not all(isinstance(x, str) for x in a.value):
                self.finding("REG002", a.span, f"labels must be a list of string literals, not {a.source}")
            else:
                labels = a.value
                self.check_known_labels(reg, a)
        sig = self.contract.signatures.get(reg.function)
        missing_reported = a is None and sig is not None and "labels" in sig.required
        wrong_type = a is not None and (not a.is_literal or (a.value is not None and not isinstance(a.value, list)))
        # Non-empty labels are the target's rule only where its signature makes `labels` required
        # (miles since August 2026: `*, labels: list[str]`); a `labels=None` default (miles in May)
        # means a GPU test without a label is accepted.
        labels_required = sig is None or "labels" in sig.required
        if reg.backend.is_gpu and "labels" in self.contract_params(reg) and labels_required and not labels \
                and not missing_reported and not wrong_type:
            where = a.span if a is not None else reg.span
            self.finding("REG002", where, f"{reg.function}() needs a non-empty `labels` list: GPU registrations without a label are rejected")
        a = args.get("nightly")
        if a is not None and a.is_literal and not isinstance(a.value, bool):
            self.finding("REG002", a.span, f"nightly must be True or False, not {a.source}")
        a = args.get("disabled")
        if a is not None and a.is_literal and a.value is not None and not isinstance(a.value, str):
            self.finding("REG002", a.span, f"disabled must be a reason string or None, not {a.source}")
        a = args.get("num_gpus")
        if a is not None and a.is_literal and (isinstance(a.value, bool) or not isinstance(a.value, int)):
            self.finding("REG002", a.span, f"num_gpus must be an integer, not {a.source}")

    def contract_params(self, reg: Registration) -> frozenset[str]:
        sig = self.contract.signatures.get(reg.function)
        return sig.accepted if sig else frozenset()

    def check_known_labels(self, reg: Registration, arg: Argument) -> None:
        known = self.contract.labels
        if known is None:
            return
        # positions of each element: re-derive from the list's source
        for i, label in enumerate(arg.value):
            if label not in known:
                span = self._element_span(arg, i)
                hint = self.contract.near.lookup("label", label, known, "labels", _did_you_mean)
                self.finding("REG002", span, f"unknown label {code(label)}: not a key of KNOWN_LABELS{hint}")

    def _element_span(self, arg: Argument, index: int) -> Span:
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
        scan.findings.append(make_finding("REG001", path, Span.at_line(1), f"the file cannot be read as Python source: {error}"))
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


def parses(text: str, path: str) -> bool:
    """Whether `ast.parse(text)` succeeds, as the runner's parse of a discovered file does.

    Asked of the symbol-table builder first: it runs the same parser into the same C syntax tree
    but builds no Python objects from it, a third cheaper than ast.parse on miles' tests. When it
    accepts, the parser did (the tree it builds is never deeper than the parser's own stack);
    when it refuses (a syntax error, or a rule of its own such as `nonlocal` at module level,
    which ast.parse accepts), ast.parse itself decides.
    """
    import symtable

    try:
        symtable.symtable(text, path, "exec")
        return True
    except Exception:  # noqa: BLE001 - any refusal: ast.parse decides
        pass
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
