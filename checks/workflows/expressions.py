"""GitHub Actions expressions (`${{ ... }}`) evaluated as a manual dispatch of the workflow would.

The target's own jobs compute some of what an on-demand run must copy: the runner pool
(`format('linux-{0}-1gpu-sglang', inputs.runner_arch || 'mi300')`), a step's timeout
(`(inputs.runner_arch || 'mi300') == 'mi300' && 75 || 60`), a flag
(`github.event_name == 'workflow_dispatch' && '--match-all-labels' || ''`), a matrix axis
(`fromJson(... || '["rocm724", "rocm720"]')`). An on-demand run is a manual dispatch, so the
expression is evaluated with `github.event_name` = `workflow_dispatch`, `inputs.*` at their
declared defaults and `matrix.*` from the row at hand. Whatever depends on another job's outputs,
a step's outputs, secrets or the run itself (`needs.*`, `steps.*`, `github.sha`, ...) is UNKNOWN,
and so is any expression using it where the result depends on it.

Only the grammar GitHub documents is read: literals, `.`-property access, `!`, `==`, `!=`, `<`,
`<=`, `>`, `>=`, `&&`, `||`, parentheses and the functions format, fromJSON, toJSON, contains,
startsWith, endsWith and join. Anything else is UNKNOWN, never an error.
"""

from __future__ import annotations

import json
import re

__all__ = ["UNKNOWN", "Scope", "evaluate", "substitute", "substitute_known", "truthy"]


class _Unknown:
    """A value only the run itself knows."""

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:  # never decide on it by accident
        raise TypeError("UNKNOWN has no truth value")


UNKNOWN = _Unknown()
_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)
_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>==|!=|<=|>=|&&|\|\||[!<>().,\[\]*])"
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))")
_MAX_TOKENS = 500


class Scope:
    """What the expressions of one job see: its workflow's dispatch inputs, its matrix row, its env."""

    def __init__(self, inputs: dict | None = None, matrix: dict | None = None, env: dict | None = None,
                 event_name: str = "workflow_dispatch"):
        self.inputs = dict(inputs or {})
        self.matrix = matrix
        self.env = dict(env or {})
        self.event_name = event_name

    def context(self, name: str, path: list[str]):
        name = name.lower()
        if name == "inputs":
            return self.inputs.get(path[0], "") if path else UNKNOWN  # an undeclared input reads as ''
        if name == "matrix":
            if self.matrix is None or not path or path[0] not in self.matrix:
                return UNKNOWN
            return self.matrix[path[0]]
        if name == "github" and path and path[0] == "event_name":
            return self.event_name
        if name == "github" and len(path) == 3 and path[:2] == ["event", "inputs"]:
            return self.inputs.get(path[2], "")
        if name == "env" and path and path[0] in self.env:
            return self.env[path[0]]
        return UNKNOWN


def truthy(value) -> bool | _Unknown:
    if value is UNKNOWN:
        return UNKNOWN
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, str):
        return value != ""
    return True


def _coerce_number(value):
    if value is None or value is False:
        return 0
    if value is True:
        return 1
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value) if value.strip() else 0
        except ValueError:
            return float("nan")
    return float("nan")


def _equal(a, b):
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    if type(a) is type(b) or (isinstance(a, str) and isinstance(b, str)):
        return a.lower() == b.lower() if isinstance(a, str) else a == b
    return _coerce_number(a) == _coerce_number(b)  # GitHub compares loosely, as numbers


def _text(value) -> str:
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


