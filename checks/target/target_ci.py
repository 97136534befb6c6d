"""What the target's own CI on its default branch says about running a suite on demand.

One reading of the trusted tree (the default branch: the App reads it through the API, `run-plan`
from the checkout), never of the pull request:

- the runner's command-line options (checks/target/runner.py), so no flag it rejects is passed;
- the jobs that run each suite (checks/workflows/jobs.py), from the repository's workflows and the
  configured external consumers' (miles' nightly suites run in sglang's workflow);
- the fleet: the runner pools the repository's own jobs run ROCm suites on, that the `hardware:`
  mapping names as the calibration hardware (MI355X), largest first;
- the label policy (checks/target/runner_policy.py), so the files listed are the files the runner selects;
- the ROCm suites of its inventory.

The pull request's head gives only the test files (bot/ondemand/selection.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from checks.workflows.jobs import SuiteJob, fleet_of, read_suite_jobs
from checks.config.schema import Config
from checks.target.contract import Contract, read_contract
from checks.target.hardware import hardware_for_labels
from checks.limits import Budget
from checks.model import Backend
from checks.target.runner_policy import LabelPolicy, read_label_policy
from checks.workflows.runs import _given, consumer_label, is_workflow_path

_SKIPPED = "its jobs are not read, so an on-demand run of the suites it runs cannot copy them"


@dataclass
class TargetCI:
    contract: Contract  # the default branch's: its runner options, labels and inventory
    jobs: list[SuiteJob] = field(default_factory=list)
    fleet: list[tuple[str, ...]] = field(default_factory=list)
    label_policy: LabelPolicy | None = None
    suites_module: str = "tests/ci/run_suite.py"
    unread: list[str] = field(default_factory=list)  # workflows that could not be read, and why

    @property
    def options(self):
        return self.contract.facts.options

    def rocm_suites(self) -> set[str]:
        """ROCm suites the default branch knows: its inventory, and the suites its (and its
        consumers') jobs run with a ROCm backend (sglang's runner runs AMD suites it does not list)."""
        listed = self.contract.suite_names(Backend.ROCM) | self.contract.suite_names(Backend.AMD)
        return listed | {j.suite for j in self.jobs if j.hw in ("rocm", "amd")}


def _text(data) -> str | None:
    if not isinstance(data, bytes):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


NOT_GIVEN = "its workflow file was not given"


def external_workflows(config: Config, consumers_from: dict | None) -> tuple[dict[str, str], dict[str, str]]:
    """The configured external consumers' workflows as given (label -> text), and those that could
    not be read (label -> why): not given, or not text."""
    external: dict[str, str] = {}
    unread: dict[str, str] = {}
    given = dict(consumers_from or {})
    for consumer in config.consumers:  # a local copy (`--consumers-from ./x.yml`) under the consumer's name
        if consumer.suites is None:
            found = _given(consumer, given)
            if found is not None and found[0] != consumer_label(consumer):
                given[consumer_label(consumer)] = given.pop(found[0])
            elif found is None:
                unread[consumer_label(consumer)] = NOT_GIVEN
    for label, data in given.items():
        text = _text(data)
        if text is None:
            unread[label] = data if isinstance(data, str) else "not UTF-8"
        else:
            external[label] = text
    return external, unread


def read_jobs(tree, config: Config, contract: Contract, own: dict[str, str], external: dict[str, str],
              budget: Budget, unread: list[str] | None = None) -> list[SuiteJob]:
    """The jobs that run a suite in `own` (this tree's workflows, path -> text) and `external`."""
    runner = config.paths.suites_module.rsplit("/", 1)[-1].removesuffix(".py") or "run_suite"

    def read_script(path: str) -> str | None:
        return _text(budget.read(tree, path, _SKIPPED))

    return read_suite_jobs(own, external, runner=runner, options=contract.facts.options, read_script=read_script,
                           yaml_nodes=budget.limits.yaml_nodes,
                           runner_path=config.paths.suites_module if config.paths.suites_module.endswith(".py") else None,
                           unread=unread)


def read_target_ci(tree, config: Config, budget: Budget | None = None, consumers_from: dict | None = None) -> TargetCI:
    """The default branch's CI as an on-demand plan copies it. `tree`: that branch (listed);
    `consumers_from`: the external consumers' workflows (`owner/repo:path` -> bytes), as the PR
    check gets them (bot/analysis/sources.py)."""
    budget = budget or Budget()
    contract = read_contract(tree, config, budget)
    own: dict[str, str] = {}
    unread: list[str] = []
    for path in sorted(p for p in tree.paths() if is_workflow_path(p, config)):
        text = _text(budget.read(tree, path, _SKIPPED))
        if text is None:
            unread.append(path)
            continue
        # a workflow that runs a suite, calls a reusable one of this repository, or is one
        if "--suite" in text or "./.github/" in text or "workflow_call" in text:
            own[path] = text
    external, not_read = external_workflows(config, consumers_from)
    unread.extend(f"{label} ({why})" for label, why in not_read.items() if why != NOT_GIVEN)
    jobs = read_jobs(tree, config, contract, own, external, budget, unread)
    hardware = config.calibration.hardware
    fleet = fleet_of(jobs, lambda labels: hardware_for_labels(labels, config.hardware) == hardware)
    policy = read_label_policy(lambda p: budget.read(tree, p, _SKIPPED), config.paths.suites_module)
    return TargetCI(contract, jobs, fleet, policy, config.paths.suites_module, unread)
