"""Where and how an on-demand run of one suite runs: the run plan that `/run-rocm` dispatches and
`ci-registrar run-plan` prints.

An on-demand run is the target's own CI run of that suite, so the plan is the job that runs it
(checks/workflows/jobs.py, read on the default branch): its runner pool, its container image and how
it resolves a dated tag, its partitions, its per-file and job timeouts, its install steps and its
runner flags. When several jobs run a suite, the nightly job is copied for a nightly suite and
the PR job otherwise; the plan names its source. The `dispatch:` configuration (also the default
branch's) may override any of it per suite. Nothing here comes from the pull request: the runner's
accepted options (`options`) are read from the default branch's runner, so a flag the runner
rejects is never passed, whatever the PR's copy of the runner says.

The pool must be one of the repository's own fleet (the pools its own workflows run ROCm suites
on): a suite whose job runs on a pool the repository does not have (miles' nightly suites run on
sglang's pools) takes the fleet's runner with the GPUs it needs, a larger one only when the
configuration allows it (`larger_runner: true`), and is refused with the reason otherwise.

The shipped workflow (deploy/workflows/rocm-on-demand.yml) checks every value again against lists
of its own before a GPU machine sees it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from checks.workflows.jobs import SuiteJob, gpus_of_labels
from checks.config.schema import Dispatch
from checks.target.runner import RunnerOption
from checks.target.suites import parse_suite_name
from checks.workflows.runs import NIGHTLY_CADENCES
from checks.wording import plural

__all__ = ["NoRunner", "RunPlan", "gpus_of_labels", "partition", "plan", "choose_job", "suite_gpus"]

# Backends whose suites run on AMD MI350/MI35x GPUs (`--hw rocm` in miles, `--hw amd` in sglang).
ROCM_HW = ("rocm", "amd")
# Runner options an on-demand run always passes where the runner has them: every file runs
# after a failure, so every file's duration is stored (what the App charged for is what runs).
ALWAYS_FLAGS = ("--continue-on-error",)
# Runner options that select test files by name, so listed files are selected by the runner itself.
FILE_OPTIONS = ("--files", "--test-files")
DEFAULT_JOB_TIMEOUT_MIN = 360


class NoRunner(Exception):
    """The suite cannot be planned (no runner of the fleet fits, no job runs it); the message is
    one line for the user."""


def suite_gpus(suite: str) -> int | None:
    parsed = parse_suite_name(suite)
    return parsed.gpus if parsed is not None and parsed.gpus else None


def is_nightly(suite: str) -> bool:
    return suite.startswith("nightly-") or "-nightly-" in suite


def _labels_text(labels) -> str:
    return "[" + ", ".join(labels) + "]"


@dataclass(frozen=True)
class RunPlan:
    """One suite's on-demand run, as dispatched."""

    suite: str
    runs_on: tuple[str, ...]
    runner_gpus: int  # what one job occupies
    shards: int  # parallel jobs
    image: str  # "rocm/sgl-dev:miles-rocm720-mi35x-{date}"; "" : the workflow's default
    image_days: int  # > 0: the image's {date} is the newest of this many days
    timeout_per_file_s: int  # what the runner lets one file run (passed as --timeout-per-file where it takes it)
    job_timeout_min: int  # what GitHub lets one shard's job run (the GPU job's timeout-minutes)
    runner_flags: tuple[str, ...]
    runner: str = "tests/ci/run_suite.py"  # the runner, from `workdir`
    workdir: str = ""  # repository-relative directory the runner starts in (sglang: "test")
    hw: str = "rocm"
    install: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cache: str = "read-only"
    source: dict | None = None  # {"workflow", "job", "line"} of the job copied; None: configuration only
    file_option: str | None = None  # the runner's own file selection, if it has one
    partitions: bool = True  # the runner takes --auto-partition-id/--auto-partition-size
    timeout_option: bool = True  # the runner takes --timeout-per-file
    admit_nightly: bool = False  # the run selects nightly=True registrations
    match_all_labels: bool = False  # the run passes --match-all-labels
    cadence: str | None = None  # the cadence the run's flags give the runner (None: its default)
    notes: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # the test files it runs (bot/ondemand/selection.py fills them in)
    container: tuple[tuple[str, str], ...] = ()  # the copied job's `container:` (options, env, volumes) as written

    @property
    def nightly(self) -> bool:
        return self.admit_nightly

    def command(self, shard: int | None = None, files: tuple[str, ...] = ()) -> str:
        """The runner's command line of one shard (`shard` None: `<i>` in its place)."""
        words = ["python3", self.runner, "--hw", self.hw, "--suite", self.suite, *self.runner_flags]
        if self.timeout_option:
            words += ["--timeout-per-file", str(self.timeout_per_file_s)]
        if files and self.file_option:
            words += [self.file_option, *files]
        if self.shards > 1:
            words += ["--auto-partition-id", "<i>" if shard is None else str(shard), "--auto-partition-size", str(self.shards)]
        return " ".join(words)

    def commands(self, files: tuple[str, ...] = ()) -> list[str]:
        return [self.command(i, files) for i in range(self.shards)]

    def payload(self) -> dict:
        """What the shipped workflow needs besides the suite, head and files: its `plan` input."""
        return {"runs_on": list(self.runs_on), "shards": self.shards, "image": self.image, "image_days": self.image_days,
                "timeout_per_file_s": self.timeout_per_file_s, "job_timeout_min": self.job_timeout_min,
                "runner_flags": list(self.runner_flags), "install": list(self.install),
                "env": [f"{k}={v}" for k, v in self.env], "cache": self.cache}

    def inputs(self) -> dict[str, str]:
        """The dispatch inputs that carry the plan (all strings, as workflow_dispatch takes them):
        `plan` for the shipped workflow, and the older separate inputs for a workflow that has them."""
        return {"plan": json.dumps(self.payload(), separators=(",", ":"), sort_keys=True),
                "runs_on": json.dumps(list(self.runs_on)), "shards": str(self.shards), "image": self.image,
                "runner_flags": " ".join(self.runner_flags)}

    def as_json(self, gpu_hours: float | None = None) -> dict:
        """`ci-registrar run-plan --format json`, and what the App's reply shows."""
        return {"suite": self.suite, "runs_on": list(self.runs_on), "image": self.image, "shards": self.shards,
                "timeout_per_file_s": self.timeout_per_file_s, "job_timeout_min": self.job_timeout_min,
                "command": self.command(), "workdir": self.workdir, "files": list(self.files),
                "gpus": self.runner_gpus, "gpu_hours": gpu_hours, "source": self.source,
                "install": list(self.install), "cache": self.cache, "image_days": self.image_days,
                "env": [f"{k}={v}" for k, v in self.env], "container": [f"{k}: {v}" for k, v in self.container],
                "invocations": 1, "notes": list(self.notes)}

    def with_files(self, files) -> "RunPlan":
        return replace(self, files=tuple(files))


