"""What an on-demand run costs, in GPU-hours: the one computation of a run's charge.

The budget (bot/ondemand/cost.py), `run-plan` and the reviewer's summary (its `/run-rocm`
suggestions, checks/reporting/pr_summary.py) all call `charge`: a number the reviewer sees in the
summary is the number the budget takes. Pure: a selection's registrations and its run plan.

What is charged bounds what may run. est_time is written by the pull request, so it only ever
raises a charge: each selected file is charged the most the dispatched job lets it hold its GPUs,
under the timeouts that job enforces (the run plan, checks/target/dispatch_plan.py, read from the default
branch's runner and job, never from the PR):

- the runner's per-file timeout for that est_time (checks/target/timeout_model.py: for miles'
  runner `max(timeout_per_file, 1.25 x est_time)`; with sglang's `--timeout-from-est-time`, also
  `max(1.5 x est, est + 1800)`), so an est_time of 1e-9, 1 or a negative
  number is charged the whole per-file timeout, never less;
- times the attempts the runner's flags allow (`--enable-retry`, `--max-attempts`, each attempt's
  timeout raised by `--retry-timeout-increase`);
- never more than the GPU job's own timeout (`job_timeout_min`, at most GitHub's 360 minutes): an
  est_time that is not a finite number (NaN, inf, a 400-digit literal) is charged that.

A run's total is capped the same way: one runner holds its GPUs at most for the job's timeout.
Where the runner itself rejects a non-positive est_time (the contract's `est_time_positive`, read
by checks/target/runner.py) the command is refused, as the PR check's REG002 would fail it.

The reply shows each file's basis: its est_time, the per-file timeout it gets and what was charged.

A run split into shards holds `shards` runners: it costs the runner's GPUs x the shards x the
longest shard, with the files split the way the runner splits them (an upper bound whatever split
the runner makes, since no shard is longer than the longest and all of them together hold no more
than shards x the job's timeout).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from checks.target.dispatch_plan import partition
from checks.target.timeout_model import MILES, SGLANG

# A GitHub Actions job's limit, 360 minutes: no file of a run can hold its GPUs longer than the
# whole job, whatever the job's own timeout-minutes says.
MAX_FILE_S = 360 * 60

TIMEOUT, JOB = "per-file timeout", "job timeout"

# miles' tests/ci/run_suite.py defaults (argparse) for the retry flags a plan may pass
DEFAULT_MAX_ATTEMPTS = 2
DEFAULT_RETRY_INCREASE_S = 600


@dataclass(frozen=True)
class Limits:
    """The timeouts the dispatched job enforces, from the run plan (never from the PR)."""

    timeout_per_file_s: int = 1800  # the runner's per-file floor (--timeout-per-file)
    job_timeout_s: int = MAX_FILE_S  # one shard's job (timeout-minutes), at most GitHub's limit
    attempts: int = 1  # runs of one file, retries included
    retry_increase_s: int = 0  # added to each attempt's timeout when retries are on
    # sglang's runner with --timeout-from-est-time: each file's timeout is derived from its
    # est_time, max(1.5 x est, est + 1800) (its ci_utils.derive_timeout_per_file), not the flat
    # --timeout-per-file; charged as the larger of that and miles' formula, whichever runner runs
    from_est_time: bool = False

    @classmethod
    def of(cls, plan) -> "Limits":
        flags = list(getattr(plan, "runner_flags", ()) or ())
        job_min = getattr(plan, "job_timeout_min", None)
        job_s = MAX_FILE_S if not job_min or job_min <= 0 else min(int(job_min) * 60, MAX_FILE_S)
        attempts, increase = 1, 0
        if "--enable-retry" in flags:
            attempts = max(1, _flag_int(flags, "--max-attempts", DEFAULT_MAX_ATTEMPTS))
            increase = max(0, _flag_int(flags, "--retry-timeout-increase", DEFAULT_RETRY_INCREASE_S))
        return cls(int(plan.timeout_per_file_s), job_s, attempts, increase, "--timeout-from-est-time" in flags)

    def per_file(self, est: float | None) -> tuple[float, str]:
        """(seconds, basis): the most one registration with this est_time may run."""
        if est is None or not math.isfinite(est):
            return float(self.job_timeout_s), JOB
        # a non-positive est_time gets the runner's floor, as max(floor, 1.25 x est) gives it
        one = MILES.timeout(max(est, 0.0), self.timeout_per_file_s + self.retry_increase_s)
        if self.from_est_time:
            one = max(one, SGLANG.timeout(max(est, 0.0), 0))
        most = self.attempts * one
        if most >= self.job_timeout_s:
            return float(self.job_timeout_s), JOB
        return float(most), TIMEOUT


def _flag_int(flags: list[str], name: str, default: int) -> int:
    """A runner flag's integer value (`--name N` or `--name=N`); the default when absent; the
    default too when unreadable (the plan's flags come from the default branch's job)."""
    for i, flag in enumerate(flags):
        value = flags[i + 1] if flag == name and i + 1 < len(flags) else (
            flag.split("=", 1)[1] if flag.startswith(name + "=") else None)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                return default
    return default


@dataclass(frozen=True)
class FileCost:
    file: str
    est_time: float | None  # as registered (summed over the file's registrations in the suite)
    seconds: float  # what the budget counts for it
    basis: str  # TIMEOUT | JOB

    def note(self, limits: Limits | None = None) -> str:
        """The reply's line for this file: its est_time and what it is charged, and why."""
        shown = "not a number" if self.est_time is None else f"est_time={self.est_time:g}"
        if self.basis == JOB:
            why = "the GPU job's timeout" + (f" ({limits.job_timeout_s // 60} min, the most any file can run)"
                                               if limits is not None else " (the most any file can run)")
        else:
            why = "the runner's per-file timeout for it"
            if limits is not None:
                why += f", max({limits.timeout_per_file_s + limits.retry_increase_s} s, 1.25 \u00d7 est_time"
                why += ", 1.5 \u00d7 est_time, est_time + 1800 s)" if limits.from_est_time else ")"
                if limits.attempts > 1:
                    why += f" \u00d7 {limits.attempts} attempts"
        return f"`{self.file}`: {shown}, charged {self.seconds:g} s, {why}"


