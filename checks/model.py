"""The data the engine produces: registrations, findings, fixes. Rendering lives elsewhere."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

_BACKTICKS = re.compile(r"`+")


def code(text: object) -> str:
    """`text` as a code span in a finding's message: a backtick fence longer than any backtick run
    inside it (CommonMark), padded with a space when the text starts or ends with a backtick, so a
    suite name such as ``a`b`` cannot end the span early. Ordinary names read `like-this`."""
    text = str(text).replace("\r", " ").replace("\n", " ")
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    if not text:
        return fence + " " + fence
    pad = " " if text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " " and text.strip()) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_BACKEND_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


class Backend(str, Enum):
    """A register function's backend (`register_<backend>_ci`), open-ended: the members below are
    the ones the known targets use (radixark/miles: cpu, cuda, rocm; sgl-project/sglang: cpu, cuda,
    amd, npu, xpu, musa, mlx); `Backend("tpu")` makes (once) a member for any other lower-case name
    a target's register module declares. Iterating the class yields the declared members only."""

    CPU = "cpu"
    CUDA = "cuda"
    ROCM = "rocm"
    AMD = "amd"
    NPU = "npu"
    XPU = "xpu"
    MUSA = "musa"
    MLX = "mlx"

    @classmethod
    def _missing_(cls, value):
        if not isinstance(value, str) or not _BACKEND_NAME.fullmatch(value):
            return None
        member = str.__new__(cls, value)
        member._name_ = value.upper()
        member._value_ = value
        return cls._value2member_map_.setdefault(value, member)

    @property
    def is_gpu(self) -> bool:
        return self is not Backend.CPU

    @property
    def family(self) -> "Backend":
        """The hardware family: AMD (sglang's name) and ROCm (miles') are the same AMD Instinct GPUs."""
        return Backend.ROCM if self is Backend.AMD else self

    @property
    def is_rocm_family(self) -> bool:
        return self.family is Backend.ROCM


class Severity(str, Enum):
    FAILURE = "failure"
    WARNING = "warning"
    NOTICE = "notice"

    @property
    def rank(self) -> int:
        return {"failure": 0, "warning": 1, "notice": 2}[self.value]


class Change(str, Enum):
    ADDED = "added"
    CHANGED = "changed"
    REMOVED = "removed"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class Span:
    """1-based line and column; end_column is exclusive (one past the last character)."""

    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def at_line(cls, line: int) -> "Span":
        return cls(line, 1, line, 1)


@dataclass(frozen=True, slots=True)
class Fix:
    """Replace whole lines start_line..end_line (1-based, inclusive) of a file with `text`.

    Whole lines because that is what a GitHub ```suggestion``` block replaces.
    """

    file: str
    start_line: int
    end_line: int
    text: str  # the new content of those lines, without the final newline


@dataclass(slots=True)
class Finding:
    rule: str
    severity: Severity
    file: str
    span: Span
    message: str
    suggestion: str | None = None  # new source text for exactly `span` (e.g. a corrected literal)
    fix: Fix | None = None  # the same change as whole lines, formatted (libcst codemod)
    title: str = ""

    def sort_key(self):
        return (self.file, self.span.line, self.span.column, self.rule)


@dataclass(slots=True)
class Argument:
    """One argument of a registration call as written: its literal value (if literal) and position."""

    name: str
    value: object
    is_literal: bool
    span: Span
    source: str  # the argument value's source text


@dataclass(slots=True)
class Registration:
    """One `register_<backend>_ci(...)` call that the target's runner collects."""

    file: str
    function: str
    backend: Backend
    span: Span  # the whole call
    statement_lines: tuple[int, int]  # first and last line of the statement
    arguments: dict[str, Argument] = field(default_factory=dict)
    implicit: bool = False  # the runner's implicit CPU registration of a tests/fast file
    composed_suite: str | None = None  # the suite composed by the contract's template (sglang: stage=, runner_config=)
    change: Change | None = None
    base: "Registration | None" = None  # the base revision's registration it was compared with

    def value(self, name: str, default=None):
        arg = self.arguments.get(name)
        return arg.value if arg is not None and arg.is_literal else default

    @property
    def suite(self) -> str | None:
        if self.composed_suite is not None:
            return self.composed_suite
        value = self.value("suite")
        return value if isinstance(value, str) else None

    @property
    def est_time(self) -> float | None:
        value = self.value("est_time")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return value

    @property
    def labels(self) -> list[str]:
        value = self.value("labels")
        return [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []

    @property
    def nightly(self) -> bool:
        return self.value("nightly", False) is True

    @property
    def disabled(self) -> str | None:
        value = self.value("disabled")
        return value if isinstance(value, str) else None

    def anchor(self, name: str) -> Span:
        """Where a finding about argument `name` points: the argument, else the call."""
        arg = self.arguments.get(name)
        return arg.span if arg is not None else self.span


@dataclass(slots=True)
class Report:
    registrations: list[Registration] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files_checked: int = 0
    # (finding, its checks.scanning.suppressions.Suppression): taken out of `findings` by an inline comment
    suppressed: list = field(default_factory=list)
    # a diff check: what the PR changes, for its reviewer (checks/pr_summary.PrSummary); None otherwise
    pr_summary: object | None = None
    # a diff check with stored runs: each newly enabled ROCm registration's evidence (checks/calibration/evidence.py)
    evidence: list | None = None

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity is severity)

    @property
    def failed(self) -> bool:
        return any(f.severity is Severity.FAILURE for f in self.findings)
