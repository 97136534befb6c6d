"""How every suite runs at one revision: the one map the suite rules, the reviewer's summary, the
buttons, the run plan, the budget and calibration read.

Built once per revision (the default branch's for the App's plans and budget, the pull request
head's and base's for its check) from that revision's workflows and runner only:

- the jobs that run each (backend, suite), read by checks/workflows/jobs.py (the reader `run-plan`
  copies a job with): the workflow line of the step, the job, its workflow's triggers, its runner
  pool, container (image, the start script, options, environment, mounts), every invocation (a
  job may run a suite twice with another environment), its selection flags (cadence, labels,
  partitions) and its per-file and job timeouts;
- where each one is written, read by checks/workflows/runs.py (the consumer reading the rules
  have always pointed at: `--suite` on a step, a matrix value, a caller's `with:`), so a finding
  still points at the text a reviewer edits;
- the pool's GPU count (from its labels) and hardware (the `hardware:` label globs);
- the files a workflow runs itself (`python3 path`, pytest of a file, directory or glob);
- what could not be read: an external consumer not given or unreadable, a workflow not read
  whole (REG902), a pool only the run decides. These are "unknown", never "none".

A run of the model (`Run`) reads like the consumer readings it joins: `suite`, `consumer`, `file`,
`span`, `hw`, `nightly`, `shards`, `timeout_minutes`, `selects(backend)`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from checks.model import Registration, Span
from checks.workflows.jobs import SuiteJob, gpus_of_labels
from checks.target.hardware import hardware_for_labels
from checks.workflows.runs import GITHUB_DEFAULT_TIMEOUT_MINUTES, NIGHTLY_CADENCES, SuiteUse, direct_run_of

@dataclass(frozen=True)
class Pool:
    """The runners a job runs on: their labels, and from them the GPUs and hardware of one runner."""

    labels: tuple[str, ...] | None  # None: only the run decides (`runs-on: ${{ needs.x.outputs.y }}`)
    gpus: int | None  # None: no label says it
    hardware: str | None  # "MI355X", "MI300X"; None: the `hardware:` globs name none (or several)

    def text(self) -> str:
        if self.labels is None:
            return "a runner decided at run time"
        return "[" + ", ".join(self.labels) + "]"


@dataclass(frozen=True)
class Run:
    """One invocation of a suite by one job (a job that runs a suite twice is two runs)."""

    suite: str
    consumer: str  # ".github/workflows/x.yml", or "owner/repo:.github/workflows/x.yml" for another repository's
    file: str | None  # where a finding about this run points (None: another repository's file)
    span: Span  # the step that runs it
    hw: str | None  # the backend it selects (`--hw`); None: any
    nightly: bool | None  # selects nightly=True registrations; None: decided at run time
    shards: int  # 1 when not partitioned; 0: decided at run time
    timeout_minutes: int | None  # the job's (or step's) timeout-minutes; None: GitHub's default
    job: SuiteJob | None = None  # how it runs; None: the consumer reading found it, the job reader could not copy it
    pool: Pool = Pool(None, None, None)
    external: bool = False
    job_id: str | None = None

    def selects(self, backend: str) -> bool:
        return self.hw is None or self.hw == backend

    @property
    def where(self) -> str:
        """"workflow:line" of the step that runs the suite."""
        return f"{self.consumer}:{self.span.line}"

    @property
    def cadence(self) -> str:
        """What the summary's cadence column says: "nightly", "per run", or "set at run time"."""
        if self.nightly is None:
            return "set at run time"
        return "nightly" if self.nightly else "per run"

    @property
    def triggers(self) -> frozenset[str]:
        return self.job.triggers if self.job is not None else frozenset()

    @property
    def job_timeout_minutes(self) -> int:
        return self.timeout_minutes or GITHUB_DEFAULT_TIMEOUT_MINUTES

    def admits(self, reg: Registration, policy=None) -> bool:
        """The runner of this invocation selects `reg`: enabled, its backend, nightly=True only where
        the invocation admits nightly registrations, and (where the runner's label policy is read)
        the labels its cadence includes."""
        if reg.disabled is not None or not self.selects(reg.backend.value) or reg.suite != self.suite:
            return False
        if reg.nightly and self.nightly is False:
            return False
        if policy is not None and self.job is not None and self.job.cadence:
            selection = policy.selection(self.job.cadence, "--match-all-labels" in self.job.flags)
            if selection is not None and "--labels" not in self.job.flags:
                return selection.selects(_labels(reg), bool(reg.nightly))
        return True

    def selection(self, regs, policy=None) -> list[Registration]:
        return [r for r in regs if self.admits(r, policy)]

    def gpu_hours(self, regs, policy=None) -> float | None:
        """est_time of what this run selects x its pool's GPUs, in hours; None when the pool's GPU
        count is unknown."""
        if self.pool.gpus is None:
            return None
        return sum(r.est_time or 0.0 for r in self.selection(regs, policy)) * self.pool.gpus / 3600


