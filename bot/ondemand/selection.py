"""What a /run-rocm command selects at the PR's head SHA: the suite's ROCm registrations, and their cost.

The suite must be in the head SHA's inventory as a ROCm suite (the PR's own code says what it
registers) AND in the dispatch table of the configuration from the default branch (only the
trusted branch says what may be dispatched, and to which workflow). Read statically through
checks/, like the PR check: the repository's code is never executed here.
"""

from __future__ import annotations

from dataclasses import dataclass

from checks.config import Config, Dispatch
from checks.contract import Contract, read_contract
from checks.dispatch_plan import NoRunner, RunPlan, plan
from checks.engine import _under, discover
from checks.model import Backend, Registration
from checks.registrations import scan_file


@dataclass
class Selection:
    suite: str
    dispatch: Dispatch
    registrations: list[Registration]
    plan: RunPlan

    @property
    def gpus(self) -> int:
        return self.plan.runner_gpus

    @property
    def files(self) -> list[str]:
        return sorted({r.file for r in self.registrations})

    @property
    def est_seconds(self) -> float:
        return float(sum(r.est_time or 0 for r in self.registrations))


class NotSelectable(Exception):
    """The command names something this PR cannot run; the message is shown to the user."""


def rocm_suites(contract: Contract) -> set[str]:
    # ROCm and AMD (sglang's name for the same GPUs) are one hardware family
    return contract.suite_names(Backend.ROCM) | contract.suite_names(Backend.AMD)


def runnable_suites(contract: Contract, config: Config) -> list[str]:
    """ROCm suites of the head SHA that the trusted dispatch table maps to a workflow."""
    return sorted(rocm_suites(contract) & set(config.dispatch))


def head_contract(tree, config: Config) -> Contract:
    return read_contract(tree, config)


def check_suite(suite: str, contract: Contract, config: Config, head_sha: str) -> Dispatch:
    short = head_sha[:7]
    inventory = config.paths.suites_module
    if suite not in rocm_suites(contract):
        owners = [b.value for b in contract.owners(suite)]
        if owners:
            raise NotSelectable(f"`{suite}` is a {' and '.join(owners)} suite, not a ROCm one: "
                                f"`/run-rocm` runs ROCm suites only")
        raise NotSelectable(f"`{suite}` is not a ROCm suite in {inventory} at {short}")
    dispatch = config.dispatch.get(suite)
    if dispatch is None:
        raise NotSelectable(f"`{suite}` is a ROCm suite, but the configuration on the default branch maps no "
                            f"workflow to it (`dispatch:` in .github/ci-registrar.yml), so it cannot run on demand")
    return dispatch


def select(tree, config: Config, contract: Contract, suite: str, files: list[str], head_sha: str) -> Selection:
    """The enabled ROCm registrations of `suite` at the head (of `files` only, when given)."""
    dispatch = check_suite(suite, contract, config, head_sha)
    short = head_sha[:7]
    implicit_roots = contract.implicit_cpu_roots
    if files:
        candidates = list(files)
        present = set(tree.paths())
        missing = [f for f in candidates if f not in present]
        if missing:
            raise NotSelectable(f"`{missing[0]}` does not exist at {short}")
    else:
        candidates = discover(tree.paths(), config, contract)
    if hasattr(tree, "prefetch"):
        tree.prefetch(candidates)
    chosen: list[Registration] = []
    for path in candidates:
        data = tree.read(path)
        if data is None:
            continue
        scan = scan_file(path, data, contract, implicit_cpu=_under(path, implicit_roots), exact=False)
        mine = [r for r in scan.registrations if r.backend.is_rocm_family and r.suite == suite]
        if files:
            if not mine:
                raise NotSelectable(f"`{path}` has no ROCm registration in `{suite}` at {short}")
            if all(r.disabled for r in mine):
                raise NotSelectable(f"`{path}`'s registration in `{suite}` is disabled at {short}")
        chosen.extend(r for r in mine if not r.disabled)
    if not chosen:
        raise NotSelectable(f"no enabled test file is registered in `{suite}` at {short}: nothing to run")
    try:
        run = plan(suite, dispatch, contract.facts.options, list(files))
    except NoRunner as exc:
        raise NotSelectable(str(exc)) from None
    return Selection(suite, dispatch, chosen, run)
