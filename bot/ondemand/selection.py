"""What a /run-rocm command selects at the PR's head SHA: the suite's ROCm registrations, and their cost.

The suite must be in the head SHA's inventory as a ROCm suite (the PR's own code says what it
registers) AND in the dispatch table of the configuration from the default branch (only the
trusted branch says what may be dispatched, and to which workflow). Read statically through
checks/, like the PR check: the repository's code is never executed here.

Reading the PR's files is analysis of PR content, so it runs where the PR check runs: in the
bounded analysis child (bot/analysis.py), under the same time and memory limits and the same
checks/limits.py caps, with the same registration index. The worker only sends the job and gets
back an Outcome (`analyse_bounded`); `analyse` is the child's side. No file of the PR is parsed
on a worker thread (CPython 3.11's parser is not safe to run in several threads at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from checks.config import Config, Dispatch
from checks.contract import Contract, read_contract
from checks.engine import Context, _scan, discover
from checks.limits import Budget, Limits
from checks.model import Backend, Registration
from checks.suites import parse_suite_name

ENGINE = "bot.ondemand.selection:analyse"


@dataclass
class Selection:
    suite: str
    dispatch: Dispatch
    registrations: list[Registration]
    gpus: int

    @property
    def files(self) -> list[str]:
        return sorted({r.file for r in self.registrations})

    @property
    def est_seconds(self) -> float:
        return float(sum(r.est_time or 0 for r in self.registrations))

    @property
    def cost_gpu_hours(self) -> float:
        # Rounded up to the hundredth: a budget is never under-counted.
        return math.ceil(self.est_seconds * self.gpus / 36.0) / 100.0


class NotSelectable(Exception):
    """The command names something this PR cannot run; the message is shown to the user."""


def gpus_for(suite: str, dispatch: Dispatch) -> int:
    if dispatch.gpus is not None:
        return dispatch.gpus
    parsed = parse_suite_name(suite)
    return parsed.gpus if parsed is not None and parsed.gpus else 1


def rocm_suites(contract: Contract) -> set[str]:
    # ROCm and AMD (sglang's name for the same GPUs) are one hardware family
    return contract.suite_names(Backend.ROCM) | contract.suite_names(Backend.AMD)


def runnable_suites(contract: Contract, config: Config) -> list[str]:
    """ROCm suites of the head SHA that the trusted dispatch table maps to a workflow."""
    return sorted(rocm_suites(contract) & set(config.dispatch))


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


def select(tree, config: Config, contract: Contract, suite: str, files: list[str], head_sha: str,
           budget: Budget | None = None, scan_cache=None) -> Selection:
    """The enabled ROCm registrations of `suite` at the head (of `files` only, when given).

    Files are scanned as the PR check scans them (checks.engine._scan: the caps of `budget`, the
    scan cache), so a file the check could not read cannot be costed either: it is refused.
    """
    dispatch = check_suite(suite, contract, config, head_sha)
    short = head_sha[:7]
    if files:
        candidates = list(files)
        present = set(tree.paths())
        missing = [f for f in candidates if f not in present]
        if missing:
            raise NotSelectable(f"`{missing[0]}` does not exist at {short}")
    else:
        candidates = discover(tree.paths(), config, contract)
    budget = budget or Budget()
    ctx = Context(config, contract, [], budget=budget, scan_cache=scan_cache)
    _scan(ctx, tree, candidates)
    chosen: list[Registration] = []
    for path in candidates:
        scan = ctx.scans.get(path)
        if scan is None:
            cap = next((f for f in budget.findings if f.file == path), None) or next(iter(budget.findings), None)
            if cap is not None:  # a cap of checks/limits.py: an unread file has no known cost
                raise NotSelectable(f"`{path}` was not read at {short}: {cap.message}")
            if files:
                raise NotSelectable(f"`{path}` could not be read at {short}")
            continue  # absent (a symlink that leads nowhere): not a test file
        mine = [r for r in scan.registrations if r.backend.is_rocm_family and r.suite == suite]
        if files:
            if not mine:
                raise NotSelectable(f"`{path}` has no ROCm registration in `{suite}` at {short}")
            if all(r.disabled for r in mine):
                raise NotSelectable(f"`{path}`'s registration in `{suite}` is disabled at {short}")
        chosen.extend(r for r in mine if not r.disabled)
    if not chosen:
        raise NotSelectable(f"no enabled test file is registered in `{suite}` at {short}: nothing to run")
    return Selection(suite, dispatch, chosen, gpus_for(suite, dispatch))


# -- in the analysis child ------------------------------------------------------------------------
@dataclass
class Outcome:
    """What the child found: the head's runnable suites and, for a named suite, its selection or why not."""

    runnable: list[str] | None = field(default_factory=list)  # None: not known (the analysis hit a limit)
    selection: Selection | None = None
    refusal: str | None = None  # NotSelectable's message
    est_time_positive: bool = False  # the head's runner rejects est_time <= 0 (Contract.est_time_positive)


def analyse(head, base=None, changed=None, *, config_text=None, limits: Limits | None = None, scan_cache=None,
            config: Config, suite: str | None = None, files: tuple[str, ...] = (), head_sha: str = "") -> Outcome:
    """The child's job (bot.analysis runs it as its engine): read the head's contract, then select.

    `config` is the trusted configuration (the default branch's, read by the worker); the PR's
    copy is never read. `config_text` and `base` are the engine interface's and unused.
    """
    budget = Budget(limits)
    contract = read_contract(head, config, budget)
    outcome = Outcome(runnable_suites(contract, config), est_time_positive=contract.est_time_positive)
    if suite is not None:
        try:
            outcome.selection = select(head, config, contract, suite, list(files), head_sha, budget, scan_cache)
        except NotSelectable as exc:
            outcome.refusal = str(exc)
    return outcome


def analyse_bounded(tree, config: Config, *, suite: str | None = None, files=(), head_sha: str = "",
                    scan_cache=None, log=None) -> Outcome:
    """`analyse` in the bounded analysis child. A limit reached is a refusal that names it.

    Raises bot.analysis.AnalysisError when the child raised (a bug: the job's failure handling applies).
    """
    from bot.analysis import LimitExceeded, run_check_bounded

    result = run_check_bounded(tree, None, None, config_text=None, engine=ENGINE, scan_cache=scan_cache, log=log,
                               arguments={"config": config, "suite": suite, "files": tuple(files), "head_sha": head_sha})
    if isinstance(result, LimitExceeded):
        where = f" while reading `{result.file}`" if result.file else ""
        return Outcome(None, refusal=f"reading this PR's head at {head_sha[:7]} stopped at the analysis limit "
                                     f"`{result.limit}` = {result.describe_value()}{where}, so its cost is not known")
    return result