def _labels(reg: Registration) -> list[str]:
    try:
        value = reg.labels
    except Exception:  # noqa: BLE001 - a registration whose labels do not read selects as unlabelled
        return []
    return list(value() if callable(value) else value or [])


def nightly_of(job: SuiteJob) -> bool | None:
    if job.cadence in NIGHTLY_CADENCES:
        return True
    if "--nightly" in job.conditional or any(u.startswith(("--cadence", "--nightly")) for u in job.unresolved):
        return None
    return False


@dataclass
class SuiteRuns:
    """Every run of every suite at one revision, and what could not be read."""

    runs: list[Run] = field(default_factory=list)
    direct_runs: dict[str, str] = field(default_factory=dict)  # file (or dir/, glob) -> "workflow:line"
    unknown: dict[str, str] = field(default_factory=dict)  # consumer -> why it was not read
    partial: bool = False  # a workflow was not read whole (REG902)
    label_policy: object | None = None  # checks.target.runner_policy.LabelPolicy, when the runner has one
    _by_suite: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        by: dict[str, list[Run]] = defaultdict(list)
        for run in self.runs:
            by[run.suite].append(run)
        self._by_suite = dict(by)

    def of_suite(self, suite: str) -> list[Run]:
        return list(self._by_suite.get(suite, ()))

    def of(self, backend: str, suite: str) -> list[Run]:
        """The runs that select `backend`'s registrations of `suite`."""
        return [r for r in self._by_suite.get(suite, ()) if r.selects(backend)]

    def direct_run(self, file: str) -> str | None:
        """The "workflow:line" that runs the file itself, or None."""
        return direct_run_of(self.direct_runs, file)

    @property
    def complete(self) -> bool:
        """Every consumer was read: "no job runs it" is a fact, not a guess."""
        return not self.unknown and not self.partial

    def never_runs(self, reg: Registration) -> bool | None:
        """True: no job runs the registration's suite for its backend and no workflow runs its file;
        False: something runs it; None: unknown (a consumer was not read)."""
        if reg.suite is None:
            return None
        if self.running(reg) or self.direct_run(reg.file) is not None:
            return False
        return True if self.complete else None

    def running(self, reg: Registration) -> list[Run]:
        """The runs that select the registration: its backend, and for nightly=True a run that admits
        nightly registrations (or decides it at run time)."""
        return [r for r in self.of(reg.backend.value, reg.suite) if not (getattr(reg, "nightly", False) and r.nightly is False)]

    def gpu_hours(self, run: Run, regs) -> float | None:
        return run.gpu_hours(regs, self.label_policy)

    def selection(self, run: Run, regs) -> list[Registration]:
        """The registrations `run` selects (its backend, cadence and the runner's label policy)."""
        return run.selection(regs, self.label_policy)

    def distinct(self, backend: str, suite: str) -> list[Run]:
        """The runs of (backend, suite), one per step and what it selects: the rows of a matrix that
        differ only in image or partition are one run of the same cost."""
        out, seen = [], set()
        for run in self.of(backend, suite):
            key = (run.consumer, run.span.line, run.hw, run.nightly, run.shards, run.timeout_minutes, run.pool,
                   run.job.cadence if run.job else None, run.job.flags if run.job else ())
            if key not in seen:
                seen.add(key)
                out.append(run)
        return out

    def pool_hardware(self) -> dict[str, str]:
        """suite -> the hardware its jobs' pools name, where they name exactly one (calibration reads it)."""
        found: dict[str, set[str]] = defaultdict(set)
        for run in self.runs:
            if run.external:
                continue  # another repository's pool is its hardware, not this one's stored runs
            found[run.suite].add(run.pool.hardware)
        return {suite: models.pop() for suite, models in found.items() if len(models) == 1 and None not in models}

    def why_unknown(self) -> list[tuple[str, str]]:
        """What was not read, as (what, why): an external consumer ("owner/repo:path", "not given"),
        or a workflow not read whole (REG902)."""
        out = sorted(self.unknown.items())
        if self.partial and not out:
            out.append(("a workflow", "not read whole (REG902)"))
        return out


def _span_of_line(text_lines: dict[str, list[str]], path: str, line: int, suite: str) -> Span:
    lines = text_lines.get(path)
    if lines and 0 < line <= len(lines):
        col = lines[line - 1].find(suite)
        if col >= 0:
            return Span(line, col + 1, line, col + 1 + len(suite))
    return Span.at_line(line)


