"""What a /run-rocm command selects at the PR's head SHA, and the plan it is dispatched with.

The suite must be a ROCm suite (of the head's inventory, or of the default branch's: its
inventory or a job of its CI that runs it with a ROCm backend) AND have a dispatch entry in the
configuration from the default branch (its own, or the `"*"` entry): only the trusted branch says
what may be dispatched, and to which workflow. Where and how it runs is the plan
(checks/target/dispatch_plan.py), made from the default branch's CI (checks/target/target_ci.py): nothing of it
comes from the pull request, whose head gives only the test files. The files are the ones the
runner itself selects for the plan's flags (its cadence, its label policy), so what is listed and
charged is what runs. Read statically through checks/, like the PR check: the repository's code
is never executed here. `ci-registrar run-plan` calls the same `select`.

Reading the PR's files is analysis of PR content, so it runs where the PR check runs: in the
bounded analysis child (bot/analysis/bounded.py), under the same time and memory limits and the same
checks/limits.py caps, with the same registration index. The worker only sends the job and gets
back an Outcome (`analyse_bounded`); `analyse` is the child's side. No file of the PR is parsed
on a worker thread (CPython 3.11's parser is not safe to run in several threads at once).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from checks.config.schema import Config, Dispatch
from checks.target.contract import Contract, read_contract
from checks.target.dispatch_plan import NoRunner, RunPlan, plan
from checks.engine import Context, _scan, discover
from checks.limits import Budget, Limits
from checks.model import Backend, Registration
from checks.wording import did_you_mean
from checks.target.run_cost import runner_selects
from checks.target.target_ci import TargetCI, read_target_ci

ENGINE = "bot.ondemand.selection:analyse"


@dataclass
class Selection:
    suite: str
    dispatch: Dispatch
    registrations: list[Registration]
    plan: RunPlan
    notes: list[str] = field(default_factory=list)  # what the listing could not tell (the reply says it)

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


def rocm_suites(contract: Contract, target: TargetCI | None = None) -> set[str]:
    # ROCm and AMD (sglang's name for the same GPUs) are one hardware family
    names = contract.suite_names(Backend.ROCM) | contract.suite_names(Backend.AMD)
    return names | target.rocm_suites() if target is not None else names


def runnable_suites(contract: Contract, config: Config, target: TargetCI | None = None) -> list[str]:
    """ROCm suites that the trusted dispatch table maps to a workflow (their own entry, or `"*"`)."""
    return sorted(s for s in rocm_suites(contract, target) if config.dispatch_for(s) is not None)


def _at(head_sha: str) -> str:
    """Where the files were read: "at abc1234" for a PR's head, "in this checkout" for `run-plan`."""
    return "in this checkout" if head_sha == "checkout" else f"at {head_sha[:7]}"


def check_suite(suite: str, contract: Contract, config: Config, head_sha: str, target: TargetCI | None = None) -> Dispatch:
    inventory = config.paths.suites_module
    rocm = rocm_suites(contract, target)
    if suite not in rocm:
        owners = [b.value for b in contract.owners(suite)]
        if owners:
            raise NotSelectable(f"`{suite}` is a {' and '.join(owners)} suite, not a ROCm one: "
                                f"`/run-rocm` runs ROCm suites only")
        raise NotSelectable(f"`{suite}` is not a ROCm suite in {inventory} {_at(head_sha)}, nor one the default "
                            f"branch's workflows run{did_you_mean(suite, rocm)}")
    dispatch = config.dispatch_for(suite)
    if dispatch is None:
        raise NotSelectable(f"`{suite}` is a ROCm suite, but the configuration on the default branch maps no "
                            f"workflow to it (`dispatch:` in .github/ci-registrar.yml), so it cannot run on demand")
    return dispatch


def select(tree, config: Config, contract: Contract, suite: str, files: list[str], head_sha: str,
           budget: Budget | None = None, scan_cache=None, *, target: TargetCI | None = None) -> Selection:
    """The ROCm registrations of `suite` at the head that its run plan runs (of `files` only, when
    given), and that plan. `target`: the default branch's CI (checks/target/target_ci.py); None reads it
    from `tree` itself (a local checkout, where the two are one).

    Files are scanned as the PR check scans them (checks.engine._scan: the caps of `budget`, the
    scan cache), so a file the check could not read cannot be costed either: it is refused.
    """
    budget = budget or Budget()
    if target is None:
        target = read_target_ci(tree, config, budget)
    dispatch = check_suite(suite, contract, config, head_sha, target)
    try:
        run = plan(suite, dispatch, target.options, list(files), jobs=target.jobs, fleet=target.fleet,
                   suites_module=config.paths.suites_module,
                   default_timeout_per_file_s=config.calibration.timeout_per_file_s)
    except NoRunner as exc:
        raise NotSelectable(str(exc)) from None
    notes: list[str] = []
    runs = runner_selects(run, target, notes) if not files else (lambda r: True)
    at = _at(head_sha)
    if files:
        candidates = list(files)
        present = set(tree.paths())
        missing = [f for f in candidates if f not in present]
        if missing:
            raise NotSelectable(f"`{missing[0]}` does not exist {at}")
    else:
        candidates = discover(tree.paths(), config, contract)
    ctx = Context(config, contract, [], budget=budget, scan_cache=scan_cache)
    _scan(ctx, tree, candidates)
    chosen: list[Registration] = []
    for path in candidates:
        scan = ctx.scans.get(path)
        if scan is None:
            cap = next((f for f in budget.findings if f.file == path), None) or next(iter(budget.findings), None)
            if cap is not None:  # a cap of checks/limits.py: an unread file has no known cost
                raise NotSelectable(f"`{path}` was not read {at}: {cap.message}")
            if files:
                raise NotSelectable(f"`{path}` could not be read {at}")
            continue  # absent (a symlink that leads nowhere): not a test file
        mine = [r for r in scan.registrations if r.backend.is_rocm_family and r.suite == suite]
        if files:
            if not mine:
                raise NotSelectable(f"`{path}` has no ROCm registration in `{suite}` {at}")
            if all(r.disabled for r in mine):
                raise NotSelectable(f"`{path}`'s registration in `{suite}` is disabled {at}")
        chosen.extend(r for r in mine if not r.disabled and runs(r))
    if not chosen:
        what = "" if files else " that its run selects (" + (f"cadence {run.cadence}" if run.cadence else "the runner's default cadence") + ")"
        raise NotSelectable(f"no enabled test file is registered in `{suite}` {at}{what}: nothing to run")
    selection = Selection(suite, dispatch, chosen, run, notes)
    selection.plan = run.with_files(selection.files)
    return selection