# -- which job ------------------------------------------------------------------------------------
def _matches_source(job: SuiteJob, source: str) -> bool:
    workflow, _, job_id = source.partition("#")
    name = job.workflow.rsplit("/", 1)[-1]
    return name == workflow and (not job_id or job.job == job_id)


def choose_job(suite: str, jobs: list[SuiteJob], fleet: list[tuple[str, ...]], source: str | None = None) -> SuiteJob | None:
    """The job an on-demand run of `suite` copies: on the fleet's pools before others, then the
    nightly job for a nightly suite and the PR job otherwise, then the repository's own before
    another's; among equals, the longest per-file and job timeouts (an on-demand run is cut no
    sooner than any of the target's own runs of it), then the workflow and line."""
    mine = [j for j in jobs if j.suite == suite and (j.hw is None or j.hw in ROCM_HW)]
    if source:
        mine = [j for j in mine if _matches_source(j, source)]
    if not mine:
        return None
    nightly = is_nightly(suite) or all(j.nightly for j in mine)
    wanted = "nightly" if nightly else "pr"

    def rank(j: SuiteJob):
        return (j.pool not in fleet, j.kind != wanted, j.external, -(j.timeout_per_file_s or 0), -j.job_timeout_min,
                j.workflow, j.line)

    return min(mine, key=rank)


