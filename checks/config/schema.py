"""`.github/ci-registrar.yml`: its schema, defaults that fit radixark/miles, and line-exact errors.

The file is read from the default branch, never from a PR (the caller decides which copy to pass).
An invalid file is a REG900 finding at its line; defaults are never silently used instead.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Literal

import msgspec
import yaml

from checks.config import yamlload

from checks.limits import Limits
from checks.model import Finding
from checks.wording import did_you_mean
from checks.ruleset import rule_names
from checks.ruleset.reading import reg900_invalid_configuration as reg900

CONFIG_PATH = ".github/ci-registrar.yml"

SeverityName = Literal["failure", "warning", "notice", "off"]
InputSource = Literal["suite", "head_sha", "pull_number", "files", "repository", "runs_on", "shards", "image",
                      "runner_flags", "plan"]
CacheMode = Literal["read-only", "scratch", "shared"]
# A `dispatch:` entry under this key applies to every suite without an entry of its own.
ANY_SUITE = "*"


class _Struct(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Paths(_Struct):
    register_module: str = "tests/ci/ci_register.py"
    suites_module: str = "tests/ci/run_suite.py"
    suites_variables: list[str] = msgspec.field(default_factory=lambda: ["CI_SUITES"])
    labels_module: str = "tests/ci/labels.py"
    labels_variable: str = "KNOWN_LABELS"
    test_roots: list[str] = msgspec.field(default_factory=lambda: ["tests/fast", "tests/fast-gpu", "tests/e2e", "tests/ci"])
    implicit_cpu_roots: list[str] = msgspec.field(default_factory=lambda: ["tests/fast"])
    test_pattern: str = "test_*.py"
    test_excludes: list[str] = msgspec.field(default_factory=list)  # file names (fnmatch) never discovered
    # per-root discovery, for runners whose roots differ in pattern (sglang's jit_kernel tests and benchmarks)
    discovery: list["DiscoveryRoot"] = msgspec.field(default_factory=list)
    workflows_dir: str = ".github/workflows"

    def contract_modules(self) -> list[str]:
        """The Python modules that declare the contract (the register functions, the suites, the
        labels), sorted: what every check reads besides the configuration and the test files."""
        return sorted({self.register_module, self.suites_module, self.labels_module})


class DiscoveryRoot(_Struct):
    root: str
    pattern: str = "*.py"
    excludes: list[str] = msgspec.field(default_factory=list)


class Validity(_Struct):
    """What the target's runner accepts where its code does not say it in a form the engine reads.
    null: read from the target's code (checks/target/contract.py), else the documented fallback."""

    est_time_positive: bool | None = None
    main_block_required: bool | None = None
    unregistered_file: Literal["failure", "warning"] | None = None
    unknown_suite_when_disabled: Literal["failure", "warning"] | None = None
    suite_checked_backends: list[str] | None = None
    suite_template: str | None = None


class Consumer(_Struct):
    """A workflow of another repository that runs this repository's suites.

    The preferred form names the workflow only (`repository` + `workflow`): it is read from that
    file itself (the App through the API at that repository's default branch, cached by ETag;
    the CLI from `--consumers-from PATH`), so its suites, `--hw`/`--cadence` flags, timeouts and
    shards never go stale. The hand-typed form (`suites:` listed, with `timeout_minutes` and
    `shards`) is still accepted for existing configurations; it is not compared with the file.
    """

    repository: str
    workflow: str
    suites: list[str] | None = None
    timeout_minutes: int | None = None
    shards: int | None = None


