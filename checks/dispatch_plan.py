"""Where and how an on-demand run of one suite runs: runner labels, shards, image, runner flags.

From the trusted dispatch table (`dispatch:` of .github/ci-registrar.yml on the default branch) and
the runner's options read statically at the head (checks/runner.py): an on-demand run is the
target's own ROCm CI run of that suite, on the runner shape that suite needs. The shipped workflow
(deploy/workflows/rocm-on-demand.yml) checks every value again against lists of its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from checks.config import Dispatch
from checks.runner import RunnerOption
from checks.suites import parse_suite_name

# The real runner shapes, by the GPUs a suite needs: radixark/miles' MI350 host is split into two
# 4-GPU runners (pr-test-rocm.yml); sgl-project/sglang's MI35x pools serve 1, 2 and 8 GPUs (its
# nightly for miles maps the 2-GPU suite to linux-mi35x-gpu-2 and the 8-GPU one to linux-mi35x-gpu-8).
RUNNER_SHAPES: dict[int, tuple[str, ...]] = {
    1: ("linux-mi35x-gpu-1",),
    2: ("linux-mi35x-gpu-2",),
    4: ("self-hosted", "amd", "mi350", "4gpu"),
    8: ("linux-mi35x-gpu-8",),
}
_GPU_LABEL = re.compile(r"(?:^|[-_])(?:gpu-?(\d+)|(\d+)-?gpus?)$", re.IGNORECASE)
# Runner options a listed file can be handed to, so the runner itself selects it.
FILE_OPTIONS = ("--files", "--test-files")
RETRY_ATTEMPTS = "2"  # as miles' pr-test-rocm.yml: --enable-retry --max-attempts 2


class NoRunner(Exception):
    """No runner shape fits the suite; the message is shown to the user."""


@dataclass(frozen=True)
class RunPlan:
    runs_on: tuple[str, ...]
    runner_gpus: int  # what one job occupies
    shards: int  # parallel jobs
    image: str  # "" : the workflow's default image
    runner_flags: tuple[str, ...]
    file_option: str | None  # the runner's own file selection, if it has one

    def inputs(self) -> dict[str, str]:
        """The dispatch inputs that carry the plan (all strings, as workflow_dispatch takes them)."""
        return {"runs_on": json.dumps(list(self.runs_on)), "shards": str(self.shards), "image": self.image,
                "runner_flags": " ".join(self.runner_flags)}


def suite_gpus(suite: str) -> int | None:
    parsed = parse_suite_name(suite)
    return parsed.gpus if parsed is not None and parsed.gpus else None


def runs_on_for(suite: str, dispatch: Dispatch) -> tuple[str, ...]:
    if dispatch.runs_on:
        return tuple(dispatch.runs_on)
    needed = suite_gpus(suite) or 1
    fits = [n for n in sorted(RUNNER_SHAPES) if n >= needed]
    if not fits:
        raise NoRunner(f"no MI350 runner shape has {needed} GPUs for `{suite}`: set `dispatch.{suite}.runs_on`")
    return RUNNER_SHAPES[fits[0]]


def gpus_of_labels(labels) -> int | None:
    """`4gpu` -> 4, `linux-mi35x-gpu-8` -> 8; None when no label says it."""
    for label in labels:
        m = _GPU_LABEL.search(label)
        if m:
            return int(m.group(1) or m.group(2))
    return None


def runner_gpus(suite: str, dispatch: Dispatch, runs_on) -> int:
    if dispatch.gpus is not None:
        return dispatch.gpus
    return gpus_of_labels(runs_on) or suite_gpus(suite) or 1


def is_nightly(suite: str) -> bool:
    return suite.startswith("nightly-") or "-nightly-" in suite


def default_runner_flags(suite: str, options: dict[str, RunnerOption] | None) -> tuple[str, ...]:
    """The options that make the runner run the whole suite as its own CI does, where it has them.

    A nightly suite is a nightly cadence (`nightly=True` registrations are admitted only then).
    `--match-all-labels` keeps every registration whatever its labels: what the App selected and
    charged for is what runs (miles' manual dispatch of pr-test-rocm.yml does the same). Every file
    runs even after a failure (`--continue-on-error`), so every duration is stored; a flaky
    accuracy check gets miles' own retry.
    """
    if not options:
        return ()
    flags: list[str] = []
    if is_nightly(suite):
        cadence = options.get("--cadence")
        if cadence is not None and cadence.takes_value and (cadence.choices is None or "nightly" in cadence.choices):
            flags += ["--cadence", "nightly"]
        elif "--nightly" in options:
            flags.append("--nightly")
    if "--match-all-labels" in options:
        flags.append("--match-all-labels")
    if "--continue-on-error" in options:
        flags.append("--continue-on-error")
    if "--enable-retry" in options:
        flags.append("--enable-retry")
        if "--max-attempts" in options:
            flags += ["--max-attempts", RETRY_ATTEMPTS]
    return tuple(flags)


def partitions_supported(options: dict[str, RunnerOption] | None) -> bool:
    return bool(options) and "--auto-partition-id" in options and "--auto-partition-size" in options


def file_option(options: dict[str, RunnerOption] | None) -> str | None:
    for name in FILE_OPTIONS:
        if options and name in options and options[name].takes_value:
            return name
    return None


def plan(suite: str, dispatch: Dispatch, options: dict[str, RunnerOption] | None, files: list[str]) -> RunPlan:
    runs_on = runs_on_for(suite, dispatch)
    selects_files = file_option(options)
    shards = dispatch.shards if partitions_supported(options) else 1
    if files and selects_files is None:
        shards = 1  # listed files run one by one in a single job: nothing partitions them
    elif files:
        shards = min(shards, len(files))
    flags = tuple(dispatch.runner_flags) if dispatch.runner_flags is not None else default_runner_flags(suite, options)
    return RunPlan(runs_on, runner_gpus(suite, dispatch, runs_on), shards, dispatch.image or "", flags, selects_files)


def partition(est: dict[str, float], size: int) -> list[list[str]]:
    """The runner's own split (miles' `auto_partition`): longest est_time first, each file to the
    shard with the smallest total so far, ties by file name."""
    shards: list[list[str]] = [[] for _ in range(max(size, 1))]
    totals = [0.0] * len(shards)
    for name in sorted(est, key=lambda f: (-est[f], f)):
        i = min(range(len(shards)), key=totals.__getitem__)
        shards[i].append(name)
        totals[i] += est[name]
    return shards