@dataclass(frozen=True)
class Costing:
    files: list[FileCost]
    gpus: int  # what one runner of the run occupies
    refusal: str | None = None  # why the command is refused (nothing is costed then)
    shards: int = 1  # runners held in parallel
    limits: Limits = Limits()

    @property
    def seconds(self) -> float:
        """Runner-seconds the budget counts: the sum of the files on one runner, else every shard
        counted as long as the longest; never past what the job's timeout lets the runners hold."""
        runners = max(1, self.shards)
        if runners == 1:
            total = float(sum(f.seconds for f in self.files))
        else:
            per_file = {f.file: f.seconds for f in self.files}
            split = partition(per_file, runners)
            total = runners * max((sum(per_file[name] for name in shard) for shard in split), default=0.0)
        return float(min(total, runners * self.limits.job_timeout_s))

    @property
    def gpu_hours(self) -> float:
        return gpu_hours(self.seconds, self.gpus)

    def notes(self) -> list[str]:
        return [f.note(self.limits) for f in self.files]

    def as_details(self) -> list[list]:
        return [[f.file, f.seconds, f.basis] for f in self.files]


def gpu_hours(seconds: float, gpus: int) -> float:
    """GPU-hours of a run: the GPUs it occupies x its seconds, rounded up to the hundredth (a
    budget is never under-counted)."""
    return math.ceil(seconds * gpus / 36.0) / 100.0


def _number(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer literal too large for a float
        return math.inf
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def cost_files(per_file: dict[str, list], gpus: int, *, est_time_positive: bool, limits: Limits,
               shards: int = 1) -> Costing:
    """per_file: file -> the est_time of each of its registrations in the suite."""
    files = []
    for file in sorted(per_file):
        ests = [_number(e) for e in per_file[file]]
        rejected = [e for e in ests if e is None or e <= 0]
        if est_time_positive and rejected:
            what = "is not a number" if rejected[0] is None else f"is {rejected[0]:g}"
            return Costing([], gpus, f"`{file}`'s est_time {what}, which the runner rejects (est_time must be "
                                     "a positive number): fix the registration first", shards, limits)
        shown = ests[0] if len(ests) == 1 else (None if None in ests else sum(ests))
        bounds = [limits.per_file(e) for e in ests]
        seconds = sum(s for s, _ in bounds)
        if seconds >= limits.job_timeout_s or any(b == JOB for _, b in bounds):
            files.append(FileCost(file, shown, float(limits.job_timeout_s), JOB))
        else:
            files.append(FileCost(file, shown, float(seconds), TIMEOUT))
    return Costing(files, gpus, shards=shards, limits=limits)


def charge(registrations, run, *, est_time_positive: bool) -> Costing:
    """The charge of running `registrations` (a selection) under run plan `run`: each file's bound
    under the plan's timeouts (its per-file timeout, job timeout and retry flags), times the GPUs of
    one of its runners, over its shards."""
    per_file: dict[str, list] = {}
    for reg in registrations:
        per_file.setdefault(reg.file, []).append(reg.est_time)
    return cost_files(per_file, run.runner_gpus, est_time_positive=est_time_positive,
                      limits=Limits.of(run), shards=run.shards)


# -- what a run plan runs ----------------------------------------------------------------------------
def runner_selects(run, target, notes: list[str]):
    """Which registrations the runner runs for the plan's flags: its label policy for the plan's
    cadence (miles: the nightly cadence leaves out `long` tests), else only the cadence (sglang:
    `nightly=True` registrations need `--nightly`)."""
    policy = target.label_policy
    if policy is not None:
        chosen = policy.selection(run.cadence or "regular", run.match_all_labels)
        if chosen is not None:
            return lambda r: chosen.selects(r.labels, r.nightly)
        notes.append(f"the runner's label policy ({policy.where}) could not be read for this cadence: every enabled "
                     f"registration is listed and charged; the runner may run fewer")
    elif target.contract.labels is not None and target.options and "--match-all-labels" in target.options \
            and not run.match_all_labels:
        notes.append("the runner selects by labels, and its policy could not be read: every enabled registration is "
                     "listed and charged; the runner may run fewer")
    return lambda r: run.admit_nightly or not r.nightly


def planned_selection(registrations, suite: str, run, target, notes: list[str] | None = None) -> list:
    """The registrations `/run-rocm SUITE` (no files named) runs under plan `run`: the suite's
    enabled ROCm-family registrations that the runner selects for the plan's flags. `target`: the
    CI read for the plan (its label policy, labels and runner options; checks/target/target_ci.py)."""
    runs = runner_selects(run, target, notes if notes is not None else [])
    return [r for r in registrations
            if r.backend.is_rocm_family and r.suite == suite and not r.disabled and not r.implicit and runs(r)]