# -- in the analysis child ------------------------------------------------------------------------
@dataclass
class Outcome:
    """What the child found: the head's runnable suites and, for a named suite, its selection or why not."""

    runnable: list[str] | None = field(default_factory=list)  # None: not known (the analysis hit a limit)
    selection: Selection | None = None
    refusal: str | None = None  # NotSelectable's message
    est_time_positive: bool = False  # the head's runner rejects est_time <= 0 (Contract.est_time_positive)


def analyse(head, base=None, changed=None, *, config_text=None, limits: Limits | None = None, scan_cache=None,
            config: Config, suite: str | None = None, files: tuple[str, ...] = (), head_sha: str = "",
            consumers_from: dict | None = None) -> Outcome:
    """The child's job (bot.analysis.bounded runs it as its engine): read the head's contract and the
    default branch's CI (`base`: the default branch, never the PR), then select.

    `config` is the trusted configuration (the default branch's, read by the worker); the PR's
    copy is never read. `config_text` is the engine interface's and unused. Without `base` (an
    older caller) the plan has no target CI to copy and refuses what it cannot plan.
    """
    budget = Budget(limits)
    _read_ahead(head, base, config)
    contract = read_contract(head, config, budget)
    target = read_target_ci(base, config, budget, consumers_from) if base is not None else TargetCI(Contract())
    # whether the runner rejects est_time <= 0 is the trusted runner's rule, like the rest of the plan
    positive = (target.contract if base is not None else contract).est_time_positive
    outcome = Outcome(runnable_suites(contract, config, target), est_time_positive=positive)
    if suite is not None:
        try:
            outcome.selection = select(head, config, contract, suite, list(files), head_sha, budget, scan_cache,
                                       target=target)
        except NotSelectable as exc:
            outcome.refusal = str(exc)
    return outcome


def _read_ahead(head, base, config: Config) -> None:
    """The files every selection reads, named up front so the worker reads them in one bulk
    request (checks.scanning.tree.prefetch): the head's contract, and the default branch's contract
    and workflows, whose CI the plan copies. Read one by one, a command that was the first delivery
    for its PR cost a blob request each. Usually the command's first request has read them all
    already (bot.ondemand.pull.Pull.read_trusted) and this costs nothing."""
    from checks.scanning.tree import prefetch
    from checks.workflows.runs import is_workflow_path

    contract = config.paths.contract_modules()
    pairs = [(head, contract)]
    if base is not None:
        # an unlisted base (bot.analysis.sources.GitHubTree.from_read) came with its workflows read
        listed = getattr(base, "listed", True)
        pairs.append((base, contract + (sorted(x for x in base.paths() if is_workflow_path(x, config)) if listed else [])))
    prefetch(pairs)


def analyse_bounded(tree, config: Config, *, suite: str | None = None, files=(), head_sha: str = "",
                    scan_cache=None, log=None, base=None, consumers_from: dict | None = None) -> Outcome:
    """`analyse` in the bounded analysis child. A limit reached is a refusal that names it.
    `base`: the default branch's tree (bot.analysis.sources.GitHubTree), whose CI the plan copies.

    Raises bot.analysis.bounded.AnalysisError when the child raised (a bug: the job's failure handling applies).
    """
    from bot.analysis.bounded import LimitExceeded, run_check_bounded

    result = run_check_bounded(tree, base, None, config_text=None, engine=ENGINE, scan_cache=scan_cache, log=log,
                               consumers_from=consumers_from,
                               arguments={"config": config, "suite": suite, "files": tuple(files), "head_sha": head_sha})
    if isinstance(result, LimitExceeded):
        where = f" while reading `{result.file}`" if result.file else ""
        return Outcome(None, refusal=f"reading this PR's head at {head_sha[:7]} stopped at the analysis limit "
                                     f"`{result.limit}` = {result.describe_value()}{where}, so its cost is not known")
    return result
