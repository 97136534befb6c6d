"""Which suites the workflows run, how (`--hw`, `--nightly`/`--cadence`), with their job timeouts and shard counts.

A consumer is found the way the target's workflows name suites: `--suite <name>` in any string of
a workflow (run steps, inputs such as `execute_command` passed to reusable actions), with the
flags written on the same command line (backslash continuations joined):

- `--suite` takes a literal, a matrix value (`${{ matrix.suite }}`, one use per matrix row) or an
  input (`${{ inputs.self_name }}`): a reusable workflow's inputs come from each local caller's
  `with:` (`uses: ./.github/workflows/_stage.yml` + `with: {self_name: stage-a-test-cpu}`, a
  caller's matrix values included) or, failing that, from the input's default;
- `--hw <backend>` says which backend's registrations the invocation selects;
- `--nightly`, `--cadence nightly|weekly|release` select `nightly=True` registrations,
  `--cadence regular` or no flag does not, a flag computed at run time is "unknown";
- shards: `--auto-partition-size N` (literal, matrix or input), else the size of the
  `--auto-partition-id` matrix axis; a size computed at run time (`fromJson(...)`) is unknown
  and REG030 skips that use;
- timeouts: the step's, else the job's `timeout-minutes` (literal or an input), else GitHub's
  default.

External consumers (`consumers:` entries without `suites:`) are the same reading of a workflow
file of another repository: the caller passes its bytes (the App reads it through the API at that
repository's default branch, the CLI from `--consumers-from PATH`). A file that is not given or
not readable is a REG017 warning naming it, and REG013 is skipped (its suites may be the missing
consumers); never a failure.

Reading is linear in the document: YAML aliases are refused past the `yaml_nodes` cap (counted as
if expanded, see yamlload.compose_bounded), each distinct string is parsed once, each distinct
invocation is expanded once per distinct combination of the matrix values it names, and suite
positions come from one index of the file's words. Past the `matrix_combinations` or `shards`
caps a REG902 finding says what was not counted.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from dataclasses import dataclass, field

import yaml

from checks.config import yamlload
from checks.config.schema import Config, Consumer
from checks.limits import Budget
from checks.model import code, Finding, Span
from checks.ruleset.reading import reg017_external_consumer_unread as reg017
from checks.ruleset.reading import reg901_unreadable_contract as reg901
from checks.workflows.shellcode import shell_code

GITHUB_DEFAULT_TIMEOUT_MINUTES = 360
NIGHTLY_CADENCES = frozenset({"nightly", "weekly", "release"})  # cadences that admit nightly=True registrations

_EXPRESSION = r"\$\{\{.*?\}\}"
_FLAG = re.compile(
    r"(?<![\w-])--(?P<flag>suite|hw|cadence|auto-partition-size|auto-partition-id)(?:=|[ \t]+)"
    r"(?P<q>['\"]?)(?P<value>" + _EXPRESSION + r"|[A-Za-z0-9._/-]+)(?P=q)"
    r"|(?<![\w-])--(?P<bare>nightly)(?![\w-])"
)
_EXPRESSION_RE = re.compile(_EXPRESSION)
_LOCAL_CALL = re.compile(r"uses:\s*['\"]?\./")
# The program a command line runs with Python: `python -m pkg.mod` or `python path/script.py`.
_PYTHON_TARGET = re.compile(r"\bpython[0-9.]*\s+(?:-[A-Za-z]+\s+)*?(?:-m\s+([\w.]+)|([\w./-]+\.py)\b)")
DEFAULT_RUNNER = "run_suite"


def _stem(target: str) -> str:
    return target.rsplit("/", 1)[-1].removesuffix(".py").rsplit(".", 1)[-1]


def _same_script(written: str, runner_path: str) -> bool:
    """`written` (a path in a command line) can be this repository's runner at `runner_path`: the
    same path, the path from a directory above it (`cd test && python3 run_suite.py`), or this
    repository checked out at an absolute path (`/root/miles/tests/ci/run_suite.py`)."""
    written = written.removeprefix("./")
    if "$" in written or "{" in written:
        return True  # computed at run time: cannot tell, counted (a missed consumer is a false REG013)
    # relative with more directories than the runner's (`sglang/multimodal_gen/test/run_suite.py`
    # against `test/run_suite.py`) names another script; an absolute path can be a checkout's
    return (written == runner_path or runner_path.endswith("/" + written)
            or (written.startswith("/") and written.endswith("/" + runner_path)))


def _runs_another_program(line: str, runner: str) -> bool:
    """A `--suite` of another Python program (sglang's `gen_diffusion_ci_outputs --suite 1-npu`)
    is that program's, not a run of the suite runner. So is another repository's runner of the
    same name: `runner` given as this repository's path (`test/run_suite.py`), a job that runs
    `tests/ci/run_suite.py` (sglang's nightly running miles' runner in a miles checkout) runs
    that repository's suites against that repository's inventory. A line whose program cannot
    be told (a shell wrapper) still counts: a missed consumer would be a false REG013."""
    targets = [m.group(1) or m.group(2) for m in _PYTHON_TARGET.finditer(line)]
    ours = [t for t in targets if _stem(t) == _stem(runner)]
    if not targets:
        return False
    if not ours:
        return True
    if runner.endswith(".py") and "/" in runner:
        scripts = [t for t in ours if t.endswith(".py")]
        return len(scripts) == len(ours) and not any(_same_script(t, runner) for t in scripts)
    return False
_REFERENCE = re.compile(r"\$\{\{\s*(?:fromjson\(\s*)?(?P<ctx>matrix|inputs)\.(?P<key>[\w-]+)\s*\)?\s*\}\}", re.I)


@dataclass(frozen=True)
class SuiteUse:
    """One place that runs a suite."""

    suite: str
    consumer: str  # "path/in/repo.yml" or "owner/repo:.github/workflows/x.yml"
    file: str | None  # where to point a finding (None for an external consumer)
    span: Span
    timeout_minutes: int | None
    shards: int  # 0: unknown (computed at run time, or over the `shards` cap): REG030 skips it
    external: bool = False
    job: str | None = None
    hw: str | None = None  # the `--hw` value; None: not stated (any backend)
    nightly: bool | None = False  # selects nightly=True registrations; None: decided at run time

    def selects(self, backend: str) -> bool:
        return self.hw is None or self.hw == backend


# -- values as written -------------------------------------------------------------------------
# A value is ("lit", text), ("matrix", key), ("inputs", key) or ("expr", text): computed at run time.
def _value(text: str) -> tuple[str, str]:
    if "${{" not in text:
        return ("lit", text)
    m = _REFERENCE.fullmatch(text.strip())
    if m:
        return (m.group("ctx").lower(), m.group("key"))
    return ("expr", text)


def _scalar_value(raw) -> tuple[str, str] | None:
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float)):
        return ("lit", str(raw))
    if isinstance(raw, str):
        return _value(raw)
    return None


@dataclass(frozen=True)
class _Invocation:
    """One `--suite` on one command line, before matrix values and inputs are substituted."""

    suite: tuple[str, str]
    hw: tuple[str, str] | None
    cadence: tuple[str, str] | None  # ("lit", "nightly") for a bare --nightly; ("expr", ...) when conditional
    size: tuple[str, str] | None
    pid: tuple[str, str] | None

    def references(self, ctx: str) -> tuple[str, ...]:
        return tuple(sorted({v[1] for v in (self.suite, self.hw, self.cadence, self.size) if v and v[0] == ctx}))


_ASSIGN = re.compile(r"^\s*(?:export\s+|local\s+)?([A-Za-z_]\w*)=(.*?)\s*$")
_SHELL_REF = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")


def _shell_values(lines: list[str]) -> dict[str, list[str]]:
    """`NAME=value` assignments of a run script, each name's values in order (quotes removed)."""
    values: dict[str, list[str]] = {}
    for line in lines:
        m = _ASSIGN.match(line)
        if m:
            value = m.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            values.setdefault(m.group(1), []).append(value)
    return values


def _expand_shell(line: str, values: dict[str, list[str]]) -> str:
    """A runner line with the script's own variables put in (sglang: `test_suite="${{ inputs.test_suite }}"`
    then `--suite ${test_suite}`; `NIGHTLY_FLAG="--nightly"` under an `if`). A variable assigned
    once stands for its value; one assigned several times (set under a condition) becomes an
    expression, so a flag inside it counts as conditional; an unknown one stays as it is."""
    def put(m: re.Match) -> str:
        assigned = values.get(m.group(1) or m.group(2))
        if not assigned or any("$" in v and "${{" not in v for v in assigned):
            return m.group(0)  # unknown, or computed from other shell state
        if len(assigned) == 1:
            return assigned[0]
        return "${{ '" + " ".join(v for v in assigned if v).replace("'", "") + "' }}"
    return _SHELL_REF.sub(put, line)


def _invocations(piece: str, runner: str = DEFAULT_RUNNER) -> list[_Invocation]:
    if "--suite" not in piece:
        return []
    piece = shell_code(piece)  # a command commented out, or `--suite` in a note, runs nothing
    out = []
    lines = piece.replace("\\\r\n", " ").replace("\\\n", " ").split("\n")
    values = _shell_values(lines) if "=" in piece else {}
    for line in lines:
        if "--suite" not in line or _runs_another_program(line, runner):
            continue
        if values and "$" in line:
            line = _expand_shell(line, values)
        expressions = [m.span() for m in _EXPRESSION_RE.finditer(line)] if "${{" in line else []
        suites, flags = [], {}
        for m in _FLAG.finditer(line):
            if m.group("bare"):
                inside = any(a <= m.start() < b for a, b in expressions)
                flags.setdefault("cadence", ("expr", "--nightly") if inside else ("lit", "nightly"))
            elif m.group("flag") == "suite":
                suites.append(_value(m.group("value")))
            else:
                flags.setdefault(m.group("flag"), _value(m.group("value")))
        size = flags.get("auto-partition-size")
        if size is None and _SHELL_REF.search(line.replace("${{", "")):
            # a shell variable the script computes may hold the partition flags: shards unknown
            size = ("expr", "shell variable")
        for suite in suites:
            out.append(_Invocation(suite, flags.get("hw"), flags.get("cadence"), size, flags.get("auto-partition-id")))
    return out


def _strings(node, out: list[str], seen: set[int] | None = None) -> None:
    """Every string in a loaded YAML document. YAML aliases load as shared objects: each is
    visited once, so an alias "bomb" in a PR's workflow costs its size, not its expansion."""
    seen = set() if seen is None else seen
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, (dict, list)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            stack.extend(reversed(list(item.values() if isinstance(item, dict) else item)))


def _hashable(value):
    try:
        hash(value)
        return ("h", value)
    except TypeError:
        return ("r", repr(value))


def _combinations(matrix, cap: int) -> int:
    """Jobs a matrix expands to (its axes multiplied, plus include entries), counted up to cap + 1."""
    if not isinstance(matrix, dict):
        return 1
    total = 1
    for key, value in matrix.items():
        if key in ("include", "exclude") or not isinstance(value, list):
            continue
        total *= max(len(value), 1)
        if total > cap:
            return cap + 1
    include = matrix.get("include")
    return total + (len(include) if isinstance(include, list) else 0)


def _rows(matrix) -> list[dict] | None:
    """The matrix's jobs as {key: value} rows (None without a matrix). Axes are multiplied; an
    include entry naming every axis extends the row it matches, any other is a row of its own;
    an axis computed at run time (a string) is left out (its key resolves to "unknown")."""
    if not isinstance(matrix, dict):
        return None
    axes = {k: v for k, v in matrix.items() if k not in ("include", "exclude") and isinstance(v, list) and v}
    keys = list(axes)
    rows = [dict(zip(keys, combo)) for combo in itertools.product(*(axes[k] for k in keys))] if keys else []
    by_axes = {tuple(_hashable(r[k]) for k in keys): r for r in rows} if keys else {}
    for entry in matrix.get("include") or [] if isinstance(matrix.get("include"), list) else []:
        if not isinstance(entry, dict):
            continue
        target = by_axes.get(tuple(_hashable(entry[k]) for k in keys)) if keys and all(k in entry for k in keys) else None
        if target is not None:
            for k, v in entry.items():
                target.setdefault(k, v)
        else:
            rows.append(dict(entry))
    excludes = [e for e in matrix.get("exclude") or [] if isinstance(e, dict)] if isinstance(matrix.get("exclude"), list) else []
    if excludes:
        rows = [r for r in rows if not any(all(_hashable(r.get(k)) == _hashable(v) for k, v in e.items()) for e in excludes)]
    return rows


class _Positions:
    """Where a suite name is first written: the first whole-word use outside a comment.

    One pass indexes every maximal run of word characters and dashes; a name made only of those
    is looked up in the index. Other names (rare: `--suite a.b`) are searched line by line, at
    most _SEARCHES of them per file, so the cost stays linear in the file.
    """

    _RUN = re.compile(r"[\w-]+")
    _PLAIN = re.compile(r"[\w-]+\Z")
    _SEARCHES = 200

    def __init__(self, lines: list[str]):
        self.lines = lines
        self._index: dict[str, Span] | None = None
        self._cache: dict[str, Span | None] = {}
        self._searches = 0

    def _code(self, line: str) -> str:
        return shell_code(line)  # a YAML or shell comment is not where a name is written

    def find(self, needle: str) -> Span | None:
        if needle in self._cache:
            return self._cache[needle]
        if self._PLAIN.match(needle):
            if self._index is None:
                index: dict[str, Span] = {}
                for i, line in enumerate(self.lines):
                    code_part = self._code(line)
                    for m in self._RUN.finditer(code_part):
                        index.setdefault(m.group(), Span(i + 1, m.start() + 1, i + 1, m.end() + 1))
                self._index = index
            found = self._index.get(needle)
        elif self._searches < self._SEARCHES:
            self._searches += 1
            found = _line_of(self.lines, needle)
        else:
            found = None
        self._cache[needle] = found
        return found

    def span(self, needle: str) -> Span:
        return self.find(needle) or Span.at_line(1)


def _line_of(lines: list[str], needle: str) -> Span | None:
    """Where a suite name is written: the first whole-word use outside a comment."""
    word = re.compile(r"(?<![\w-])" + re.escape(needle) + r"(?![\w-])")
    for i, line in enumerate(lines):
        match = word.search(shell_code(line))
        if match:
            return Span(i + 1, match.start() + 1, i + 1, match.end() + 1)
    return None


_CONSUMERS_SKIPPED = "the suites it runs are not counted as consumers, so the no-consumer check (REG013) is skipped for this check"


# -- one workflow file -------------------------------------------------------------------------
@dataclass
class _Job:
    job_id: str
    rows: list[dict] | None
    invocations: dict[tuple[_Invocation, tuple[str, str] | None], None]  # (invocation, timeout value)
    uses_workflow: str | None = None  # `uses: ./.github/workflows/x.yml`: the local reusable workflow it calls
    with_: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class _Workflow:
    path: str
    positions: _Positions
    jobs: list[_Job]
    reusable: bool
    only_called: bool  # workflow_call is its only trigger: its inputs come from callers
    defaults: dict[str, str]  # input name -> literal default (workflow_call and workflow_dispatch inputs)
    top_level: list[_Invocation]  # `--suite` outside jobs (workflow-level env)
    at: str | None = None  # where findings point (an external consumer: not a file of the repository)


def _timeout_value(raw) -> tuple[str, str] | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return ("lit", str(raw)) if raw > 0 else None
    if isinstance(raw, str):
        return _value(raw)
    return None


def _input_defaults(doc) -> tuple[bool, bool, dict[str, str]]:
    on = doc.get("on") if isinstance(doc, dict) else None
    reusable = False
    defaults: dict[str, str] = {}
    triggers = on if isinstance(on, dict) else {t: None for t in on} if isinstance(on, list) else {on: None} if isinstance(on, str) else {}
    for trigger, spec in triggers.items():
        if trigger == "workflow_call":
            reusable = True
        if trigger in ("workflow_call", "workflow_dispatch") and isinstance(spec, dict) and isinstance(spec.get("inputs"), dict):
            for name, decl in spec["inputs"].items():
                if isinstance(decl, dict) and "default" in decl:
                    v = _scalar_value(decl["default"])
                    if v and v[0] == "lit" and v[1] != "":
                        defaults.setdefault(str(name), v[1])
    return reusable, reusable and len(triggers) == 1, defaults


def _parse_workflow(path: str, text: str, budget: Budget, at: str | None = None,
                    runner: str = DEFAULT_RUNNER) -> tuple[_Workflow | None, list[Finding]]:
    """`at`: where findings point when `path` is not a file of the repository (an external consumer).
    `runner`: the suite runner's path (the suites module) or name: `--suite` of other programs, and
    of another repository's runner of the same name, is theirs."""
    limits = budget.limits
    try:
        doc = yamlload.load_bounded(text, limits.yaml_nodes)
    except yamlload.TooLarge:
        budget.consumers_partial = True
        budget.hit("yaml_nodes", path, _CONSUMERS_SKIPPED, measured="counting its aliases expanded", at=at)
        return None, []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        if at:
            return None, [reg017.not_yaml(at, path, line)]
        return None, [reg901.workflow_not_yaml(path, line)]
    except RecursionError:
        budget.consumers_partial = True
        budget.hit("yaml_nodes", path, _CONSUMERS_SKIPPED, measured="nested too deeply to read", at=at)
        return None, []
    positions = _Positions(text.split("\n"))
    parsed: dict[str, list[_Invocation]] = {}

    def invocations(piece: str) -> list[_Invocation]:
        found = parsed.get(piece)
        if found is None:
            found = parsed[piece] = _invocations(piece, runner)
        return found

    reusable, only_called, defaults = _input_defaults(doc)
    jobs_out: list[_Job] = []
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    for job_id, job in (jobs or {}).items() if isinstance(jobs, dict) else []:
        if not isinstance(job, dict):
            continue
        strategy = job.get("strategy")
        matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
        if _combinations(matrix, limits.matrix_combinations) > limits.matrix_combinations:
            budget.consumers_partial = True
            budget.hit("matrix_combinations", path, f"the matrix of job {code(job_id)} is not read: {_CONSUMERS_SKIPPED}",
                       span=Span.at_line(1) if at else positions.span(str(job_id)), at=at)
            rows = []  # its matrix-valued suites are not counted (literal ones still are)
            matrix_skipped = True
        else:
            rows = None  # built below, only for a job that names matrix values
            matrix_skipped = False
        job_timeout = _timeout_value(job.get("timeout-minutes"))
        found: dict = {}
        for step in job.get("steps") or [] if isinstance(job.get("steps"), list) else []:
            if isinstance(step, dict):
                strings: list[str] = []
                _strings(step, strings)
                step_timeout = _timeout_value(step.get("timeout-minutes")) or job_timeout
                for piece in strings:
                    for inv in invocations(piece):
                        if not (matrix_skipped and inv.references("matrix")):
                            found[(inv, step_timeout)] = None
        strings = []
        _strings({k: v for k, v in job.items() if k not in ("steps", "with")}, strings)
        with_ = job.get("with") if isinstance(job.get("with"), dict) else {}
        _strings(with_, strings)  # e.g. `execute_command` passed to a reusable action
        for piece in strings:
            for inv in invocations(piece):
                if not (matrix_skipped and inv.references("matrix")):
                    found[(inv, job_timeout)] = None
        uses = job.get("uses")
        local = uses[2:] if isinstance(uses, str) and uses.startswith("./") else None
        with_values = {str(k): v for k, v in ((k, _scalar_value(v)) for k, v in with_.items()) if v is not None}
        if not matrix_skipped and (any(inv.references("matrix") or inv.pid or (t and t[0] == "matrix") for inv, t in found)
                                   or any(v[0] == "matrix" for v in with_values.values())):
            rows = _rows(matrix)
        jobs_out.append(_Job(str(job_id), rows, found, local.split("@", 1)[0] if local else None, with_values))
    top: list[_Invocation] = []
    strings = []
    _strings({k: v for k, v in doc.items() if k != "jobs"} if isinstance(doc, dict) else {}, strings)
    for s in dict.fromkeys(strings):
        top.extend(invocations(s))
    return _Workflow(path, positions, jobs_out, reusable, only_called, defaults, top, at), []


class _Expansion:
    """Counts the (invocation x matrix row) expansions of one job against `matrix_combinations`."""

    def __init__(self, budget: Budget, path: str, job_id: str, span: Span, at: str | None = None):
        self.budget, self.path, self.job_id, self.span, self.at = budget, path, job_id, span, at
        self.count = 0
        self.stopped = False

    def take(self, n: int) -> bool:
        if self.stopped:
            return False
        self.count += n
        if self.count > self.budget.limits.matrix_combinations:
            self.stopped = True
            self.budget.consumers_partial = True
            self.budget.hit("matrix_combinations", self.path,
                            f"the suite invocations of job {code(self.job_id)} expand past the cap and the rest are not read: {_CONSUMERS_SKIPPED}",
                            span=Span.at_line(1) if self.at else self.span, at=self.at)
            return False
        return True


def _resolve(value, row: dict | None, inputs: dict[str, str]) -> str | None:
    """A value's text in one matrix row with these inputs; None when it is computed at run time."""
    if value is None:
        return None
    kind, x = value
    if kind == "lit":
        return x
    if kind == "matrix":
        if row is None or x not in row:
            return None
        v = row[x]
        return str(v) if isinstance(v, (str, int)) and not isinstance(v, bool) else None
    if kind == "inputs":
        return inputs.get(x)
    return None


def _expand(wf: _Workflow, job: _Job, inputs: dict[str, str], budget: Budget, *, consumer: str, file: str | None,
            positions: list[_Positions], external: bool, out: dict) -> None:
    """The SuiteUses of one job's invocations, resolved with `inputs` (a caller's `with:`)."""
    limits = budget.limits
    expansion = _Expansion(budget, wf.path, job.job_id, wf.positions.span(job.job_id), wf.at)
    partition_sizes: dict[str, int] = {}
    for (inv, timeout_value), _ in job.invocations.items():
        keys = inv.references("matrix")
        if timeout_value and timeout_value[0] == "matrix":
            keys += (timeout_value[1],)
        keys = tuple(sorted(set(keys)))
        if keys and job.rows is not None:
            seen_rows: dict = {}
            for row in job.rows:
                seen_rows.setdefault(tuple(_hashable(row.get(k)) for k in keys), row)
            rows = list(seen_rows.values()) or [None]  # axes computed at run time: those values are unknown
        else:
            rows = [None]
        if not expansion.take(max(len(rows), 1)):
            return
        for row in rows:
            suite = _resolve(inv.suite, row, inputs)
            if not suite:
                continue
            hw = _resolve(inv.hw, row, inputs) if inv.hw else None
            if inv.cadence is None:
                nightly: bool | None = False
            else:
                cadence = _resolve(inv.cadence, row, inputs)
                nightly = None if cadence is None else cadence in NIGHTLY_CADENCES
            shards = 1
            if inv.size:
                size = _resolve(inv.size, row, inputs)
                if size is None or not size.isdigit():
                    shards = 0  # computed at run time
                else:
                    shards = int(size) if len(size) < 12 else limits.shards + 1
            elif inv.pid:
                if inv.pid[0] == "matrix" and job.rows is not None:
                    key = inv.pid[1]
                    if key not in partition_sizes:
                        partition_sizes[key] = len({_hashable(r[key]) for r in job.rows if key in r})
                    shards = partition_sizes[key] or 0
                else:
                    shards = 0
            if shards > limits.shards:
                budget.hit("shards", wf.path, f"suite budgets (REG030) are not checked for the suites it splits into {shards:,} shards", measured=f"{shards:,} shards", at=wf.at)
                shards = 0
            timeout_text = _resolve(timeout_value, row, inputs)
            timeout = int(timeout_text) if timeout_text and timeout_text.isdigit() and 0 < len(timeout_text) < 9 and int(timeout_text) > 0 else None
            span = Span.at_line(1)
            for p in positions:
                found = p.find(suite)
                if found is not None:
                    span = found
                    break
            use = SuiteUse(suite, consumer, file, span, timeout, shards, external=external, job=job.job_id, hw=hw, nightly=nightly)
            out.setdefault((suite, timeout, shards, job.job_id, hw, nightly, consumer), use)


def read_workflow(path: str, text: str, budget: Budget | None = None) -> tuple[list[SuiteUse], list[Finding]]:
    """The suites one workflow runs by itself (its inputs at their defaults)."""
    budget = budget or Budget()
    wf, findings = _parse_workflow(path, text, budget)
    if wf is None:
        return [], findings
    return _uses_of([wf], budget), findings


def _uses_of(workflows: list[_Workflow], budget: Budget, *, external_label: str | None = None) -> list[SuiteUse]:
    by_path = {wf.path: wf for wf in workflows}
    out: dict = {}
    called: set[str] = set()
    for wf in workflows:
        consumer = external_label or wf.path
        file = None if external_label else wf.path
        for job in wf.jobs:
            if job.uses_workflow and job.uses_workflow in by_path and external_label is None:
                callee = by_path[job.uses_workflow]
                called.add(callee.path)
                _call(wf, job, callee, budget, out)
            if wf.only_called and external_label is None:
                # inputs come from callers (_call): only what does not depend on them runs by itself
                job = _Job(job.job_id, job.rows, {k: None for k in job.invocations
                                                   if not (k[0].references("inputs") or (k[1] and k[1][0] == "inputs"))})
            _expand(wf, job, wf.defaults, budget, consumer=consumer, file=file, positions=[wf.positions],
                    external=external_label is not None, out=out)
        for inv in wf.top_level:
            suite = _resolve(inv.suite, None, wf.defaults)
            if suite:
                out.setdefault((suite, None, 1, None, None, False, consumer),
                               SuiteUse(suite, consumer, file, wf.positions.span(suite), None, 1, external=external_label is not None))
    return list(out.values())


def _call(caller: _Workflow, job: _Job, callee: _Workflow, budget: Budget, out: dict) -> None:
    """The callee's invocations as this caller job runs them: its `with:` values (per caller matrix
    row) over the callee's input defaults."""
    keys = tuple(sorted({v[1] for v in job.with_.values() if v[0] == "matrix"}))
    if keys and job.rows is not None:
        seen: dict = {}
        for row in job.rows:
            seen.setdefault(tuple(_hashable(row.get(k)) for k in keys), row)
        rows = list(seen.values())
    else:
        rows = [None]
    expansion = _Expansion(budget, caller.path, job.job_id, caller.positions.span(job.job_id))
    if not expansion.take(len(rows)):
        return
    for row in rows:
        inputs = dict(callee.defaults)
        for name, value in job.with_.items():
            resolved = _resolve(value, row, caller.defaults)
            if resolved is not None:
                inputs[name] = resolved
            else:
                inputs.pop(name, None)
        for callee_job in callee.jobs:
            # only what depends on the inputs: the rest is the callee's own use, counted once
            templated = {k: None for k in callee_job.invocations if k[0].references("inputs") or (k[1] and k[1][0] == "inputs")}
            if templated:
                _expand(callee, _Job(job.job_id, callee_job.rows, templated), inputs, budget,
                        consumer=caller.path, file=caller.path, positions=[caller.positions, callee.positions],
                        external=False, out=out)


# -- the repository's workflows and the configured external ones --------------------------------
def consumer_label(consumer: Consumer) -> str:
    """`owner/repo:path`: how an external consumer's workflow is named wherever a copy of it is
    handed over (`consumers_from`, the App's read of it, the CLI's --consumers-from)."""
    return f"{consumer.repository}:{consumer.workflow}"


def _given(consumer: Consumer, consumers_from: dict) -> tuple[str, object] | None:
    """The copy of an external consumer's workflow the caller gave: by `owner/repo:path`, else
    by the workflow's file name (`--consumers-from ./nightly-test-amd-miles-rocm720.yml`)."""
    label = consumer_label(consumer)
    if label in consumers_from:
        return label, consumers_from[label]
    name = consumer.workflow.rsplit("/", 1)[-1]
    for key, value in consumers_from.items():
        if key.rsplit("/", 1)[-1] == name:
            return key, value
    return None


def _external(label: str, data, budget: Budget, anchor: str, runner: str = DEFAULT_RUNNER) -> tuple[list[SuiteUse], list[Finding]]:
    """One external workflow's uses; what could not be read is a REG017 warning at `anchor`
    (the configuration, else the suite inventory), never a failure."""

    def unread(why: str) -> tuple[list[SuiteUse], list[Finding]]:
        budget.consumers_partial = True
        return [], [reg017.unread(anchor, label, why)]

    if data is None:
        return unread("no copy of it was given")
    if isinstance(data, str):
        return unread(data)
    if len(data) > budget.limits.file_bytes:
        budget.too_large.add(label)
        budget.consumers_partial = True
        budget.hit("file_bytes", label, _CONSUMERS_SKIPPED, at=anchor)
        return [], []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return unread("it is not UTF-8")
    wf, findings = _parse_workflow(label, text, budget, at=anchor, runner=runner)
    if wf is None:
        budget.consumers_partial = True
        return [], findings
    return _uses_of([wf], budget, external_label=label), []


_DIRECT_RUN = re.compile(r"\bpython[0-9.]*\s+(?:-[A-Za-z]+\s+)*?((?:\./)?[\w.-]+(?:/[\w.-]+)*\.py)\b")


# pytest as CI starts it: `pytest ARGS` or `python -m pytest ARGS`, ARGS running on over `\` ends
_PYTEST = re.compile(r"(?:^|[\s;&|(])(?:python[0-9.]*\s+-m\s+pytest|py\.test|pytest)(?=\s|$)(?P<args>.*)")
# pytest options that take the next word as their value (`-k EXPR`, `--ignore PATH`, ...)
_PYTEST_VALUED = frozenset({"-k", "-m", "-p", "-c", "-o", "-n", "-W", "--ignore", "--ignore-glob", "--deselect", "--rootdir",
                            "--confcutdir", "--basetemp", "--cov", "--cov-config", "--cov-report", "--junitxml",
                            "--junit-xml", "--durations", "--maxfail", "--timeout", "--dist", "--log-level",
                            "--override-ini", "--tb", "-r", "--capture", "--import-mode", "--reruns"})


def _pytest_targets(args: str) -> list[str]:
    """The paths one pytest command line collects: files (`x.py`, `x.py::test`), directories and
    globs the shell expands; options and their values are skipped; a shell operator ends it."""
    out, skip = [], False
    for word in args.split():
        if word in ("|", "||", "&&", ";", ">", ">>", "2>&1", "&") or word.startswith((">", "|")):
            break
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = "=" not in word and word in _PYTEST_VALUED
            continue
        word = word.strip("'\"").split("::", 1)[0].removeprefix("./")
        if word and "$" not in word and not word.startswith("/"):
            out.append(word)
    return out


def _logical_lines(text: str):
    """(first line number, line) with backslash-continued lines joined, as the shell reads them."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        start, line = i + 1, lines[i]
        while line.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i].strip()
        yield start, line
        i += 1


def _direct_runs(path: str, text: str, runner_dir: str, out: dict[str, str]) -> None:
    """Test files a workflow runs itself: `python3 registered/test_x.py` in `test/` (sglang's AMD
    nightlies until January 2026) and pytest on files, directories and globs (`pytest
    test/registered/unit/`, sglang's daily coverage job; `python -m pytest` too). Keys: a
    repository path (as written, and from the runner's directory, where those workflows start),
    a directory ending in `/`, or a glob; values "workflow:line". The suite runner is not one;
    direct_run_of matches a file against them."""
    if ".py" not in text and "pytest" not in text:
        return
    for number, line in _logical_lines(text):
        line = shell_code(line)  # a YAML or shell comment runs nothing (a quote ends at its line here)
        found = [m.group(1).removeprefix("./") for m in _DIRECT_RUN.finditer(line)]
        m = _PYTEST.search(line)
        if m:
            for target in _pytest_targets(m.group("args")):
                if not target.endswith(".py") and not any(c in target for c in "*?["):
                    target = target.rstrip("/") + "/"  # a directory: pytest collects test_*.py below it
                found.append(target)
        for script in found:
            for candidate in (script, f"{runner_dir}/{script}" if runner_dir else script):
                out.setdefault(candidate, f"{path}:{number}")


def direct_run_of(direct_runs: dict[str, str], file: str) -> str | None:
    """The "workflow:line" that runs `file` itself (see _direct_runs), or None."""
    if file in direct_runs:
        return direct_runs[file]
    name = file.rsplit("/", 1)[-1]
    collected = fnmatch.fnmatchcase(name, "test_*.py") or fnmatch.fnmatchcase(name, "*_test.py")
    for key, where in direct_runs.items():
        if key.endswith("/") and collected and (file.startswith(key) or key == "./"):
            return where
        if any(c in key for c in "*?[") and fnmatch.fnmatchcase(file, key):
            return where
    return None


def read_consumers(tree, config: Config, workflow_paths: list[str], budget: Budget | None = None,
                   consumers_from: dict | None = None, anchor: str | None = None,
                   direct_runs: dict[str, str] | None = None,
                   texts: dict[str, str] | None = None) -> tuple[list[SuiteUse], list[Finding]]:
    """Every SuiteUse: the repository's workflows, then the configured external consumers.
    `texts`, when given, is filled with the text of each workflow that runs a suite or calls one
    (for checks/target/suite_runs.py's job reading, so no file is read twice).
    `direct_runs`, when given, is filled with the Python files the workflows run themselves
    (path -> "workflow:line", see _direct_runs).

    `consumers_from`: copies of external consumers' workflows, keyed by `owner/repo:path` (or a
    local path whose file name is the workflow's); a value is the file's bytes, or a string saying
    why it could not be read. A copy that matches no configured consumer is read as one more.
    `anchor`: the file findings about external consumers point to (default: the configuration).
    """
    from checks.config.schema import CONFIG_PATH

    anchor = anchor or CONFIG_PATH
    budget = budget or Budget()
    # the runner by its path: a job running another repository's runner of the same name is not ours
    runner = config.paths.suites_module if config.paths.suites_module.endswith(".py") else DEFAULT_RUNNER
    consumers_from = dict(consumers_from or {})
    findings: list[Finding] = []
    workflows: list[_Workflow] = []
    for i, path in enumerate(workflow_paths):
        if not budget.take_file(path, len(workflow_paths) - i, "workflows"):
            budget.consumers_partial = True
            break
        data = budget.read(tree, path, _CONSUMERS_SKIPPED)
        if data is None:
            if path in budget.too_large:
                budget.consumers_partial = True
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            findings.append(reg901.workflow_not_utf8(path))
            continue
        if direct_runs is not None:
            _direct_runs(path, text, config.paths.suites_module.rpartition("/")[0], direct_runs)
        if texts is not None and ("--suite" in text or "./.github/" in text or "workflow_call" in text):
            texts[path] = text
        if "--suite" not in text and not _LOCAL_CALL.search(text):
            continue  # neither runs a suite nor calls a local reusable workflow that may
        wf, f = _parse_workflow(path, text, budget, runner=runner)
        findings.extend(f)
        if wf is not None:
            workflows.append(wf)
    uses = _uses_of(workflows, budget)
    used_keys: set[str] = set()
    for consumer in config.consumers:
        label = consumer_label(consumer)
        if consumer.suites is not None:  # the hand-typed form (kept for existing configurations)
            for suite in consumer.suites:
                # what the typed list does not say (backend, cadence) is unknown, never assumed
                uses.append(SuiteUse(suite, label, None, Span.at_line(1), consumer.timeout_minutes, consumer.shards or 1,
                                     external=True, nightly=None))
            continue
        given = _given(consumer, consumers_from)
        if given is not None:
            used_keys.add(given[0])
        u, f = _external(label, given[1] if given else None, budget, anchor, runner)
        uses.extend(u)
        findings.extend(f)
    for key, data in consumers_from.items():
        if key not in used_keys:
            u, f = _external(key, data, budget, anchor, runner)
            uses.extend(u)
            findings.extend(f)
    return uses, findings


def is_workflow_path(path: str, config: Config) -> bool:
    d = config.paths.workflows_dir.rstrip("/") + "/"
    return path.startswith(d) and path.endswith((".yml", ".yaml")) and "/" not in path[len(d) :]