def _fleet_runner(suite: str, needed: int, fleet: list[tuple[str, ...]], larger: bool, why: str) -> tuple[str, ...]:
    sized = sorted(((gpus_of_labels(p) or 0, p) for p in fleet), key=lambda x: (x[0], x[1]))
    if not sized:
        raise NoRunner(f"`{suite}`: this repository's own workflows run no ROCm suite on an MI350-class runner, so it "
                       f"has no fleet to run it on; set `dispatch.{suite}.runs_on`")
    exact = [p for n, p in sized if n == needed]
    if exact:
        return exact[0]
    bigger = [(n, p) for n, p in sized if n > needed]
    largest_n, largest = max(sized, key=lambda x: (x[0], x[1]))
    if not bigger:
        raise NoRunner(f"no runner of this repository's fleet fits `{suite}`: it needs {plural(needed, 'GPU')} ({why}); the "
                       f"largest runner the fleet has is {_labels_text(largest)} ({plural(largest_n, 'GPU')})")
    if not larger:
        n, p = bigger[0]
        raise NoRunner(f"no runner of this repository's fleet has the {plural(needed, 'GPU')} `{suite}` needs ({why}); the "
                       f"smallest that fits is {_labels_text(p)} ({plural(n, 'GPU')}, the largest the fleet has is "
                       f"{_labels_text(largest)}): set `dispatch.{suite}.larger_runner: true` to run it there")
    return bigger[0][1]


# -- the plan -------------------------------------------------------------------------------------
def _accepted(flags: list[str], options: dict[str, RunnerOption] | None, notes: list[str]) -> list[str]:
    """The flags the runner accepts, each with its value; what it would reject is left out, said."""
    if options is None:
        return flags
    out: list[str] = []
    i = 0
    while i < len(flags):
        flag = flags[i]
        option = options.get(flag)
        takes = option.takes_value if option is not None else (i + 1 < len(flags) and not flags[i + 1].startswith("--"))
        value = flags[i + 1] if takes and i + 1 < len(flags) else None
        step = 2 if takes and value is not None else 1
        if option is None:
            notes.append(f"`{flag}` left out: the runner on the default branch has no such option")
        elif takes and value is None:
            notes.append(f"`{flag}` left out: it takes a value")
        elif takes and option.choices is not None and value not in option.choices:
            notes.append(f"`{flag} {value}` left out: the runner takes one of {', '.join(option.choices)}")
        else:
            out += [flag] if not takes else [flag, value]
        i += step
    return out


def _cadence(flags: list[str]) -> str | None:
    for i, flag in enumerate(flags):
        if flag == "--nightly":
            return "nightly"
        if flag == "--cadence" and i + 1 < len(flags):
            return flags[i + 1]
    return None


def _runner_path(job: SuiteJob | None, suites_module: str) -> tuple[str, str]:
    """(runner as run from its directory, that directory): sglang's jobs run `python3 run_suite.py`
    in `test/`; miles' `python3 tests/ci/run_suite.py` from the root."""
    written = (job.runner if job else "") or suites_module
    written = written.removeprefix("./")
    if suites_module == written or not suites_module.endswith("/" + written):
        return written, ""
    return written, suites_module[: -len(written)].rstrip("/")


