"""What an on-demand run costs, in GPU-hours: the one place the budget's price of a run is made.

est_time is written by the pull request, so it is never taken on trust. Each selected file is
costed at its registration's est_time only when that lies within the bounds a run can actually
take (0 < est_time <= MAX_FILE_S). Outside them:

- est_time <= 0 (or not a number) where the runner itself rejects it (the contract's
  `est_time_positive`, read from the runner by checks/runner.py): the command is refused, as the
  PR check's REG002 would fail that registration;
- otherwise the file is costed at its stored MI355X p90 when the store holds enough passing runs
  (`calibration.min_samples`), else at the bound: the runner's per-file timeout for that est_time
  (checks/durations.runner_timeout, what the runner lets the file run before it kills it), or
  MAX_FILE_S when even that is unbounded.

The reply names each file so costed and which of the two it was.

A run split into shards (checks/dispatch_plan.py) holds `shards` runners: it costs the runner's
GPUs x the shards x the longest shard, with the files split the way the runner splits them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from checks.dispatch_plan import partition
from checks.durations import runner_timeout

# A GitHub Actions job's limit, 360 minutes (the reusable ROCm job the on-demand workflow calls
# sets none; deploy/workflows/rocm-on-demand-job.yml sets `timeout-minutes: 360`): no file of a
# run can hold its GPUs longer than the whole job.
MAX_FILE_S = 360 * 60

EST_TIME, P90, BOUND = "est_time", "p90", "bound"


@dataclass(frozen=True)
class FileCost:
    file: str
    est_time: float | None  # as registered (summed over the file's registrations in the suite)
    seconds: float  # what the budget counts for it
    basis: str  # EST_TIME | P90 | BOUND

    def note(self, hardware: str) -> str | None:
        """The reply's line for a file not costed at its own est_time."""
        if self.basis == EST_TIME:
            return None
        shown = "not a number" if self.est_time is None else f"est_time={self.est_time:g}"
        why = (f"the stored {hardware} p90, {self.seconds:g} s" if self.basis == P90
               else f"the bound, {self.seconds:g} s (the most the runner lets the file run)")
        return f"`{self.file}`: {shown} is outside 0 < est_time \u2264 {MAX_FILE_S} s, so it is costed at {why}"


@dataclass(frozen=True)
class Costing:
    files: list[FileCost]
    gpus: int  # what one runner of the run occupies
    refusal: str | None = None  # why the command is refused (nothing is costed then)
    shards: int = 1  # runners held in parallel

    @property
    def seconds(self) -> float:
        """Runner-seconds the budget counts: the sum of the files on one runner, else every shard
        counted as long as the longest (over-counting only by the shards' imbalance)."""
        if self.shards <= 1:
            return float(sum(f.seconds for f in self.files))
        split = partition({f.file: f.seconds for f in self.files}, self.shards)
        per_file = {f.file: f.seconds for f in self.files}
        return self.shards * max((sum(per_file[name] for name in shard) for shard in split), default=0.0)

    @property
    def gpu_hours(self) -> float:
        return gpu_hours(self.seconds, self.gpus)

    def notes(self, hardware: str) -> list[str]:
        return [n for n in (f.note(hardware) for f in self.files) if n]

    def as_details(self) -> list[list]:
        return [[f.file, f.seconds, f.basis] for f in self.files]


def gpu_hours(seconds: float, gpus: int) -> float:
    """GPU-hours of a run: the GPUs it occupies x its seconds, rounded up to the hundredth (a
    budget is never under-counted)."""
    return math.ceil(seconds * gpus / 36.0) / 100.0


def _number(value) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer literal too large for a float
        return math.inf
    return None if math.isnan(number) else number


def in_bounds(est: float | None) -> bool:
    return est is not None and 0 < est <= MAX_FILE_S


def bound_for(est: float | None, timeout_per_file_s: int) -> float:
    """The most the runner lets a file with this est_time run (MAX_FILE_S when it has no limit)."""
    if est is None or not math.isfinite(est):
        return float(MAX_FILE_S)
    return float(min(runner_timeout(est, timeout_per_file_s), MAX_FILE_S))


def cost_files(per_file: dict[str, list], gpus: int, *, est_time_positive: bool, timeout_per_file_s: int,
               p90_of, shards: int = 1) -> Costing:
    """per_file: file -> the est_time of each of its registrations in the suite.
    p90_of(file) -> the stored p90 in seconds, or None."""
    files = []
    for file in sorted(per_file):
        ests = [_number(e) for e in per_file[file]]
        shown = ests[0] if len(ests) == 1 else (None if None in ests else sum(ests))
        outside = [e for e in ests if not in_bounds(e)]
        if not outside:
            files.append(FileCost(file, shown, float(sum(ests)), EST_TIME))
            continue
        rejected = [e for e in outside if e is None or e <= 0]
        if est_time_positive and rejected:
            what = "is not a number" if rejected[0] is None else f"is {rejected[0]:g}"
            return Costing([], gpus, f"`{file}`'s est_time {what}, which the runner rejects (est_time must be "
                                     "a positive number): fix the registration first", shards)
        p90 = p90_of(file)
        if p90 is not None and p90 > 0:
            files.append(FileCost(file, shown, float(min(p90, MAX_FILE_S)), P90))
        else:
            seconds = sum(e if in_bounds(e) else bound_for(e, timeout_per_file_s) for e in ests)
            files.append(FileCost(file, shown, float(seconds), BOUND))
    return Costing(files, gpus, shards=shards)


def cost_selection(selection, contract, config, store_url: str, repository: str) -> Costing:
    """The cost of a /run-rocm selection, with p90s from the store's durations on the calibration
    hardware (MI355X by default)."""
    per_file: dict[str, list] = {}
    for reg in selection.registrations:
        per_file.setdefault(reg.file, []).append(reg.est_time)
    calibration = config.calibration

    def p90_of(file: str) -> float | None:
        from bot.store.measurements import query_stats

        rows = query_stats(store_url, repository=repository, file=file, hardware=calibration.hardware,
                           params=calibration)
        rows = [r for r in rows if r.n >= calibration.min_samples and r.p90 is not None]
        return max((float(r.p90) for r in rows), default=None)

    # the per-file timeout the dispatched job enforces (the run plan's, from the job that runs the suite)
    return cost_files(per_file, selection.gpus, est_time_positive=bool(getattr(contract, "est_time_positive", False)),
                      timeout_per_file_s=selection.plan.timeout_per_file_s, p90_of=p90_of, shards=selection.plan.shards)