class Calibration(_Struct):
    hardware: str = "MI355X"
    window_runs: int = 10
    window_days: int = 30
    min_samples: int = 3
    margin: float = 1.15
    round_to_s: int = 10
    over_factor: float = 1.5
    over_slack_s: float = 120
    timeout_per_file_s: int = 1800
    # est_time proposals (docs/calibration.md): never below the slowest passing run x max_margin;
    # runs of unmerged code (pull request heads, on-demand runs) count only when include_unmerged.
    max_margin: float = 1.05
    floor_days: int = 90  # ... the slowest passing run within this many days (at least window_days)
    include_unmerged: bool = False
    # whose runs count (docs/calibration.md): runs of `branch` (null: the repository's default branch)
    # started by one of `events`; never a pull request's, a fork's or an on-demand run
    events: list[str] = msgspec.field(default_factory=lambda: ["schedule", "push"])
    branch: str | None = None
    # the calibration hardware of a suite or runner pool: the first glob (case-insensitive) that
    # matches the registration's suite; else `hardware`
    hardware_by_suite: dict[str, str] = msgspec.field(default_factory=lambda: {
        "*mi35x*": "MI355X", "*mi350*": "MI355X", "*mi30x*": "MI300X", "*mi300*": "MI300X"})
    # the runner's per-file timeout: max(timeout_per_file_s, timeout_factor x est_time, est_time +
    # timeout_slack_s); both null: read from the runner's revision (checks/target/timeout_model.py)
    timeout_factor: float | None = None
    timeout_slack_s: float | None = None
    # the App's calibration pull request (docs/calibration.md): off unless set; refreshed every N days
    pull_requests: bool = False
    pull_request_every_days: int = 7
    # ... and at once after a durations ingest that changes a REG020 verdict, at most once per N hours (0: never)
    ingest_refresh_every_hours: int = 24


class DurationSource(_Struct):
    workflow: str
    repository: str | None = None


class Dispatch(_Struct):
    """Where and how one suite runs on demand. Every None is read from the job of the target's own
    CI that runs the suite, on the default branch (checks/workflows/jobs.py, checks/target/dispatch_plan.py)."""

    workflow: str
    repository: str | None = None
    ref: str = "main"
    # Which of the jobs that run the suite to copy: `<workflow file>` or `<workflow file>#<job id>`;
    # None: the nightly job for a nightly suite, the PR job otherwise.
    source: str | None = None
    # The GPUs one runner of the run occupies; None: read from its labels (`4gpu`, `...-gpu-8`),
    # else the GPU count in the suite name (stage-c-4-gpu-... -> 4), else 1.
    gpus: int | None = None
    runs_on: list[str] | None = None  # None: the pool of the job that runs it, or a runner of the fleet that fits
    larger_runner: bool = False  # a runner of the fleet with more GPUs than the suite needs may run it
    shards: int | None = None  # parallel jobs (--auto-partition-size); None: the job's own partitions
    image: str | None = None  # an image (tag, repository:tag, @sha256:...); None: the job's, resolved as it does
    runner_flags: list[str] | None = None  # None: the job's own flags, each one the runner accepts
    timeout_per_file_s: int | None = None  # None: the job's --timeout-per-file, else the runner's default
    job_timeout_min: int | None = None  # None: the job's step (else job) timeout-minutes, else 360
    install: list[str] | None = None  # None: the job's own install steps
    # The GPU job's caches: `read-only` (the host's cache mounted read-only), `scratch` (none: each
    # run starts empty) or `shared` (the host's cache writable, as the target's own CI mounts it:
    # pull request code could then poison what later trusted jobs read; docs/on-demand-workflow.md).
    cache: CacheMode = "read-only"
    inputs: dict[str, InputSource] = msgspec.field(
        default_factory=lambda: {"suite": "suite", "head_sha": "head_sha", "pull_number": "pull_number", "test_files": "files",
                                 "plan": "plan"}
    )


class Approvers(_Struct):
    permissions: list[Literal["admin", "maintain", "write", "triage", "read"]] = msgspec.field(
        default_factory=lambda: ["admin", "maintain", "write"]
    )
    teams: list[str] = msgspec.field(default_factory=list)
    users: list[str] = msgspec.field(default_factory=list)
    two_person: bool = False


class Budgets(_Struct):
    daily_gpu_hours: float = 64
    max_files_per_command: int = 20
    cancel_superseded_runs: bool = True  # a push cancels the on-demand runs of the PR's older heads


def _default_consumers() -> list[Consumer]:
    # radixark/miles' nightly- suites run in sgl-project/sglang's MI350 nightly workflow: read from
    # that file (its suites, `--hw rocm --cadence nightly`, its timeout), never typed here.
    return [Consumer(repository="sgl-project/sglang", workflow=".github/workflows/nightly-test-amd-miles-rocm720.yml")]