def plan(suite: str, dispatch: Dispatch, options: dict[str, RunnerOption] | None, files: list[str] | tuple = (),
         *, jobs: list[SuiteJob] = (), fleet: list[tuple[str, ...]] = (), suites_module: str = "tests/ci/run_suite.py",
         default_timeout_per_file_s: int = 1800, hw: str | None = None) -> RunPlan:
    """The run plan of `suite` (listed `files` only, when given). Raises NoRunner with the reason."""
    fleet = list(fleet)
    notes: list[str] = []
    job = choose_job(suite, list(jobs), fleet, dispatch.source)
    if job is None and dispatch.source:
        raise NoRunner(f"`{suite}`: no job of `{dispatch.source}` runs it (dispatch.{suite}.source)")
    if job is None and not dispatch.runs_on:
        raise NoRunner(f"`{suite}`: no workflow of the default branch runs it on a ROCm runner, so there is no job to "
                       f"copy; set `dispatch.{suite}.runs_on` (and what else differs from the runner's defaults)")
    if job is not None and not dispatch.runner_flags and dispatch.source is None:
        _refuse_what_cannot_be_copied(suite, job, jobs, fleet)
    # where
    if dispatch.runs_on:
        runs_on = tuple(dispatch.runs_on)
    elif job.pool in fleet:
        runs_on = job.pool
    else:
        needed = suite_gpus(suite) or job.gpus
        where = f"{_labels_text(job.pool)} in {job.workflow}" if job.pool else f"{job.workflow}"
        if needed is None:
            raise NoRunner(f"`{suite}`: neither its name nor its job's runner ({where}) says how many GPUs it needs; "
                           f"set `dispatch.{suite}.runs_on`")
        runs_on = _fleet_runner(suite, needed, fleet, dispatch.larger_runner, f"its job runs on {where}")
        notes.append(f"runs on {_labels_text(runs_on)} of this repository's fleet: its job runs on {where}")
    gpus = dispatch.gpus or gpus_of_labels(runs_on) or suite_gpus(suite) or 1
    # how
    partitions = bool(options) and "--auto-partition-id" in options and "--auto-partition-size" in options
    selects_files = next((n for n in FILE_OPTIONS if options and n in options and options[n].takes_value), None)
    shards = dispatch.shards if dispatch.shards is not None else (job.shards if job else 1)
    if shards == 0:
        notes.append("the job computes its partition count at run time: one job; set `dispatch.<suite>.shards`")
        shards = 1
    if not partitions:
        shards = 1
    if files and selects_files is None:
        shards = 1  # listed files run one by one in a single job: nothing partitions them
    elif files:
        shards = min(shards, len(files))
    if dispatch.runner_flags is not None:
        flags = list(dispatch.runner_flags)
    else:
        flags = list(job.flags) if job else []
        if job and job.unresolved:
            notes.append("left out, computed at run time by its job: " + "; ".join(f"`{u}`" for u in job.unresolved))
    for flag in ALWAYS_FLAGS:
        if flag not in flags and options is not None and flag in options:
            flags.append(flag)
    flags = _accepted(flags, options, notes)
    timeout_option = options is None or "--timeout-per-file" in options
    runner_default = options.get("--timeout-per-file").default if options and "--timeout-per-file" in options else None
    timeout_per_file = (dispatch.timeout_per_file_s or (job.timeout_per_file_s if job else None)
                        or (runner_default if isinstance(runner_default, int) else None) or default_timeout_per_file_s)
    job_timeout = dispatch.job_timeout_min or (job.job_timeout_min if job else DEFAULT_JOB_TIMEOUT_MIN)
    if dispatch.image:
        image, days = dispatch.image, (7 if "{date}" in dispatch.image else 0)
    elif job and job.image:
        image, days = job.image.image, job.image.days
    else:
        image, days = "", 0
        notes.append("no image read from its job: the workflow's default image")
    install = tuple(dispatch.install) if dispatch.install is not None else _install_of(job, jobs, fleet)
    env = job.env if job and not job.external else ()
    runner, workdir = _runner_path(job, suites_module)
    cadence = _cadence(flags)
    return RunPlan(
        suite=suite, runs_on=tuple(runs_on), runner_gpus=gpus, shards=max(1, shards), image=image, image_days=days,
        timeout_per_file_s=int(timeout_per_file), job_timeout_min=int(job_timeout), runner_flags=tuple(flags),
        runner=runner, workdir=workdir, hw=hw or (job.hw if job and job.hw else "rocm"), install=install, env=env,
        cache=dispatch.cache, source=job.source() if job else None, file_option=selects_files, partitions=partitions,
        timeout_option=timeout_option, admit_nightly=cadence in NIGHTLY_CADENCES, cadence=cadence,
        match_all_labels="--match-all-labels" in flags, notes=tuple(notes), files=tuple(files),
        container=job.container if job and not job.external else ())


def _set_up(job: SuiteJob) -> str:
    return job.setup.rsplit("/", 1)[-1]


