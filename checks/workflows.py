"""Which suites the repository's own workflows run, with their job timeouts and shard counts.

A consumer is found the way the target's workflows name suites: `--suite <name>` in any string of a
workflow (run steps, inputs such as `execute_command` passed to reusable workflows) and suite
values in a job matrix (`--suite ${{ matrix.suite }}`).

Reading is linear in the document: YAML aliases are refused past the `yaml_nodes` cap (counted as
if expanded, see yamlload.compose_bounded), each distinct string is searched once, matrix values
are collected with a set, and suite positions come from one index of the file's words. Past the
`matrix_combinations` or `shards` caps a REG902 finding says what was not counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from checks import yamlload
from checks.config import Config
from checks.limits import Budget
from checks.model import code, Finding, Span
from checks.rules import make_finding

_SUITE_ARG = re.compile(r"--suite(?:=|\s+)(?P<q>['\"]?)(?P<value>\$\{\{\s*matrix\.(?P<key>[\w-]+)\s*\}\}|[A-Za-z0-9._-]+)(?P=q)")
_PARTITION_SIZE = re.compile(r"--auto-partition-size(?:=|\s+)['\"]?(?:(\d+)|\$\{\{\s*matrix\.([\w-]+)\s*\}\})")
_PARTITION_ID = re.compile(r"--auto-partition-id(?:=|\s+)['\"]?\$\{\{\s*matrix\.([\w-]+)\s*\}\}")
GITHUB_DEFAULT_TIMEOUT_MINUTES = 360


@dataclass(frozen=True)
class SuiteUse:
    """One place that runs a suite."""

    suite: str
    consumer: str  # "path/in/repo.yml" or "owner/repo:.github/workflows/x.yml"
    file: str | None  # where to point a finding (None for an external consumer)
    span: Span
    timeout_minutes: int | None
    shards: int
    external: bool = False
    job: str | None = None


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


def _matrix_values(matrix, key: str) -> list:
    if not isinstance(matrix, dict):
        return []
    values = list(matrix.get(key) or []) if isinstance(matrix.get(key), list) else []
    seen = {_hashable(v) for v in values}  # a set, not `in values`: linear in the include list
    for entry in matrix.get("include") or []:
        if isinstance(entry, dict) and key in entry and _hashable(entry[key]) not in seen:
            seen.add(_hashable(entry[key]))
            values.append(entry[key])
    return values


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


class _Positions:
    """Where a suite name is first written: the first whole-word use outside a comment line.

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
        self._cache: dict[str, Span] = {}
        self._searches = 0

    def _code(self, line: str) -> str | None:
        return None if line.lstrip().startswith("#") else line.split(" #", 1)[0]

    def span(self, needle: str) -> Span:
        if needle in self._cache:
            return self._cache[needle]
        if self._PLAIN.match(needle):
            if self._index is None:
                index: dict[str, Span] = {}
                for i, line in enumerate(self.lines):
                    code = self._code(line)
                    if code is None:
                        continue
                    for m in self._RUN.finditer(code):
                        index.setdefault(m.group(), Span(i + 1, m.start() + 1, i + 1, m.end() + 1))
                self._index = index
            found = self._index.get(needle, Span.at_line(1))
        elif self._searches < self._SEARCHES:
            self._searches += 1
            found = _line_of(self.lines, needle)
        else:
            found = Span.at_line(1)
        self._cache[needle] = found
        return found


def _line_of(lines: list[str], needle: str, default: int = 1) -> Span:
    """Where a suite name is written: the first whole-word use outside a comment line."""
    word = re.compile(r"(?<![\w-])" + re.escape(needle) + r"(?![\w-])")
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            continue
        match = word.search(line.split(" #", 1)[0])
        if match:
            return Span(i + 1, match.start() + 1, i + 1, match.end() + 1)
    return Span.at_line(default)