class Config(_Struct):
    paths: Paths = msgspec.field(default_factory=Paths)
    consumers: list[Consumer] = msgspec.field(default_factory=_default_consumers)
    calibration: Calibration = msgspec.field(default_factory=Calibration)
    hardware: dict[str, str] = msgspec.field(default_factory=lambda: {"mi350": "MI355X", "linux-mi35x-gpu-*": "MI355X"})
    duration_sources: list[DurationSource] = msgspec.field(default_factory=lambda: [DurationSource(workflow="pr-test-rocm.yml")])
    dispatch: dict[str, Dispatch] = msgspec.field(default_factory=dict)
    approvers: Approvers = msgspec.field(default_factory=Approvers)
    budgets: Budgets = msgspec.field(default_factory=Budgets)
    rules: dict[str, SeverityName] = msgspec.field(default_factory=dict)
    validity: Validity = msgspec.field(default_factory=Validity)
    # "required": a newly enabled ROCm registration without evidence fails (REG022); "notice": it is said
    verification: Literal["notice", "required"] = "notice"

    def severity_override(self, code: str) -> str | None:
        return self.rules.get(code)

    def dispatch_for(self, suite: str) -> Dispatch | None:
        """The suite's own `dispatch:` entry, else the `"*"` entry for every suite, else None."""
        return self.dispatch.get(suite) or self.dispatch.get(ANY_SUITE)