def _refuse_what_cannot_be_copied(suite: str, job: SuiteJob, jobs, fleet) -> None:
    """An on-demand run is one invocation of the runner in the fleet's usual container. A job that
    runs the suite more than once in the same job (sglang's deepseek-v4 nightlies: once per
    attention backend) or starts a container of its own (sglang's disaggregation job: its own start
    script, InfiniBand devices and environment) is refused with the reason, never run half."""
    same = [j for j in jobs if j.suite == suite and j.workflow == job.workflow and j.job == job.job]
    runs = sorted({j.invocation for j in same})
    if len(runs) > 1:
        envs = sorted({" ".join(f"{k}={v}" for k, v in j.env) or "(no environment)" for j in same})
        raise NoRunner(f"`{suite}`: its job `{job.job}` ({job.workflow}) runs it {len(runs)} times in one job, "
                       f"each with its own environment ({'; '.join(envs)}); an on-demand run dispatches one "
                       f"invocation, so it would run only part of it: refused (set `dispatch.{suite}.runner_flags` "
                       f"to choose one invocation's flags and run that one)")
    own = [j for j in jobs if not j.external and j.pool in fleet and j.setup]
    usual = max({_set_up(j) for j in own}, key=lambda name: sum(1 for j in own if _set_up(j) == name)) if own else ""
    if job.setup and usual and _set_up(job) != usual:
        later = f" and sets {', '.join(job.env_at_run_time)} at run time" if job.env_at_run_time else ""
        raise NoRunner(f"`{suite}`: its job `{job.job}` ({job.workflow}) starts its own container "
                       f"(`{job.setup}`, not the fleet's `{usual}`){later}; the on-demand workflow starts the "
                       f"fleet's container, so the run would not be the job's: refused")


def _install_of(job: SuiteJob | None, jobs, fleet) -> tuple[str, ...]:
    """The job's install steps. Another repository's job (miles' nightly consumer in sglang) runs
    the copy of the repository baked into its image; an on-demand run tests the pull request's
    checkout, so it installs it as the repository's own ROCm job does."""
    if job is None:
        return ()
    if not job.external:
        return job.install
    own = [j for j in jobs if not j.external and j.pool in fleet and (j.hw is None or j.hw in ROCM_HW) and j.install]
    return own[0].install if own else ()


def partition(est: dict[str, float], size: int) -> list[list[str]]:
    """The runner's own split (miles' and sglang's `auto_partition`): longest est_time first, each
    file to the shard with the smallest total so far, ties by file name."""
    shards: list[list[str]] = [[] for _ in range(max(size, 1))]
    totals = [0.0] * len(shards)
    for name in sorted(est, key=lambda f: (-est[f], f)):
        i = min(range(len(shards)), key=totals.__getitem__)
        shards[i].append(name)
        totals[i] += est[name]
    return shards



def plan_lines(view: dict) -> list[str]:
    """A plan (RunPlan.as_json) as lines of text: `run-plan`'s text format and the App's replies."""
    source = view.get("source") or {}
    where = f"`{source.get('workflow')}:{source.get('line')}` (job `{source.get('job')}`)" if source else "the configuration only"
    labels = ", ".join(f"`{x}`" for x in view.get("runs_on") or [])
    shards = int(view.get("shards") or 1)
    image = view.get("image") or "the workflow's default image"
    lines = [f"copied from {where}",
             f"runs on {labels} ({plural(int(view.get('gpus') or 0), 'GPU')}), {plural(shards, 'shard')}",
             f"image `{image}`" + (f" ({{date}}: the newest of the last {view.get('image_days')} days)" if view.get("image_days") else ""),
             f"per-file timeout {view.get('timeout_per_file_s')} s, job timeout {view.get('job_timeout_min')} min",
             f"command: `{view.get('command')}`" + (f" in `{view.get('workdir')}/`" if view.get("workdir") else "")]
    if view.get("install"):
        lines.append("install: " + "; ".join(f"`{c}`" for c in view["install"]))
    lines.append("environment: " + (", ".join(f"`{e}`" for e in view["env"]) if view.get("env") else "none set by the job"))
    if view.get("container"):
        lines.append("container: " + "; ".join(f"`{c}`" for c in view["container"]))
    lines.append(f"invocations: {view.get('invocations', 1)} (the job runs the suite once)")
    lines.append(f"caches: {view.get('cache', 'read-only')}")
    if view.get("gpu_hours") is not None:
        lines.append(f"about {view['gpu_hours']:.2f} GPU-hours")
    lines.extend(view.get("notes") or [])
    return lines
