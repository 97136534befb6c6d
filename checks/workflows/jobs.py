"""How the target's own CI runs each suite: the job, read from its workflow files on the default branch.

An on-demand run of a suite is the target's own run of it, so everything about where and how it
runs is read from the job that runs it (never from the pull request): for every command line of
a job that starts the suite runner (`python3 [dir/]run_suite.py ... --suite X`),

- the runner pool: the job's `runs-on` (a literal, a matrix row's value, a reusable job's
  `fromJSON(inputs.runs_on)` given by its caller, an expression of the dispatch inputs);
- the partitions: `--auto-partition-size N` (else the size of the `--auto-partition-id` matrix axis);
- the per-file timeout: `--timeout-per-file N` (else the runner's own default, read by the caller);
- the job timeout: the step's `timeout-minutes`, else the job's, else GitHub's 360;
- the runner flags: the rest of the command line, with `${{ }}` evaluated as for a manual
  dispatch (checks/workflows/expressions.py); a flag whose condition only the run knows is kept apart;
- the nightly flag: `--nightly`, `--cadence nightly|weekly|release`;
- the install steps before it (a step that runs an `*install*` script or `pip install`);
- the container image and how it is resolved (checks/workflows/images.py);
- the directory the runner starts in and the environment the job's exec wrapper sets (`-e K=V`).

Each SuiteJob names its source (workflow, job, line). What is read is bounded like the PR check's
workflow reading (checks/config/yamlload.py: the `yaml_nodes` cap; at most MAX_ROWS matrix rows a job).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from checks.config import yamlload
from checks.workflows.images import ImageRule, Shell, rule_from_image, start_script_rule
from checks.workflows.expressions import UNKNOWN, Scope, substitute, substitute_known
from checks.workflows.shellcode import shell_code
from checks.workflows.runs import NIGHTLY_CADENCES, _rows, _same_script

GITHUB_DEFAULT_TIMEOUT_MINUTES = 360
MAX_ROWS = 64  # matrix rows read per job (the targets' MI35x jobs have at most 6)
# steps read in all, each matrix row counted (sglang at 382343f: about 1,700): past it the rest is
# not read and the caller is told, so a workflow of 5,000 steps x 64 rows costs no more than this
MAX_STEP_READS = 20_000
_RUNNER_WORD = re.compile(r"(?:^|/)([\w.-]+)\.py$")
_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)
_QUOTED_FLAG = re.compile(r"'(--[A-Za-z0-9][A-Za-z0-9-]*)'")
_GPU_LABEL = re.compile(r"(?:^|[-_])(?:gpu-?(\d+)|(\d+)-?gpus?)(?=$|[._-])", re.IGNORECASE)
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_ENV_VALUE = re.compile(r"[A-Za-z0-9_.:/=,+-]{0,200}")
_INSTALL = re.compile(r"(?:install[\w-]*\.sh\b|\bpip3?\s+install\b)")
_START_SCRIPT = re.compile(r"((?:\./)?[\w./-]*start_container[\w-]*\.sh)")
_SHELL_OPS = {"||", "&&", ";", "|", ">", ">>", "2>&1", "&"}
# Options whose value is about the partition or the suite: handled apart from the flags.
_STRUCTURAL = {"--suite", "--hw", "--auto-partition-id", "--auto-partition-size", "--timeout-per-file", "--list-only"}


@dataclass(frozen=True)
class SuiteJob:
    """One command line of a job that runs a suite, as a manual dispatch of that job would run it."""

    suite: str
    workflow: str  # ".github/workflows/pr-test-amd.yml"; "owner/repo:.github/workflows/x.yml" for another repository's
    job: str
    line: int
    external: bool
    pool: tuple[str, ...] | None  # runner labels (all required); None: computed at run time
    hw: str | None
    cadence: str | None  # "nightly" for --nightly; None: the runner's default
    pull_request: bool  # its workflow runs on pull requests (a PR job)
    scheduled: bool  # its workflow runs on a schedule
    shards: int  # 1 when not partitioned; 0: computed at run time
    timeout_per_file_s: int | None  # --timeout-per-file; None: the runner's default
    job_timeout_min: int  # the step's timeout-minutes, else the job's, else GitHub's 360
    image: ImageRule | None
    install: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()  # every other runner option, with its value, as the dispatch passes it
    conditional: tuple[str, ...] = ()  # flags under a condition only the run decides (`needs.*`)
    unresolved: tuple[str, ...] = ()  # option words whose value only the run knows (`--labels ${{ needs... }}`)
    runner: str = ""  # the runner as the command names it: "run_suite.py", "tests/ci/run_suite.py"
    exec_dir: str = ""  # the directory the command runs in, as the job names it ("/sglang-checkout/test")
    env: tuple[tuple[str, str], ...] = ()  # `-e NAME=value` given to the job's exec wrapper
    env_at_run_time: tuple[str, ...] = ()  # `-e NAME=...` whose value only the run knows (`${{ env.X }}`)
    triggers: frozenset[str] = frozenset()  # its workflow's `on:` events (schedule, push, pull_request, ...)
    setup: str = ""  # the script that starts the job's container (`scripts/ci/amd/amd_ci_start_container.sh`)
    container: tuple[tuple[str, str], ...] = ()  # the job's `container:` keys (options, env, volumes) as written
    invocation: int = 1  # this suite's n-th run in the same job (sglang runs some suites twice)

    @property
    def nightly(self) -> bool:
        return self.cadence in NIGHTLY_CADENCES

    @property
    def kind(self) -> str:
        """"nightly" or "pr": a job of a workflow that runs on pull requests is a PR job; one that
        runs on a schedule only, a nightly job."""
        if self.pull_request:
            return "pr"
        return "nightly" if self.scheduled else "other"

    @property
    def gpus(self) -> int | None:
        return gpus_of_labels(self.pool or ())

    def source(self) -> dict:
        return {"workflow": self.workflow, "job": self.job, "line": self.line}

    def where(self) -> str:
        return f"{self.workflow}:{self.line} (job `{self.job}`)"


def _container_keys(container) -> tuple[tuple[str, str], ...]:
    """The job's `container:` as written: image, options, env and volumes (mounts), each as text."""
    if isinstance(container, str):
        return (("image", container),)
    if not isinstance(container, dict):
        return ()
    out = []
    for key in ("image", "options", "env", "volumes"):
        value = container.get(key)
        if isinstance(value, dict):
            out.append((key, " ".join(f"{k}={v}" for k, v in value.items())))
        elif isinstance(value, list):
            out.append((key, " ".join(str(v) for v in value)))
        elif value is not None:
            out.append((key, str(value)))
    return tuple(out)