def _timeout(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


_CONSUMERS_SKIPPED = "the suites it runs are not counted as consumers, so the no-consumer check (REG013) is skipped for this check"


def read_workflow(path: str, text: str, budget: Budget | None = None) -> tuple[list[SuiteUse], list[Finding]]:
    budget = budget or Budget()
    limits = budget.limits
    lines = text.split("\n")
    try:
        doc = yamlload.load_bounded(text, limits.yaml_nodes)
    except yamlload.TooLarge:
        budget.consumers_partial = True
        budget.hit("yaml_nodes", path, _CONSUMERS_SKIPPED, measured="counting its aliases expanded")
        return [], []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        return [], [make_finding("REG901", path, Span.at_line(line), f"workflow {path} is not valid YAML: its suites are not counted as consumers")]
    except RecursionError:
        budget.consumers_partial = True
        budget.hit("yaml_nodes", path, _CONSUMERS_SKIPPED, measured="nested too deeply to read")
        return [], []
    positions = _Positions(lines)
    uses: dict[tuple, SuiteUse] = {}  # one per (suite, timeout, shards, job): repeats add nothing
    seen: set[str] = set()
    matches_of: dict[str, list[tuple[str | None, str | None, int | None, str | None]]] = {}

    def suite_args(piece: str):
        """(matrix key, literal name, partition size, partition key) per `--suite` in a string, once per distinct string."""
        found = matches_of.get(piece)
        if found is None:
            found = []
            if "--suite" in piece:
                size = _PARTITION_SIZE.search(piece)
                pid = _PARTITION_ID.search(piece)
                for match in _SUITE_ARG.finditer(piece):
                    found.append((match.group("key"), match.group("value"), size, pid))
            matches_of[piece] = found
        return found

    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    for job_id, job in (jobs or {}).items() if isinstance(jobs, dict) else []:
        if not isinstance(job, dict):
            continue
        matrix = (job.get("strategy") or {}).get("matrix") if isinstance(job.get("strategy"), dict) else None
        if _combinations(matrix, limits.matrix_combinations) > limits.matrix_combinations:
            budget.consumers_partial = True
            budget.hit("matrix_combinations", path, f"the matrix of job {code(job_id)} is not read: {_CONSUMERS_SKIPPED}", span=positions.span(str(job_id)))
            matrix = None
            matrix_skipped = True
        else:
            matrix_skipped = False
        job_timeout = _timeout(job.get("timeout-minutes"))
        pieces: dict[tuple[str, int | None], None] = {}
        for step in job.get("steps") or []:
            if isinstance(step, dict):
                strings: list[str] = []
                _strings(step, strings)
                step_timeout = _timeout(step.get("timeout-minutes")) or job_timeout
                for piece in strings:
                    pieces[(piece, step_timeout)] = None
        strings = []
        _strings({k: v for k, v in job.items() if k != "steps"}, strings)  # reusable-workflow `with:` inputs
        for piece in strings:
            pieces[(piece, job_timeout)] = None
        values_of: dict[str, list] = {}  # matrix values per key, read once per job

        def matrix_values(key: str) -> list:
            if key not in values_of:
                values_of[key] = _matrix_values(matrix, key)
            return values_of[key]

        # (matrix key or literal name, timeout, shards) first, names after: many distinct strings
        # naming `${{ matrix.suite }}` expand the matrix once, not once each.
        wanted: dict[tuple[str | None, str | None, int | None, int], None] = {}
        for text_piece, timeout in pieces:
            for key, value, size, pid in suite_args(text_piece):
                if key and matrix_skipped:
                    continue
                shards = 1
                if size and size.group(1):
                    shards = int(size.group(1)) if len(size.group(1)) < 12 else limits.shards + 1
                elif size and size.group(2):
                    vals = matrix_values(size.group(2))
                    if len(vals) == 1 and str(vals[0]).isdigit():
                        shards = int(vals[0]) if len(str(vals[0])) < 12 else limits.shards + 1
                    else:
                        shards = max(len(vals), 1)
                elif pid:
                    shards = max(len(matrix_values(pid.group(1))), 1)
                if shards > limits.shards:
                    budget.hit("shards", path, f"suite budgets (REG030) are not checked for the suites it splits into {shards:,} shards", measured=f"{shards:,} shards")
                    shards = 0  # unknown: _budgets skips the use
                wanted[(key, None if key else value, timeout, shards)] = None
        for key, value, timeout, shards in wanted:
            names = [str(v) for v in matrix_values(key) if isinstance(v, (str, int))] if key else [value]
            for name in names:
                seen.add(name)
                uses.setdefault((name, timeout, shards, str(job_id)), SuiteUse(name, path, path, positions.span(name), timeout, shards, job=str(job_id)))
    # Anything else in the file that names a suite (workflow-level env, comments excluded by YAML)
    strings = []
    _strings({k: v for k, v in doc.items() if k != "jobs"} if isinstance(doc, dict) else {}, strings)
    for s in dict.fromkeys(strings):
        for key, value, _size, _pid in suite_args(s):
            if not key and value not in seen:
                seen.add(value)
                uses.setdefault((value, None, 1, None), SuiteUse(value, path, path, positions.span(value), None, 1))
    return list(uses.values()), []


def read_consumers(tree, config: Config, workflow_paths: list[str], budget: Budget | None = None) -> tuple[list[SuiteUse], list[Finding]]:
    budget = budget or Budget()
    uses: list[SuiteUse] = []
    findings: list[Finding] = []
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
            findings.append(make_finding("REG901", path, Span.at_line(1), f"workflow {path} is not UTF-8: its suites are not counted as consumers"))
            continue
        if "--suite" not in text:
            continue
        u, f = read_workflow(path, text, budget)
        uses.extend(u)
        findings.extend(f)
    for consumer in config.consumers:
        label = f"{consumer.repository}:{consumer.workflow}"
        for suite in consumer.suites:
            uses.append(SuiteUse(suite, label, None, Span.at_line(1), consumer.timeout_minutes, consumer.shards, external=True))
    return uses, findings


def is_workflow_path(path: str, config: Config) -> bool:
    d = config.paths.workflows_dir.rstrip("/") + "/"
    return path.startswith(d) and path.endswith((".yml", ".yaml")) and "/" not in path[len(d) :]
