"""Which suites the repository's own workflows run, with their job timeouts and shard counts.

A consumer is found the way the target's workflows name suites: `--suite <name>` in any string of a
workflow (run steps, inputs such as `execute_command` passed to reusable workflows) and suite
values in a job matrix (`--suite ${{ matrix.suite }}`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from checks import yamlload
from checks.config import Config
from checks.model import Finding, Span
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
    for entry in matrix.get("include") or []:
        if isinstance(entry, dict) and key in entry and entry[key] not in values:
            values.append(entry[key])
    return values


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


def read_workflow(path: str, text: str) -> tuple[list[SuiteUse], list[Finding]]:
    lines = text.split("\n")
    try:
        doc = yamlload.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        return [], [make_finding("REG901", path, Span.at_line(line), f"workflow {path} is not valid YAML: its suites are not counted as consumers")]
    uses: list[SuiteUse] = []
    seen: set[str] = set()
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    for job_id, job in (jobs or {}).items() if isinstance(jobs, dict) else []:
        if not isinstance(job, dict):
            continue
        matrix = (job.get("strategy") or {}).get("matrix") if isinstance(job.get("strategy"), dict) else None
        job_timeout = _timeout(job.get("timeout-minutes"))
        pieces: list[tuple[str, int | None]] = []
        for step in job.get("steps") or []:
            if isinstance(step, dict):
                strings: list[str] = []
                _strings(step, strings)
                pieces.extend((s, _timeout(step.get("timeout-minutes")) or job_timeout) for s in strings)
        strings = []
        _strings({k: v for k, v in job.items() if k != "steps"}, strings)  # reusable-workflow `with:` inputs
        pieces.extend((s, job_timeout) for s in strings)
        for text_piece, timeout in pieces:
            for match in _SUITE_ARG.finditer(text_piece):
                shards = 1
                size = _PARTITION_SIZE.search(text_piece)
                if size and size.group(1):
                    shards = int(size.group(1))
                elif size and size.group(2):
                    vals = _matrix_values(matrix, size.group(2))
                    shards = int(vals[0]) if len(vals) == 1 and str(vals[0]).isdigit() else max(len(vals), 1)
                else:
                    pid = _PARTITION_ID.search(text_piece)
                    if pid:
                        shards = max(len(_matrix_values(matrix, pid.group(1))), 1)
                if match.group("key"):
                    names = [str(v) for v in _matrix_values(matrix, match.group("key")) if isinstance(v, (str, int))]
                else:
                    names = [match.group("value")]
                for name in names:
                    seen.add(name)
                    uses.append(SuiteUse(name, path, path, _line_of(lines, name), timeout, shards, job=str(job_id)))
    # Anything else in the file that names a suite (workflow-level env, comments excluded by YAML)
    strings = []
    _strings({k: v for k, v in doc.items() if k != "jobs"} if isinstance(doc, dict) else {}, strings)
    for s in strings:
        for match in _SUITE_ARG.finditer(s):
            if not match.group("key") and match.group("value") not in seen:
                seen.add(match.group("value"))
                uses.append(SuiteUse(match.group("value"), path, path, _line_of(lines, match.group("value")), None, 1))
    return uses, []


def read_consumers(tree, config: Config, workflow_paths: list[str]) -> tuple[list[SuiteUse], list[Finding]]:
    uses: list[SuiteUse] = []
    findings: list[Finding] = []
    for path in workflow_paths:
        data = tree.read(path)
        if data is None:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            findings.append(make_finding("REG901", path, Span.at_line(1), f"workflow {path} is not UTF-8: its suites are not counted as consumers"))
            continue
        if "--suite" not in text:
            continue
        u, f = read_workflow(path, text)
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