def gpus_of_labels(labels) -> int | None:
    """`4gpu` -> 4, `linux-mi35x-gpu-8` -> 8, `linux-mi35x-gpu-8.fabric` -> 8; None when no label says it."""
    for label in labels:
        m = _GPU_LABEL.search(str(label))
        if m:
            return int(m.group(1) or m.group(2))
    return None


@dataclass
class _Workflow:
    path: str
    text: str
    doc: dict
    triggers: frozenset[str]
    defaults: dict  # input -> default, as a manual dispatch (or, for a reusable one, a call) gives it
    env: dict
    only_called: bool
    external: bool
    lines: list[str] = field(default_factory=list)


def _triggers(doc: dict) -> dict:
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` key as True
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return {str(t): None for t in on}
    return on if isinstance(on, dict) else {}


def _defaults(triggers: dict) -> dict:
    defaults: dict = {}
    for trigger in ("workflow_dispatch", "workflow_call"):
        spec = triggers.get(trigger)
        inputs = spec.get("inputs") if isinstance(spec, dict) else None
        for name, decl in (inputs or {}).items() if isinstance(inputs, dict) else []:
            if isinstance(decl, dict) and "default" in decl and str(name) not in defaults:
                defaults[str(name)] = decl["default"]
            elif str(name) not in defaults:
                kind = decl.get("type") if isinstance(decl, dict) else None
                defaults[str(name)] = False if kind == "boolean" else ""
    return defaults


def parse_workflow(path: str, text: str, yaml_nodes: int, external: bool = False) -> _Workflow | None:
    try:
        doc = yamlload.load_bounded(text, yaml_nodes)
    except Exception:  # noqa: BLE001 - an unreadable workflow runs nothing we can copy
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), dict):
        return None
    triggers = _triggers(doc)
    defaults = _defaults(triggers)
    scope = Scope(inputs=defaults)
    env = {}
    for k, v in (doc.get("env") or {}).items() if isinstance(doc.get("env"), dict) else []:
        value = substitute(str(v), scope) if isinstance(v, (str, int, float)) and not isinstance(v, bool) else v
        env[str(k)] = value
    return _Workflow(path, text, doc, frozenset(str(t) for t in triggers), defaults, env,
                     only_called=set(triggers) == {"workflow_call"}, external=external, lines=text.split("\n"))


def _line_of(wf: _Workflow, job_id: str, needle: str) -> int:
    start = 0
    key = re.compile(r"^\s{2,4}" + re.escape(job_id) + r"\s*:")
    for i, line in enumerate(wf.lines):
        if key.match(line):
            start = i
            break
    word = re.compile(r"(?<![\w-])" + re.escape(needle) + r"(?![\w-])")
    for i in range(start, len(wf.lines)):
        if word.search(shell_code(wf.lines[i])):
            return i + 1
    return start + 1


def _labels(value) -> tuple[str, ...] | None:
    if value is UNKNOWN or value is None:
        return None
    if isinstance(value, str):
        return (value,) if value else None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    if isinstance(value, dict):  # `runs-on: {group: ..., labels: [...]}`
        return _labels(value.get("labels"))
    return None


def _evaluated(value, scope: Scope):
    if isinstance(value, str):
        return substitute(value, scope)
    if isinstance(value, list):
        out = [_evaluated(v, scope) for v in value]
        return UNKNOWN if any(v is UNKNOWN for v in out) else out
    return value


def _matrix_rows(job: dict, scope: Scope) -> list[dict | None]:
    strategy = job.get("strategy")
    matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
    if isinstance(matrix, str):
        matrix = _evaluated(matrix, scope)
    if not isinstance(matrix, dict):
        return [None]
    axes = {}
    for key, value in matrix.items():
        if isinstance(value, str) and "${{" in value:
            value = _evaluated(value, scope)
            if value is UNKNOWN:
                continue  # computed at run time: its key resolves to UNKNOWN
        axes[key] = value
    rows = _rows(axes) or [None]
    return rows[:MAX_ROWS]


def _int(value) -> int | None:
    if isinstance(value, bool) or value is UNKNOWN or value is None:
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        return None
    return number if number > 0 else None


def _words(line: str, scope: Scope, shell_values: dict) -> list | None:
    """The words of one command line, each `${{ }}` put in (or kept as its text when only the run
    knows it), shell variables of the same script put in."""
    unknown: list[str] = []

    def put(m):
        value = substitute(m.group(0), scope)
        if value is UNKNOWN:
            unknown.append(m.group(1))
            return f" \x00{len(unknown) - 1}\x00 "
        text = value if isinstance(value, str) else ("true" if value is True else "false" if value is False else str(value))
        return text

    if "$" in line and shell_values:
        def var(m):
            values = shell_values.get(m.group(1) or m.group(2))
            # a value that is itself an expression (`test_suite="${{ inputs.test_suite }}"`) is put in
            # as its expression, evaluated below with the others
            plain = values[0].replace("${{", "").replace("}}", "") if values else ""
            return values[0] if values and len(values) == 1 and "$" not in plain else m.group(0)
        line = re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)", var, line)
    line = _EXPR.sub(put, line)
    try:
        words = shlex.split(line, comments=False)
    except ValueError:
        return None
    out: list = []
    for w in words:
        m = re.fullmatch(r"\x00(\d+)\x00", w)
        out.append(("?", unknown[int(m.group(1))]) if m else w)
    return out


@dataclass
class _Invocation:
    runner: str
    suite: str | None
    options: list  # [(flag, value|None|("?", expr))]
    bare_unknown: list[str]  # expressions standing alone among the options
    before: list  # the words before the runner (the exec wrapper and its own options)


_PYTHON_VAR = re.compile(r"\$\{?[A-Za-z_]*PYTHON[A-Za-z0-9_]*\}?", re.IGNORECASE)


def _python_before(words: list, at: int) -> int | None:
    """The index of the interpreter that runs the script at `at`: `python3`, `/opt/venv/bin/python`,
    or a shell variable naming one (`${PYTHON_FOR_SGLANG}`), with its own options (`-u`) between."""
    i = at - 1
    while i >= 0 and isinstance(words[i], str) and re.fullmatch(r"-[A-Za-z]+", words[i]):
        i -= 1
    if i < 0 or not isinstance(words[i], str):
        return None
    word = words[i].rsplit("/", 1)[-1]
    return i if re.fullmatch(r"python[0-9.]*", word) or _PYTHON_VAR.fullmatch(words[i]) else None


def _invocation(words: list, runner_stem: str, takes_value) -> _Invocation | None:
    at = next((i for i, w in enumerate(words) if isinstance(w, str) and _RUNNER_WORD.search(w)
               and _RUNNER_WORD.search(w).group(1) == runner_stem and _python_before(words, i) is not None), None)
    if at is None:
        return None
    program = _python_before(words, at)
    options, bare = [], []
    i = at + 1
    rest = words[at + 1:]
    j = 0
    while j < len(rest):
        w = rest[j]
        if isinstance(w, tuple):
            bare.append(w[1])
            j += 1
            continue
        if w in _SHELL_OPS or w.startswith((">", "2>")):
            break
        if not w.startswith("--"):
            j += 1  # a stray word (e.g. a second value of a nargs option)
            continue
        flag, value = w, None
        if "=" in w:
            flag, value = w.split("=", 1)
        elif takes_value(flag) and j + 1 < len(rest) and not (isinstance(rest[j + 1], str) and (rest[j + 1].startswith("--") or rest[j + 1] in _SHELL_OPS)):
            value = rest[j + 1]
            j += 1
            # nargs="*" options (`--labels a b`): further plain words are its values too
            while flag == "--labels" and j + 1 < len(rest) and isinstance(rest[j + 1], str) and not rest[j + 1].startswith("--") \
                    and rest[j + 1] not in _SHELL_OPS:
                j += 1
        options.append((flag, value))
        j += 1
    del i
    suite = next((v for f, v in options if f == "--suite"), None)
    return _Invocation(words[at], suite if isinstance(suite, str) else None, options, bare, words[:program])


def _wrapper(before: list) -> tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]]:
    """`amd_ci_exec.sh -w DIR -e K=V ...`: the directory the command runs in, the environment, and
    the names of variables whose value only the run knows (`-e X="${{ env.X }}"`)."""
    exec_dir, env, later = "", [], []
    i = 0
    while i < len(before):
        w = before[i]
        if w in ("-w", "--workdir") and i + 1 < len(before) and isinstance(before[i + 1], str):
            exec_dir = before[i + 1]
            i += 2
            continue
        if w == "-e" and i + 1 < len(before) and isinstance(before[i + 1], str) and "=" in before[i + 1]:
            name, value = before[i + 1].split("=", 1)
            if "\x00" in value and _ENV_NAME.fullmatch(name):
                later.append(name)  # `-e X="${{ env.X }}"`: set by an earlier step of the run
            elif _ENV_NAME.fullmatch(name) and _ENV_VALUE.fullmatch(value) and not name.startswith("GITHUB_"):
                env.append((name, value))
            i += 2
            continue
        if w == "-e" and i + 2 < len(before) and isinstance(before[i + 1], str) and before[i + 1].endswith("=") \
                and isinstance(before[i + 2], tuple):
            later.append(before[i + 1][:-1])  # `-e X=${{ ... }}`: the run-time value is its own word
            i += 3
            continue
        i += 1
    return exec_dir, tuple(env), tuple(later)


def _install_lines(run: str) -> list[str]:
    out = []
    for line in run.replace("\\\n", " ").split("\n"):
        stripped = line.strip()
        if not stripped or not _INSTALL.search(stripped):  # `run` is shell_code: no comments
            continue
        for part in re.split(r"\s*&&\s*", stripped):
            part = part.strip()
            if part and not re.fullmatch(r"cd\s+\S+", part) and _INSTALL.search(part):
                try:
                    out.append(" ".join(shlex.split(part)))  # as the words the command gets (quotes gone)
                except ValueError:
                    out.append(re.sub(r"\s+", " ", part))
    return out


class _Reader:
    def __init__(self, workflows: list[_Workflow], runner_stem: str, takes_value, read_script, hardware_arch,
                 runner_path: str | None = None):
        self.runner_path = runner_path
        self.by_path = {wf.path: wf for wf in workflows if not wf.external}
        self.workflows = workflows
        self.runner_stem = runner_stem
        self.takes_value = takes_value
        self.read_script = read_script
        self.arch_of = hardware_arch
        self.out: list[SuiteJob] = []
        self.step_reads = 0  # steps read, each matrix row counted: bounded by MAX_STEP_READS
        self.truncated: list[str] = []  # what was not read past that bound
        self.seen: dict[tuple, int] = {}  # (workflow, job, matrix row, suite) -> runs of the suite so far

    def read(self) -> list[SuiteJob]:
        for wf in self.workflows:
            if wf.only_called and not wf.external:
                continue  # read through its callers, with their inputs
            for job_id, job in wf.doc["jobs"].items():
                if not isinstance(job, dict):
                    continue
                uses = job.get("uses")
                if isinstance(uses, str) and uses.startswith("./") and not wf.external:
                    callee = self.by_path.get(uses[2:].split("@", 1)[0])
                    # A workflow with triggers of its own is read as itself (its own schedule, its
                    # own PR trigger); only a workflow that runs nothing unless called is read
                    # through its callers (miles' _run-ci-rocm.yml through pr-test-rocm.yml).
                    if callee is not None and callee.only_called:
                        self._call(wf, str(job_id), job, callee)
                    continue
                self._job(wf, str(job_id), job, Scope(inputs=wf.defaults, env=wf.env), wf, str(job_id))
        return self.out

    def _call(self, caller: _Workflow, job_id: str, job: dict, callee: _Workflow) -> None:
        base = Scope(inputs=caller.defaults, env=caller.env)
        for row in _matrix_rows(job, base):
            scope = Scope(inputs=caller.defaults, matrix=row, env=caller.env)
            inputs = dict(callee.defaults)
            with_ = job.get("with") if isinstance(job.get("with"), dict) else {}
            for name, raw in with_.items():
                value = _evaluated(raw, scope) if isinstance(raw, (str, list)) else raw
                if value is UNKNOWN and isinstance(raw, str) and "--suite" in raw:
                    # a command line: what the caller knows is put in, the rest read word by word
                    inputs[str(name)] = substitute_known(raw, scope)
                    continue
                if value is UNKNOWN:
                    # computed by the caller at run time: an image the caller resolves in another
                    # job is read from that job's script; anything else takes its declared default
                    resolved = self._needs_output(caller, raw, scope) if isinstance(raw, str) else None
                    if resolved is not None:
                        inputs[str(name)] = resolved
                    continue
                inputs[str(name)] = value
            for callee_job_id, callee_job in callee.doc["jobs"].items():
                if isinstance(callee_job, dict):
                    self._job(callee, str(callee_job_id), callee_job, Scope(inputs=inputs, env=callee.env),
                              caller, job_id, caller_row=row)

    def _needs_output(self, wf: _Workflow, raw: str, scope: Scope) -> str | None:
        """`${{ needs.<job>.outputs.<name> }}` read from the step script that writes it, when it
        writes an image name (miles' resolve-ci-image job)."""
        m = re.fullmatch(r"\s*\$\{\{\s*needs\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}\s*", raw)
        if not m:
            return None
        job = wf.doc["jobs"].get(m.group(1))
        if not isinstance(job, dict):
            return None
        outputs = job.get("outputs") if isinstance(job.get("outputs"), dict) else {}
        ref = re.fullmatch(r"\s*\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}\s*", str(outputs.get(m.group(2), "")))
        if not ref:
            return None
        for step in job.get("steps") or []:
            if isinstance(step, dict) and step.get("id") == ref.group(1) and isinstance(step.get("run"), str):
                value = self._step_shell(step, scope).written(ref.group(2))
                if value and rule_from_image(value, 0, "") is not None:
                    return value
        return None

    def _step_shell(self, step: dict, scope: Scope, extra_env: dict | None = None) -> Shell:
        preset = {}
        env = step.get("env") if isinstance(step.get("env"), dict) else {}
        for k, v in {**(extra_env or {}), **env}.items():
            value = substitute(str(v), scope) if not isinstance(v, bool) else v
            if value is not UNKNOWN and isinstance(value, str):
                preset[str(k)] = value
        return Shell(step.get("run") or "", scope, preset)

    def _job(self, wf: _Workflow, job_id: str, job: dict, scope0: Scope, source: _Workflow, source_job: str,
             caller_row: dict | None = None) -> None:
        for row in _matrix_rows(job, scope0):
            scope = Scope(inputs=scope0.inputs, matrix=row, env=scope0.env)
            job_env = {}
            for k, v in (job.get("env") or {}).items() if isinstance(job.get("env"), dict) else []:
                job_env[str(k)] = substitute(str(v), scope) if not isinstance(v, bool) else v
            scope.env.update(job_env)
            pool = _labels(_evaluated(job.get("runs-on"), scope))
            job_timeout = _int(_evaluated(job.get("timeout-minutes"), scope)) if job.get("timeout-minutes") is not None else None
            container = job.get("container")
            container_image = container.get("image") if isinstance(container, dict) else container
            image_text = _evaluated(container_image, scope) if isinstance(container_image, str) else None
            image = rule_from_image(image_text, 0, f"{wf.path}") if isinstance(image_text, str) else None
            written_env: dict[str, str] = {}
            install: list[str] = []
            setup = ""
            for step in job.get("steps") or [] if isinstance(job.get("steps"), list) else []:
                if not isinstance(step, dict):
                    continue
                self.step_reads += 1
                if self.step_reads > MAX_STEP_READS:
                    if not self.truncated:
                        self.truncated.append(f"{wf.path}: more than {MAX_STEP_READS:,} steps (matrix rows counted), "
                                              f"the rest not read")
                    return
                condition = step.get("if")
                if condition is not None:
                    text = str(condition)
                    value = substitute(text if "${{" in text else "${{ " + text + " }}", scope)
                    if value is not UNKNOWN and not value:
                        continue  # a step a manual dispatch skips
                run = step.get("run")
                if not isinstance(run, str):
                    continue
                run = shell_code(run)  # what the step runs: a command or script named in a comment is not run
                shell = self._step_shell(step, scope, {**{k: v for k, v in scope.env.items() if isinstance(v, str)}, **written_env})
                for name in shell.writes():
                    value = shell.written(name)
                    if value:
                        written_env[name] = value
                        if rule_from_image(value, shell.days, "") is not None:
                            image = rule_from_image(value, shell.days, f"{wf.path}:{_line_of(wf, job_id, name)}")
                started = self._started_image(run, scope, shell, pool, wf)
                script = _START_SCRIPT.search(run)
                if script:
                    setup = script.group(1).removeprefix("./")
                if started is not None:
                    image = started
                found = self._invocations(wf, job_id, job, step, run, scope, shell, row)
                if not found and _INSTALL.search(run):
                    install.extend(_install_lines(run))
                    continue
                for inv in found:
                    self._emit(wf, job_id, job, step, inv, scope, pool, job_timeout, image, install, row, source,
                               source_job, setup, caller_row)

    def _started_image(self, run: str, scope: Scope, shell: Shell, pool, wf: _Workflow) -> ImageRule | None:
        """A step that starts the container with the target's script (`amd_ci_start_container.sh`):
        `--custom-image X` names it; otherwise the script's own lookup decides (read from the script)."""
        m = re.search(r"((?:\./)?[\w./-]*start_container[\w-]*\.sh)((?:[ \t]+[^\n;|&]+)?)", run)
        if not m:
            return None
        words = _words(m.group(2), scope, shell.values) or []
        args = {}
        for i, w in enumerate(words):
            if isinstance(w, str) and w.startswith("--") and i + 1 < len(words) and isinstance(words[i + 1], str):
                args[w] = shell.resolve(words[i + 1]) or words[i + 1]
        if "--custom-image" in args:
            return rule_from_image(args["--custom-image"], shell.days, wf.path)
        script_path = m.group(1).removeprefix("./")
        # read_script reads this repository's tree: another repository's workflow (a consumer)
        # starts its own script, which is not here, so its lookup is unknown rather than ours
        text = self.read_script(script_path) if self.read_script and not wf.external else None
        if text is None:
            return None
        return start_script_rule(text, script_path, args, self.arch_of(pool or ()), scope)

    def _invocations(self, wf, job_id, job, step, run: str, scope: Scope, shell: Shell, row) -> list[_Invocation]:
        if "${{" in run:
            run = substitute_known(run, scope)  # `${{ inputs.execute_command }}` (miles' reusable job)
        if "--suite" not in run:
            return []
        out = []
        for line in run.replace("\\\r\n", " ").replace("\\\n", " ").split("\n"):
            if "--suite" not in line or self.runner_stem not in line:
                continue
            words = _words(line, scope, shell.values)
            if not words:
                continue
            inv = _invocation(words, self.runner_stem, self.takes_value)
            if inv is None:
                # `docker exec c bash -c "cd test && python3 run_suite.py ..."`: the command is one quoted word
                inner = next((w for w in words if isinstance(w, str) and self.runner_stem in w and "--suite" in w
                              and " " in w), None)
                inner_words = _words(inner, scope, shell.values) if inner else None
                inv = _invocation(inner_words, self.runner_stem, self.takes_value) if inner_words else None
                if inv is not None:
                    inv.before = words[:words.index(inner)] + inv.before
            if inv is not None and self.runner_path and not _same_script(inv.runner, self.runner_path):
                continue  # another program of the same name (sglang's multimodal_gen/test/run_suite.py, miles' runner)
            # `<command> --list-only` (miles' plan step) lists the suite; it does not run it
            if inv is not None and inv.suite and not any(f == "--list-only" for f, _ in inv.options):
                out.append(inv)
        return out

    def _emit(self, wf, job_id, job, step, inv: _Invocation, scope: Scope, pool, job_timeout, image, install, row,
              source: _Workflow, source_job: str, setup: str = "", caller_row: dict | None = None) -> None:
        opts = dict()
        flags: list[str] = []
        unresolved: list[str] = []
        cadence = None
        hw = None
        size = None
        pid = None
        timeout_per_file = None
        for flag, value in inv.options:
            if value is None and self.takes_value(flag) and flag not in _STRUCTURAL and flag != "--labels":
                # a value-taking option with no value (the command's last word, or another option
                # next): the runner refuses it, and a plan copying it would pass a None or let the
                # next option be read as its value; `--labels` alone is a valid empty list
                continue
            if isinstance(value, tuple):  # only the run knows its value
                if flag in ("--auto-partition-size",):
                    size = 0
                elif flag == "--auto-partition-id":
                    pid = value
                else:
                    unresolved.append(f"{flag} ${{{{{value[1]}}}}}")
                continue
            if flag == "--hw":
                hw = value
            elif flag == "--auto-partition-size":
                size = _int(value) or 0
            elif flag == "--auto-partition-id":
                pid = value
            elif flag == "--timeout-per-file":
                timeout_per_file = _int(value)
            elif flag == "--nightly":
                cadence = "nightly"
            elif flag == "--cadence":
                cadence = value
                flags += [flag, value]
            elif flag in _STRUCTURAL:
                continue
            else:
                flags += [flag] if value is None else [flag, value]
            opts[flag] = value
        if cadence == "nightly" and "--nightly" in opts:
            flags.append("--nightly")
        conditional = []
        for expr in inv.bare_unknown:
            conditional.extend(_QUOTED_FLAG.findall(expr))
        shards = 1
        if size is not None:
            shards = size
        elif pid is not None:
            key = re.fullmatch(r"\s*matrix\.([\w-]+)\s*", pid[1]) if isinstance(pid, tuple) else None
            strategy = job.get("strategy") if isinstance(job.get("strategy"), dict) else {}
            axis = (strategy.get("matrix") or {}).get(key.group(1)) if key and isinstance(strategy.get("matrix"), dict) else None
            shards = len(axis) if isinstance(axis, list) else 0
        step_timeout = _int(_evaluated(step.get("timeout-minutes"), scope)) if step.get("timeout-minutes") is not None else None
        exec_dir, env, env_later = _wrapper(inv.before)
        label = source.path
        key = (label, source_job if source is not wf else job_id, wf.path, job_id, inv.suite, repr(caller_row), repr(row))
        self.seen[key] = self.seen.get(key, 0) + 1
        self.out.append(SuiteJob(
            suite=inv.suite, workflow=label, job=source_job if source is not wf else job_id,
            line=_line_of(source, source_job, inv.suite) if source is not wf else _line_of(wf, job_id, inv.suite),
            external=wf.external, pool=pool, hw=hw, cadence=cadence,
            pull_request=bool({"pull_request", "pull_request_target"} & source.triggers),
            scheduled="schedule" in source.triggers, shards=shards, timeout_per_file_s=timeout_per_file,
            job_timeout_min=step_timeout or job_timeout or GITHUB_DEFAULT_TIMEOUT_MINUTES, image=image,
            install=tuple(dict.fromkeys(install)), flags=tuple(flags), conditional=tuple(dict.fromkeys(conditional)),
            unresolved=tuple(unresolved), runner=inv.runner, exec_dir=exec_dir, env=env, env_at_run_time=env_later,
            triggers=source.triggers, setup=setup, container=_container_keys(job.get("container")),
            invocation=self.seen[key]))


def read_suite_jobs(own: dict[str, str], external: dict[str, str] | None = None, *, runner: str = "run_suite",
                    options=None, read_script=None, yaml_nodes: int = 200_000, arch_of=None,
                    runner_path: str | None = None, unread: list[str] | None = None) -> list[SuiteJob]:
    """Every command line of the workflows `own` (path -> text, this repository's, default branch)
    and `external` (label -> text, other repositories' consumers) that runs a suite.

    `options`: the runner's argparse options (checks/target/runner.py), to tell a flag from an option
    that takes a value; `read_script(path)`: a file of the same tree (the container start script);
    `arch_of(labels)`: the GPU family a pool's labels name (`mi35x`), for a start script that
    picks its image by family. `runner_path`: the runner's path in its repository
    (`test/run_suite.py`): a command running a script of the same name elsewhere
    (`sglang/multimodal_gen/test/run_suite.py`, another repository's `tests/ci/run_suite.py`) is
    another program, not a run of this runner. `unread`, when given, gets what was not read (past
    MAX_STEP_READS).
    """
    workflows = []
    for path, text in sorted(own.items()):
        wf = parse_workflow(path, text, yaml_nodes)
        if wf is not None:
            workflows.append(wf)
    for label, text in sorted((external or {}).items()):
        wf = parse_workflow(label, text, yaml_nodes, external=True)
        if wf is not None:
            workflows.append(wf)

    def takes_value(flag: str) -> bool:
        if options and flag in options:
            return options[flag].takes_value
        return flag in _STRUCTURAL or flag in ("--cadence", "--labels", "--max-attempts")

    def default_arch(labels) -> str:
        for label in labels:
            m = re.search(r"(mi\d+[a-z]*)", str(label).lower())
            if m:
                return m.group(1)
        return ""

    reader = _Reader(workflows, runner, takes_value, read_script, arch_of or default_arch, runner_path)
    jobs = reader.read()
    if unread is not None:
        unread.extend(reader.truncated)
    return jobs


def fleet_of(jobs: list[SuiteJob], is_gpu_pool) -> list[tuple[str, ...]]:
    """The runner pools this repository's own jobs run its suites on, that `is_gpu_pool(labels)`
    accepts (the on-demand hardware: MI350-class, through the `hardware:` mapping). Largest first."""
    pools = {j.pool for j in jobs if not j.external and j.pool and is_gpu_pool(j.pool)}
    return sorted(pools, key=lambda p: (-(gpus_of_labels(p) or 0), p))