_WORKFLOW_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.ya?ml|\d{1,20}")
_REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_BRANCH = re.compile(r"(?!.*\.\.)(?!/)[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")
_INPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,99}")
# The shapes the shipped workflow accepts (deploy/workflows/rocm-on-demand.yml re-checks them).
RUNNER_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# a tag may hold {date} (the newest YYYYMMDD with an image) and {version}, as the targets resolve theirs
IMAGE = re.compile(r"[A-Za-z0-9_{][A-Za-z0-9_.{}-]{0,127}|[a-z0-9][a-z0-9._/-]{0,199}(:[A-Za-z0-9_{][A-Za-z0-9_.{}-]{0,127}|@sha256:[0-9a-f]{64})")
RUNNER_FLAG = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9-]{0,63}|[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_SHARDS = 8
# The longest job timeout a plan may carry: self-hosted runners' jobs may run past GitHub-hosted
# runners' 360 minutes (sglang's DeepSeek-V4-Pro nightly sets 480); the shipped workflow's own cap.
MAX_JOB_MINUTES = 720
_SOURCE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.ya?ml(#[A-Za-z_][A-Za-z0-9_-]{0,99})?")
# An install command the shipped workflow can run as words (no shell features): what the targets'
# own jobs run (`bash scripts/ci/amd/amd_ci_install_dependency.sh --skip-test-time-deps`,
# `pip install -e . --no-deps --break-system-packages`).
INSTALL_COMMAND = re.compile(r"[A-Za-z0-9_./=<>\[\],:+-]+(?: [A-Za-z0-9_./=<>\[\],:+-]+){0,30}")
_PATH_PART = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def _node_for_path(root: yaml.Node | None, path: str) -> yaml.Node | None:
    """The YAML node at a msgspec error path such as `$.calibration.margin` or `$.consumers[0]`."""
    node = root
    for key, index in _PATH_PART.findall(path.removeprefix("$")):
        if isinstance(node, yaml.MappingNode) and key:
            node = next((v for k, v in node.value if _names_key(getattr(k, "value", None), key)), node)
        elif isinstance(node, yaml.SequenceNode) and index:
            i = int(index)
            node = node.value[i] if i < len(node.value) else node
    return node


def _names_key(written, key: str) -> bool:
    """The YAML key `written` is the one an error path calls `key`: itself, or a rule's name for its
    code (`rules:` keys are read by name too, and validated as codes)."""
    return written == key or written == rule_names().get(key)


def _navigate(data, path: str):
    for key, index in _PATH_PART.findall(path.removeprefix("$")):
        data = data[key] if key else data[int(index)]
    return data


def _unwrap(t):
    """`X | None` -> X (the arm that can hold fields or entries)."""
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(t) if a is not type(None)]
        return arms[0] if len(arms) == 1 else t
    return t


def _type_at(path: str):
    """The declared type at a msgspec error path made of `.field` and `[index]` parts, or None."""
    t = Config
    for key, index in _PATH_PART.findall(path.removeprefix("$")):
        t = _unwrap(t)
        if key and isinstance(t, type) and issubclass(t, msgspec.Struct):
            t = {f.encode_name: f.type for f in msgspec.structs.fields(t)}.get(key)
        elif index and typing.get_origin(t) is list:
            t = typing.get_args(t)[0]
        else:
            return None
    return _unwrap(t)


def _resolve_dict_entry(data, err_path: str) -> str:
    """msgspec names a bad dict value `$.rules[...]`: find which key by validating one entry at a
    time against the dict's declared type (each entry once: linear in the mapping's size)."""
    prefix, rest = err_path.split("[...]", 1)
    try:
        container = _navigate(data, prefix)
    except (KeyError, IndexError, TypeError):
        return prefix
    dict_type = _type_at(prefix)
    if not isinstance(container, dict) or typing.get_origin(dict_type) is not dict:
        return prefix
    for key, value in container.items():
        try:
            msgspec.convert({key: value}, dict_type, strict=True)
        except msgspec.ValidationError:
            return f"{prefix}.{key}{rest}"
    return prefix


def _unknown_field_node(node: yaml.Node | None, field: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, _v in node.value:
            if _names_key(getattr(k, "value", None), field):
                return k
    return node


def _semantic_errors(config: Config) -> list[tuple[str, str]]:
    """Checks the type system cannot express: (error path, message)."""
    errors = []
    for code in config.rules:
        if code not in rule_names():
            names = [*rule_names(), *rule_names().values()]
            errors.append((f"$.rules.{code}", f"unknown rule code `{code}`{did_you_mean(code, names)} "
                                              f"(known: {', '.join(sorted(rule_names()))})"))
    for i, consumer in enumerate(config.consumers):
        if not _REPOSITORY.fullmatch(consumer.repository):
            errors.append((f"$.consumers[{i}].repository", "consumers[].repository must be `owner/name`"))
        if not consumer.workflow or consumer.workflow.startswith("/") or ".." in consumer.workflow.split("/"):
            errors.append((f"$.consumers[{i}].workflow", "consumers[].workflow must be the workflow's path in that repository, "
                                                         "e.g. `.github/workflows/nightly.yml`"))
        if consumer.suites is None and (consumer.shards is not None or consumer.timeout_minutes is not None):
            errors.append((f"$.consumers[{i}]", "timeout_minutes and shards belong to a hand-typed consumer (with `suites:`); "
                                                 "without `suites:` they are read from the workflow itself"))
    for suite, d in config.dispatch.items():
        where = f"$.dispatch.{suite}"
        if not _WORKFLOW_FILE.fullmatch(d.workflow):
            errors.append((f"{where}.workflow", f"dispatch.{suite}.workflow must be a workflow file name such as "
                                                "`rocm-on-demand.yml` (or its numeric id)"))
        if d.repository is not None and not _REPOSITORY.fullmatch(d.repository):
            errors.append((f"{where}.repository", f"dispatch.{suite}.repository must be `owner/name`"))
        if not _BRANCH.fullmatch(d.ref) or re.fullmatch(r"[0-9a-fA-F]{40}", d.ref) or d.ref.startswith(("refs/pull/", "pull/")):
            errors.append((f"{where}.ref", f"dispatch.{suite}.ref must be a branch of the base repository "
                                           "(a trusted ref, never a commit SHA or a pull request ref)"))
        if d.shards is not None and not 1 <= d.shards <= MAX_SHARDS:
            errors.append((f"{where}.shards", f"dispatch.{suite}.shards must be from 1 to {MAX_SHARDS}"))
        if d.timeout_per_file_s is not None and not 60 <= d.timeout_per_file_s <= MAX_JOB_MINUTES * 60:
            errors.append((f"{where}.timeout_per_file_s", f"dispatch.{suite}.timeout_per_file_s must be from 60 to "
                                                          f"{MAX_JOB_MINUTES * 60} seconds"))
        if d.job_timeout_min is not None and not 1 <= d.job_timeout_min <= MAX_JOB_MINUTES:
            errors.append((f"{where}.job_timeout_min", f"dispatch.{suite}.job_timeout_min must be from 1 to "
                                                       f"{MAX_JOB_MINUTES} (the shipped workflow's cap)"))
        if d.source is not None and not _SOURCE.fullmatch(d.source):
            errors.append((f"{where}.source", f"dispatch.{suite}.source must be a workflow file name, optionally "
                                              "with `#<job id>` (`nightly-test-amd.yml#nightly-test-1-gpu-mi35x`)"))
        if d.install is not None and (len(d.install) > 10 or not all(INSTALL_COMMAND.fullmatch(x) for x in d.install)):
            errors.append((f"{where}.install", f"dispatch.{suite}.install: at most 10 commands of plain words "
                                               "(no `$`, backquotes, `;`, `|`, `&` or redirections)"))
        if d.runs_on is not None and (not 1 <= len(d.runs_on) <= 10 or not all(RUNNER_LABEL.fullmatch(x) for x in d.runs_on)):
            errors.append((f"{where}.runs_on", f"dispatch.{suite}.runs_on must be 1 to 10 runner labels of letters, "
                                               "digits, `.`, `_` and `-`"))
        if d.image is not None and not IMAGE.fullmatch(d.image):
            errors.append((f"{where}.image", f"dispatch.{suite}.image must be an image tag (`miles-rocm720-mi35x`), "
                                             "`repository:tag` or `repository@sha256:<digest>`"))
        if d.runner_flags is not None and (len(d.runner_flags) > 20 or not all(RUNNER_FLAG.fullmatch(x) for x in d.runner_flags)):
            errors.append((f"{where}.runner_flags", f"dispatch.{suite}.runner_flags: at most 20 plain words "
                                                    "such as `--cadence` and `nightly` (no spaces, quotes or `$`)"))
        if len(d.inputs) > 25 or any(not _INPUT_NAME.fullmatch(k) for k in d.inputs):
            errors.append((f"{where}.inputs", f"dispatch.{suite}.inputs: at most 25 inputs, named with letters, "
                                              "digits, `_` and `-`"))
    # every number finite and in its range (budgets, timeouts, shard counts, days): REG900's own check
    numbers = reg900.number_errors(config)
    errors.extend(numbers)
    c = config.calibration
    if numbers:
        return errors  # the comparisons below mean nothing on a number out of range
    if c.ingest_refresh_every_hours < 0:
        errors.append(("$.calibration.ingest_refresh_every_hours", "calibration.ingest_refresh_every_hours must not be "
                                                                  "negative (0: an ingest never refreshes)"))
    if c.floor_days < c.window_days:
        errors.append(("$.calibration.floor_days", "calibration.floor_days must be at least window_days: the floor "
                                                   "covers every passing run of the window"))
    if c.max_margin < 1:
        errors.append(("$.calibration.max_margin", "calibration.max_margin must be at least 1: a proposal "
                                                   "below the slowest passing run would cut it"))
    return errors


def load_config(text: str | bytes | None, path: str = CONFIG_PATH, limits: Limits | None = None) -> tuple[Config, list[Finding]]:
    """Parse and validate the configuration; (defaults, []) when there is no file.

    On an invalid file the returned config is the defaults, but the REG900 finding makes the check
    fail: the caller must not present a result computed from silently substituted values as clean.
    A file over the `file_bytes` or `yaml_nodes` cap is not read: a REG902 finding with severity
    failure (the defaults are not silently used instead).
    """
    if text is None:
        return Config(), []
    limits = limits or Limits()
    if len(text) > limits.file_bytes:
        return Config(), [_limit_finding(path, limits, "file_bytes", f"{len(text):,} bytes")]
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Config(), [reg900.not_utf8(path, exc.reason)]
    try:
        root = yamlload.compose_bounded(text, limits.yaml_nodes)
        data = yamlload.construct(root)
    except (yamlload.TooLarge, RecursionError):
        return Config(), [_limit_finding(path, limits, "yaml_nodes", "counting its aliases expanded")]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark else 1
        column = mark.column + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc)
        return Config(), [reg900.not_yaml(path, line, column, problem, number_too_long=isinstance(exc, yamlload.NumberTooLong))]
    if data is None:
        return Config(), []
    data = _yaml11_severities(data)
    findings = []
    kept: dict[str, list[int]] = {}
    try:
        config = msgspec.convert(data, Config, strict=True)
    except msgspec.ValidationError as exc:
        # msgspec stops at the first error; a person fixing the file wants them all at once.
        errors = _every_schema_error(data) if isinstance(data, dict) else []
        findings = [_schema_finding(path, root, part, message, shift)
                    for message, shift, part in (errors or [(str(exc), None, data)])]
        # The other errors too, in the same run: the checks below on what is left once the parts
        # of the wrong type are taken out (each section's checks read that section only).
        rest = _without(data, errors, kept) if errors else None
        if rest is None:
            return Config(), findings
        config = rest
    for err_path, message in _semantic_errors(config):
        err_path = _original_index(err_path, kept)
        node = _node_for_path(root, err_path)
        if err_path.startswith("$.rules."):
            node = _unknown_field_node(_node_for_path(root, "$.rules"), err_path.removeprefix("$.rules."))
        findings.append(reg900.invalid(path, node, message))
    findings.sort(key=lambda f: (f.span.line, f.span.column))
    return (Config() if findings else config), findings


def _without(data: dict, errors, kept: dict[str, list[int]]) -> Config | None:
    """The configuration without the parts `_every_schema_error` refused, or None when what is left
    still does not validate. `kept[key]`: the original index of each list entry left in section key."""
    rest = dict(data)
    dropped: dict[str, set[int]] = {}
    for _message, shift, piece in errors:
        ((key, value),) = piece.items()
        if shift is not None:
            dropped.setdefault(key, set()).add(shift[1])
        elif isinstance(value, dict) and len(value) == 1 and isinstance(rest.get(key), dict) and len(data[key]) > 1:
            rest[key] = {k: v for k, v in rest[key].items() if k not in value}
        else:
            rest.pop(key, None)
    for key, indexes in dropped.items():
        if isinstance(rest.get(key), list):
            kept[key] = [i for i in range(len(data[key])) if i not in indexes]
            rest[key] = [data[key][i] for i in kept[key]]
    try:
        return msgspec.convert(rest, Config, strict=True)
    except msgspec.ValidationError:
        return None


def _original_index(err_path: str, kept: dict[str, list[int]]) -> str:
    """`$.consumers[1].shards` of the configuration without refused entries -> its index in the file."""
    m = re.match(r"\$\.([^.\[]+)\[(\d+)\]", err_path)
    if not m or m.group(1) not in kept:
        return err_path
    original = kept[m.group(1)][int(m.group(2))]
    return f"$.{m.group(1)}[{original}]" + err_path[m.end():]


def _yaml11_severities(data):
    """`rules:` as a person writes it: a rule by its code or its name (as `check --select` takes
    it), and `false` for off. (`off`, `on`, `yes` and `no` are words here, not booleans: this file
    is read with YAML 1.2 booleans, checks/config/yamlload.py.)"""
    if isinstance(data, dict) and isinstance(data.get("rules"), dict):
        names = {name: code for code, name in rule_names().items()}
        data = {**data, "rules": {names.get(k, k) if isinstance(k, str) else k: "off" if v is False else v
                                  for k, v in data["rules"].items()}}
    return data


def _every_schema_error(data: dict) -> list[tuple[str, tuple[str, int] | None, dict]]:
    """Each top-level section, and each entry of a mapping or list section, validated alone:
    (msgspec's message, the list index to put back, the part validated) for every part that fails.
    A section whose fields cannot stand alone (a required one) is validated whole."""
    errors: list[tuple[str, tuple[str, int] | None, dict]] = []
    for key, value in data.items():
        section_type = _type_at(f"$.{key}")
        is_struct = isinstance(section_type, type) and issubclass(section_type, msgspec.Struct)
        if isinstance(value, dict) and len(value) > 1 and (is_struct or typing.get_origin(section_type) is dict):
            pieces = [({key: {k: v}}, None) for k, v in value.items()]
        elif isinstance(value, list) and len(value) > 1 and typing.get_origin(section_type) is list:
            pieces = [({key: [item]}, (key, i)) for i, item in enumerate(value)]
        else:
            pieces = [({key: value}, None)]
        found = []
        for piece, shift in pieces:
            try:
                msgspec.convert(piece, Config, strict=True)
            except msgspec.ValidationError as exc:
                found.append((str(exc), shift, piece))
        if len(pieces) > 1 and is_struct and any("missing required field" in m for m, _, _ in found):
            try:
                msgspec.convert({key: value}, Config, strict=True)
                found = []
            except msgspec.ValidationError as exc:
                found = [(str(exc), None, {key: value})]
        errors += found
    return errors


def _fields_at(err_path: str) -> tuple[str, ...]:
    """The keys the configuration allows at `err_path` (`$`, `$.paths`, `$.dispatch.s2`, `$.consumers[1]`),
    for a did-you-mean on an unknown one."""
    def unwrap(tp):  # `X | None` -> X
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1 else tp

    tp = Config
    for name, _index in re.findall(r"\.([^.\[]+)|\[([^\]]*)\]", err_path):
        tp = unwrap(tp)
        if name and isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            tp = typing.get_type_hints(tp).get(name)
        else:  # a list's item or a dict's value
            args = typing.get_args(tp)
            tp = args[-1] if args else None
        if tp is None:
            return ()
    tp = unwrap(tp)
    return tp.__struct_fields__ if isinstance(tp, type) and issubclass(tp, msgspec.Struct) else ()


def _schema_finding(path: str, root, data, message: str, shift: tuple[str, int] | None) -> Finding:
    """The REG900 finding for msgspec's `message`, at the node of the file it names."""
    where = message.rsplit(" - at `", 1)
    node, err_path, shown = root, None, None
    top = re.fullmatch(r"Object contains unknown field `([^`]+)`", message)
    if top:  # a top-level key: msgspec names no place
        message += did_you_mean(top.group(1), Config.__struct_fields__)
    if len(where) == 2:
        err_path = where[1].rstrip("`")
        if shift is not None:  # validated alone as item 0 of its list: name its real place
            err_path = err_path.replace(f"$.{shift[0]}[0]", f"$.{shift[0]}[{shift[1]}]", 1)
        if "[...]" in err_path:
            err_path = _resolve_dict_entry(data, err_path)
        node = _node_for_path(root, err_path)
        unknown = re.match(r"Object contains unknown field `([^`]+)`", message)
        if unknown:
            node = _unknown_field_node(node, unknown.group(1))
            hint = did_you_mean(unknown.group(1), _fields_at(err_path))
            message = message.replace(unknown.group(0), unknown.group(0) + hint, 1)
        shown = err_path.removeprefix('$.') or 'top level'
        if err_path.startswith("$.rules."):  # the rule as the file names it (`unknown-suite`, not REG010)
            key = _unknown_field_node(_node_for_path(root, "$.rules"), err_path.removeprefix("$.rules."))
            shown = f"rules.{key.value}" if isinstance(key, yaml.ScalarNode) else shown
    return reg900.schema_error(path, node, message, err_path, shown)


def _limit_finding(path: str, limits: Limits, limit: str, measured: str) -> Finding:
    from checks.model import Severity
    from checks.ruleset.reading.reg902_analysis_limit_reached import limit_reached

    return limit_reached(limit, getattr(limits, limit), Limits.env_var(limit), path,
                         "the configuration is not read, and the check fails rather than use the defaults in its place",
                         measured=measured, severity=Severity.FAILURE)