class _Parser:
    def __init__(self, text: str, scope: Scope):
        self.tokens = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                if text[pos:].strip() == "":
                    break
                raise ValueError(f"unreadable at {text[pos:pos + 20]!r}")
            kind = m.lastgroup
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
            if len(self.tokens) > _MAX_TOKENS:
                raise ValueError("too long")
        self.i = 0
        self.scope = scope

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def take(self, value=None):
        token = self.peek()
        if value is not None and token[1] != value:
            raise ValueError(f"expected {value}")
        self.i += 1
        return token

    def parse(self):
        value = self.or_()
        if self.i != len(self.tokens):
            raise ValueError("trailing tokens")
        return value

    def or_(self):
        left = self.and_()
        while self.peek()[1] == "||":
            self.take()
            right = self.and_()
            t = truthy(left)
            if t is UNKNOWN:
                left = UNKNOWN
            elif not t:
                left = right
        return left

    def and_(self):
        left = self.compare()
        while self.peek()[1] == "&&":
            self.take()
            right = self.compare()
            t = truthy(left)
            if t is UNKNOWN:
                # `unknown && x`: unknown, unless x is falsy for sure (then the whole is falsy or unknown)
                left = UNKNOWN
            elif t:
                left = right
        return left

    def compare(self):
        left = self.unary()
        while self.peek()[1] in ("==", "!=", "<", "<=", ">", ">="):
            op = self.take()[1]
            right = self.unary()
            if op in ("==", "!="):
                eq = _equal(left, right)
                left = eq if eq is UNKNOWN else (eq if op == "==" else not eq)
            elif left is UNKNOWN or right is UNKNOWN:
                left = UNKNOWN
            else:
                a, b = _coerce_number(left), _coerce_number(right)
                left = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        return left

    def unary(self):
        if self.peek()[1] == "!":
            self.take()
            t = truthy(self.unary())
            return UNKNOWN if t is UNKNOWN else not t
        return self.primary()

    def primary(self):
        kind, value = self.take()
        if kind == "str":
            return value[1:-1].replace("''", "'")
        if kind == "num":
            number = float(value)
            return int(number) if number.is_integer() else number
        if value == "(":
            inner = self.or_()
            self.take(")")
            return inner
        if kind != "name":
            raise ValueError(f"unexpected {value}")
        lowered = value.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        if lowered == "null":
            return None
        if self.peek()[1] == "(":
            return self.call(lowered)
        path: list[str] = []
        while self.peek()[1] in (".", "["):
            if self.take()[1] == ".":
                path.append(self.take()[1])
            else:
                index = self.or_()
                self.take("]")
                path.append(_text(index))
        return self.scope.context(value, path)

    def call(self, name: str):
        self.take("(")
        args = []
        if self.peek()[1] != ")":
            args.append(self.or_())
            while self.peek()[1] == ",":
                self.take()
                args.append(self.or_())
        self.take(")")
        if any(a is UNKNOWN for a in args):
            return UNKNOWN
        if name == "format" and args:
            template = _text(args[0])
            return re.sub(r"\{(\d+)\}", lambda m: _text(args[1 + int(m.group(1))]) if 1 + int(m.group(1)) < len(args)
                          else m.group(0), template.replace("{{", "\0").replace("}}", "\1")).replace("\0", "{").replace("\1", "}")
        if name == "fromjson" and len(args) == 1:
            try:
                return json.loads(_text(args[0]))
            except ValueError:
                return UNKNOWN
        if name == "tojson" and len(args) == 1:
            return json.dumps(args[0])
        if name == "contains" and len(args) == 2:
            hay, needle = args
            if isinstance(hay, list):
                return any(_equal(x, needle) is True for x in hay)
            return _text(needle).lower() in _text(hay).lower()
        if name in ("startswith", "endswith") and len(args) == 2:
            a, b = _text(args[0]).lower(), _text(args[1]).lower()
            return a.startswith(b) if name == "startswith" else a.endswith(b)
        if name == "join" and args:
            sep = _text(args[1]) if len(args) > 1 else ","
            return sep.join(_text(x) for x in args[0]) if isinstance(args[0], list) else _text(args[0])
        return UNKNOWN


def evaluate(expression: str, scope: Scope):
    """The value of one expression (the text inside `${{ }}`); UNKNOWN when the run decides it."""
    try:
        return _Parser(expression, scope).parse()
    except (ValueError, IndexError, TypeError, RecursionError):
        return UNKNOWN


def substitute(text: str, scope: Scope):
    """A workflow string with its expressions put in: a str, or UNKNOWN when one of them is.

    A string that is one whole expression keeps its value's type (a list from fromJSON, a number).
    """
    if "${{" not in text:
        return text
    whole = _EXPR.fullmatch(text.strip())
    if whole:
        return evaluate(whole.group(1), scope)
    parts = []
    last = 0
    for m in _EXPR.finditer(text):
        value = evaluate(m.group(1), scope)
        if value is UNKNOWN:
            return UNKNOWN
        parts.append(text[last:m.start()])
        parts.append(_text(value))
        last = m.end()
    parts.append(text[last:])
    return "".join(parts)


def substitute_known(text: str, scope: Scope) -> str:
    """A workflow string with the expressions it can evaluate put in, the others left as written
    (`--cadence ${{ needs.policy.outputs.cadence }}` stays for the reader of the command line)."""
    if "${{" not in text:
        return text

    def put(m):
        value = evaluate(m.group(1), scope)
        return m.group(0) if value is UNKNOWN else _text(value)

    return _EXPR.sub(put, text)