def build(uses: list[SuiteUse], jobs: list[SuiteJob], *, direct_runs: dict[str, str] | None = None,
          unknown: dict[str, str] | None = None, partial: bool = False, hardware: dict | None = None,
          label_policy=None, texts: dict[str, str] | None = None) -> SuiteRuns:
    """Join the two readings of one revision: each job invocation (checks/workflows/jobs.py) becomes a run, pointed at
    the place the consumer reading found (the `--suite` or matrix value nearest the job's step);
    a consumer whose job the job reader could not copy (a configured `suites:` list, a command it
    cannot parse) is still a run, with its pool unknown."""
    text_lines = {p: t.split("\n") for p, t in (texts or {}).items()}
    by_key: dict[tuple, list[SuiteUse]] = defaultdict(list)
    for use in uses:
        by_key[(use.consumer, use.suite, use.hw)].append(use)
    runs: list[Run] = []
    matched: set[int] = set()
    for job in dict.fromkeys(jobs):  # the same invocation in every partition row of a matrix: once
        candidates = by_key.get((job.workflow, job.suite, job.hw)) or by_key.get((job.workflow, job.suite, None)) or []
        use = min(candidates, key=lambda u: (abs(u.span.line - job.line) if u.span else 1 << 30)) if candidates else None
        if use is not None:
            matched.add(id(use))
        labels = job.pool
        # a `--hw cpu` invocation holds no GPU whatever its runner (`ubuntu-latest` says no count)
        gpus = 0 if job.hw == "cpu" and labels else (gpus_of_labels(labels) if labels else None)
        pool = Pool(labels, gpus, hardware_for_labels(labels, hardware) if labels else None)
        file = None if job.external else job.workflow
        span = _span_of_line(text_lines, job.workflow, job.line, job.suite) if not job.external else Span.at_line(job.line)
        timeout = job.job_timeout_min if job.job_timeout_min != GITHUB_DEFAULT_TIMEOUT_MINUTES else (
            use.timeout_minutes if use is not None else None)
        # the job reader evaluates a flag as a manual dispatch would; one that depends on an input
        # (`${{ inputs.nightly && '--nightly' || '' }}`) is decided per run, as the consumer reading says
        nightly = None if use is not None and use.nightly is None else nightly_of(job)
        runs.append(Run(job.suite, job.workflow, file, span, job.hw, nightly, job.shards, timeout, job, pool,
                        job.external, job.job))
    seen_jobs = {(r.consumer, r.suite, r.hw) for r in runs}
    for use in uses:
        if id(use) in matched:
            continue
        if (use.consumer, use.suite, use.hw) in seen_jobs:
            continue  # another row of a job already read (a matrix value the job reader counted once)
        runs.append(Run(use.suite, use.consumer, use.file, use.span, use.hw, use.nightly, use.shards,
                        use.timeout_minutes, None, Pool(None, None, None), use.external, use.job))
    runs.sort(key=lambda r: (r.suite, r.consumer, r.span.line, r.job.invocation if r.job else 0))
    return SuiteRuns(runs, dict(direct_runs or {}), dict(unknown or {}), partial, label_policy)


def read(tree, config, contract, uses: list[SuiteUse], texts: dict[str, str], direct_runs: dict[str, str],
         consumers_from: dict | None, budget) -> SuiteRuns:
    """The model of one revision: `uses`, `texts` (the workflows that run or call a suite) and
    `direct_runs` as the consumer reading (checks/workflows/runs.read_consumers) left them."""
    from checks.target.runner_policy import read_label_policy
    from checks.target.target_ci import NOT_GIVEN, _SKIPPED, external_workflows, read_jobs

    external, unread = external_workflows(config, consumers_from)
    not_read: list[str] = []
    jobs = read_jobs(tree, config, contract, texts, external, budget, not_read)
    try:
        policy = read_label_policy(lambda p: budget.read(tree, p, _SKIPPED), config.paths.suites_module)
    except Exception:  # noqa: BLE001 - a policy that does not read selects by cadence alone
        policy = None
    unknown = {label: ("not given" if why == NOT_GIVEN else why) for label, why in unread.items()}
    unknown.update((why.split(":", 1)[0], why.split(": ", 1)[1]) for why in not_read)
    return build(uses, jobs, direct_runs=direct_runs, unknown=unknown, partial=budget.consumers_partial,
                 hardware=config.hardware, label_policy=policy, texts=texts)


def with_pool_hardware(calibration, runs: SuiteRuns):
    """The `calibration:` section with each suite's hardware from the pool its jobs run on, after
    the configured `hardware_by_suite` globs (configuration overrides the pool; a suite matching
    neither keeps `hardware`)."""
    import msgspec
    from fnmatch import fnmatchcase

    globs = dict(getattr(calibration, "hardware_by_suite", {}) or {})
    extra = {suite: model for suite, model in sorted(runs.pool_hardware().items())
             if not any(fnmatchcase(suite.lower(), g.lower()) for g in globs)}
    if not extra:
        return calibration
    return msgspec.structs.replace(calibration, hardware_by_suite={**globs, **extra})
