"""What a pull request changes, for its reviewer: registration-only or not, and per suite what it
gains or loses, what it costs per run, who runs it and what stored runs back its est_times.

Built once by the engine in a diff check (checks/engine.py) from the same contexts the rules read,
carried on the Report (plain data: the App's analysis child pickles it back) and shown by
checks/reporting/render.py's check-run summary, which both the App and `ci-registrar check --format summary`
print. Nothing here reads a store or the network: stored runs arrive as the durations index.
"""

from __future__ import annotations

import ast
import gc
import re
from collections import defaultdict
from dataclasses import dataclass, field

from checks.model import Backend, Change, Registration
from checks.scanning.registrations import gpu_count_from_name
from checks.calibration.shards import Item, heaviest, partition
from checks.target.suites import parse_suite_name

_REGISTER = re.compile(r"register_[a-z][a-z0-9_]*_ci")
# Documentation never changes what CI runs; a PR that also edits it stays registration-only.
_DOC_SUFFIXES = (".md", ".rst", ".txt")


@dataclass
class ConsumerCost:
    """One job that runs a suite (the step that runs it), and what the suite costs it per run."""

    where: str  # "workflow:line" of the step, or "owner/repo:path:line" for another repository's job
    cadence: str  # "nightly", "per run" (PR/push/dispatch), or "set at run time"
    timeout_minutes: int
    timeout_stated: bool  # False: GitHub's default job timeout
    shards: int  # 0: decided at run time
    longest_before: float | None  # seconds of est_time in the runner's heaviest LPT shard
    longest_after: float | None
    gpu_hours_before: float | None  # None: the job's pool does not say its GPU count
    gpu_hours_after: float | None
    gpus: int | None = None  # one runner of the job's pool
    pool: str = ""  # the job's runner labels, "[a, b]"; "" when only the run decides


@dataclass
class SuiteRow:
    backend: str
    suite: str
    files_added: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)
    files_before: int = 0
    files_after: int = 0
    est_before: float = 0.0
    est_after: float = 0.0
    gpus: int | None = None
    consumers: list[ConsumerCost] = field(default_factory=list)
    stored_runs: int = 0  # runs stored for this suite's files at head (the durations' n, summed)
    files_measured: int = 0  # files at head with at least one stored run
    unmeasured_added: list[str] = field(default_factory=list)  # added files with no stored run
    unverified: list[str] = field(default_factory=list)  # files without evidence (checks/reporting/evidence.py)
    unknown: list = field(default_factory=list)  # (consumer, why) not read; empty when every consumer was read

    @property
    def to_measure(self) -> list[str]:
        return sorted(set(self.unmeasured_added) | set(self.unverified))

    @property
    def plannable(self) -> bool:
        """A job of the model runs it on a pool whose GPU count is known: `/run-rocm` has a job to copy."""
        return any(c.gpus is not None for c in self.consumers)

    refused: str = ""  # why the run plan refuses the suite (checks/target/dispatch_plan.py); "" when it plans it

    @property
    def suggest_run(self) -> bool:
        """A ROCm suite gaining files no stored run backs, or not verified, that a job runs and the run
        plan does not refuse: `/run-rocm SUITE` measures them."""
        return Backend(self.backend).is_rocm_family and bool(self.to_measure) and self.plannable and not self.refused

    charge: float | None = None  # GPU-hours `/run-rocm SUITE` is charged at head (checks/target/run_cost.py)

    @property
    def run_gpu_hours(self) -> float | None:
        """What one on-demand run of the suite costs: the run plan's charge, the number
        `run-plan --format json` reports as `gpu_hours` and the budget takes (per-file timeout
        bounds of what the plan selects x its runner's GPUs), never a second computation.
        None: no plan (no job to copy, or the plan refuses)."""
        return None if self.refused else self.charge


@dataclass
class PrSummary:
    registration_only: bool
    reasons: list[str]  # why not registration-only (paths and what changed in them), at most a few
    test_files: int = 0  # changed test files whose code is the same once registrations are set aside
    inventories: int = 0  # changed suite inventories / register modules
    workflows: int = 0
    docs: int = 0
    other: int = 0
    rows: list[SuiteRow] = field(default_factory=list)


# -- registration-only: the same AST once registrations are set aside ---------------------------
def _is_register_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
        return False
    func = node.value.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return bool(_REGISTER.fullmatch(name))


class _SetAside(ast.NodeTransformer):
    """Takes out register_*_ci(...) statements and the imported names of register functions."""

    def generic_visit(self, node):
        super().generic_visit(node)
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and all(isinstance(s, ast.stmt) for s in body):
                kept = [s for s in body if not _is_register_call(s)]
                if not kept and name == "body" and not isinstance(node, ast.Module):
                    kept = [ast.Pass()]
                setattr(node, name, kept)
        return node

    def visit_ImportFrom(self, node):  # noqa: N802 - ast's visitor naming
        node.names = [a for a in node.names if not _REGISTER.fullmatch(a.name)]
        return node if node.names else None


_TABLE_CALLS = frozenset({"dict", "list", "set", "tuple", "frozenset"})


def _literal(node: ast.AST) -> bool:
    """A value made of constants, names, attributes (HWBackend.ROCM) and container calls only:
    a table such as CI_SUITES, never code."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Name) and n.func.id in _TABLE_CALLS):
                return False
        elif not isinstance(n, (ast.Constant, ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Name, ast.Attribute,
                                ast.expr_context, ast.keyword, ast.Starred)):
            return False
    return True


def _shape(source: bytes | None, *, inventory: bool = False) -> str | None:
    """The file's code with registrations (and, for an inventory, its literal tables) set aside;
    None when it does not parse."""
    if source is None:
        return ""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    tree = _SetAside().visit(tree)
    if inventory:
        tree.body = [s for s in tree.body if not _literal_table(s)]
    return ast.dump(tree, include_attributes=False)


def _literal_table(stmt: ast.stmt) -> bool:
    return isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and _literal(stmt.value)


def _set_aside_at_top(stmt: ast.stmt, inventory: bool) -> bool:
    """What _SetAside (and, for an inventory, the literal tables) takes out of a module's body."""
    if _is_register_call(stmt):
        return True
    if isinstance(stmt, ast.ImportFrom) and all(_REGISTER.fullmatch(a.name) for a in stmt.names):
        return True
    return inventory and _literal_table(stmt)


def _kept_statements(source: bytes, inventory: bool) -> list[tuple[tuple[bytes, ...], ast.stmt]] | None:
    """The module's top-level statements that _shape keeps, each with its own source text (its
    decorators' and its own span, byte for byte); None when the file does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    starts = [0]  # byte offset of each line (the parser's lines: only b"\n" ends one, see _plain)
    find = source.find
    at = find(b"\n")
    while at >= 0:
        starts.append(at + 1)
        at = find(b"\n", at + 1)

    def text(node) -> bytes:
        return source[starts[node.lineno - 1] + node.col_offset:starts[node.end_lineno - 1] + node.end_col_offset]

    return [(tuple(text(d) for d in getattr(s, "decorator_list", ())) + (text(s),), s)
            for s in tree.body if not _set_aside_at_top(s, inventory)]


def _plain(source: bytes) -> bool:
    """Source whose parser offsets are offsets into its bytes: UTF-8 (no other coding declared,
    no byte-order mark) with lines ended by b"\n" only."""
    if b"\r" in source or source.startswith(b"\xef\xbb\xbf"):
        return False
    if b"coding" in b"\n".join(source.split(b"\n", 2)[:2]):  # a coding declaration: PEP 263's two lines
        return False
    try:
        source.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def same_code(before: bytes | None, after: bytes | None, *, inventory: bool = False) -> bool:
    """True when two versions of a Python file differ only in registrations (and their imports),
    and for an inventory module, in its literal tables.

    The same verdict as comparing the two files' whole _shape, for a fraction of its cost (a PR's
    changed files were most of its check's CPU): each file is parsed once, and only the top-level
    statements whose source text differs are set aside and dumped. A statement's syntax tree is a
    function of its text, so two statements of the same text need no comparison."""
    if before is None or after is None:  # an absent file is only ever the same as another absent one
        return before is None and after is None
    if not (_plain(before) and _plain(after)):
        a, b = _shape(before, inventory=inventory), _shape(after, inventory=inventory)
        return a is not None and a == b
    a, b = _kept_statements(before, inventory), _kept_statements(after, inventory)
    if a is None or b is None or len(a) != len(b):
        return False
    for (text_a, stmt_a), (text_b, stmt_b) in zip(a, b):
        if text_a != text_b and _dump(stmt_a) != _dump(stmt_b):
            return False
    return True


def _dump(stmt: ast.stmt) -> str:
    kept = _SetAside().visit(stmt)
    return ast.dump(kept, include_attributes=False)


# -- the per-suite table -------------------------------------------------------------------------
def _gpus(suite: str, regs: list[Registration]) -> int | None:
    parsed = parse_suite_name(suite)
    if parsed is not None and parsed.gpus is not None:
        return parsed.gpus
    if parsed is not None and parsed.gpus is None:  # a CPU suite
        return 0
    counts = {gpu_count_from_name(r.file) for r in regs} - {None}
    return counts.pop() if len(counts) == 1 else None


def _longest(regs: list[Registration], shards: int) -> float | None:
    if shards < 1 or not regs:
        return None if shards < 1 else 0.0
    return heaviest(partition([Item(r.file, r.est_time or 0.0, r.est_time or 0.0) for r in regs], shards)).est_total


def _est(regs: list[Registration]) -> float:
    return float(sum(r.est_time or 0 for r in regs if r.disabled is None))


def suite_rows(before: list[Registration], after: list[Registration], touched: set[tuple[str, str]], runs,
               durations_index=None) -> list[SuiteRow]:
    """One row per touched (backend, suite); per job that runs it (checks/target/suite_runs.py, the
    head's model): the step, its cadence, its shards and timeouts, and GPU-hours = est_time of what
    that job selects (its cadence, labels) x its pool's GPUs."""
    by_before: dict[tuple[str, str], list[Registration]] = defaultdict(list)
    by_after: dict[tuple[str, str], list[Registration]] = defaultdict(list)
    for r in before:
        if r.suite:
            by_before[(r.backend.value, r.suite)].append(r)
    for r in after:
        if r.suite:
            by_after[(r.backend.value, r.suite)].append(r)
    rows = []
    for backend, suite in sorted(touched):
        old, new = by_before.get((backend, suite), []), by_after.get((backend, suite), [])
        old_files, new_files = {r.file for r in old}, {r.file for r in new}
        row = SuiteRow(backend, suite, sorted(new_files - old_files), sorted(old_files - new_files),
                       len(old_files), len(new_files), _est(old), _est(new), _gpus(suite, new or old))
        for run in runs.distinct(backend, suite):
            sel_old, sel_new = runs.selection(run, old), runs.selection(run, new)
            row.consumers.append(ConsumerCost(
                run.where, run.cadence, run.job_timeout_minutes, bool(run.timeout_minutes), run.shards,
                _longest(sel_old, run.shards), _longest(sel_new, run.shards), runs.gpu_hours(run, old),
                runs.gpu_hours(run, new),
                run.pool.gpus, run.pool.text() if run.pool.labels is not None else ""))
        if not row.consumers and not runs.complete:
            row.unknown = runs.why_unknown()
        if durations_index is not None:
            for r in new:
                d = durations_index.for_reg(r)  # the suite's calibration hardware, as REG020 reads it
                n = d.stats.n if d is not None else 0
                row.stored_runs += n
                row.files_measured += 1 if n else 0
        measured = {r.file for r in new if durations_index and (d := durations_index.for_reg(r)) and d.stats.n}
        row.unmeasured_added = [f for f in row.files_added if f not in measured]
        rows.append(row)
    return rows


def touched_suites(report_regs: list[Registration], head_inventory: dict, base_inventory: dict) -> set[tuple[str, str]]:
    """(backend, suite) of every registration the diff added, changed or removed (old and new
    suite of a move), and of every suite the diff added to or took out of the inventory."""
    out: set[tuple[str, str]] = set()
    for r in report_regs:
        if r.change in (Change.ADDED, Change.CHANGED, Change.REMOVED) and r.suite:
            out.add((r.backend.value, r.suite))
        if r.change is Change.CHANGED and r.base is not None and r.base.suite:
            out.add((r.base.backend.value, r.base.suite))
    for backend in set(head_inventory) | set(base_inventory):
        for suite in set(head_inventory.get(backend, ())) ^ set(base_inventory.get(backend, ())):
            out.add((backend.value, suite))
    return out


def build(ctx, base_ctx, changed: dict[str, str | None], report_regs: list[Registration], head, base,
          discovered: set[str], base_discovered: set[str], contract: set[str], durations_index=None) -> PrSummary:
    """The summary of a diff check (head path -> base path in `changed`; a path the head lacks
    maps to its base path with the head gone); `contract`: the inventory, register module, labels
    and configuration paths (checks.engine.contract_paths)."""
    from checks.workflows.runs import is_workflow_path

    config = ctx.config
    inventories = set(config.paths.contract_modules())
    summary = PrSummary(True, [])
    head_paths = set(head.paths())

    cap = ctx.budget.limits.file_bytes

    def read(tree, path):
        """A version to compare; one over the file cap is compared as unreadable (never the same),
        and no second REG902: the scan said so already."""
        data = tree.read(path) if path else None
        return b"\0" if data is not None and len(data) > cap else data

    def not_only(path: str, why: str) -> None:
        summary.registration_only = False
        summary.other += 1
        if len(summary.reasons) < 5:
            summary.reasons.append(f"{path}: {why}")

    # Parsing allocates many objects and frees them all (no cycles): the cyclic collector would
    # walk them for nothing, as in the engine's scan (checks/engine.py _scan). Off meanwhile.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for path, base_path in sorted(changed.items()):
            gone = path not in head_paths
            if path.endswith(_DOC_SUFFIXES) or path.startswith("docs/"):
                summary.docs += 1
            elif is_workflow_path(path, config):
                summary.workflows += 1
            elif path in contract:
                if path.endswith(".py") and path in inventories and not same_code(read(base, base_path), None if gone else read(head, path), inventory=True):
                    not_only(path, "code outside the suite inventory changed")
                else:
                    summary.inventories += 1
            elif path in discovered or base_path in base_discovered:
                if gone or not base_path:
                    not_only(path, "test file removed" if gone else "test file added")
                elif same_code(read(base, base_path), read(head, path)):
                    summary.test_files += 1
                else:
                    not_only(path, "test code changed, not only its registrations")
            else:
                not_only(path, "not a test file, suite inventory, workflow or documentation")
    finally:
        if collecting:
            gc.enable()

    touched = touched_suites(report_regs, ctx.contract.suites, base_ctx.contract.suites)
    after = ctx.registrations()
    changed_heads = set(changed)
    before = [r for r in after if r.file not in changed_heads]
    before.extend(r for s in base_ctx.scans.values() for r in s.registrations)
    before.extend(base_ctx.implicit.values())
    summary.rows = suite_rows(before, after, touched, ctx.suite_runs, durations_index)
    _plan_runs(summary.rows, ctx, base_ctx, after)
    return summary


def _plan_runs(rows: list[SuiteRow], ctx, base_ctx, after: list[Registration]) -> None:
    """Each ROCm row a job runs is planned as `/run-rocm SUITE` plans it, and charged as the budget
    charges it (checks/target/run_cost.py `charge`): a suggestion shows that charge. A suite the
    plan refuses gets no suggestion and no button: its row keeps the reason. The plan is made from
    the jobs of the head's model (the diff check reads no workflow of the base; a PR that changes
    the job is planned as it changes it), the base's runner options and the `dispatch:`
    configuration. Where no `dispatch:` entry covers the suite, the job that runs it is what the
    row offers, planned with the job's own settings."""
    from checks.workflows.jobs import fleet_of
    from checks.config.schema import Dispatch
    from checks.target.dispatch_plan import NoRunner, plan
    from checks.target.hardware import hardware_for_labels
    from checks.target.run_cost import charge, planned_selection
    from checks.target.target_ci import TargetCI

    config = base_ctx.config
    model = getattr(ctx, "suite_runs", None)
    candidates = [r for r in rows if Backend(r.backend).is_rocm_family and r.plannable]
    if model is None or not candidates:
        return
    jobs = [r.job for r in model.runs if r.job is not None]
    fleet = fleet_of(jobs, lambda labels: hardware_for_labels(labels, config.hardware) == config.calibration.hardware)
    target = TargetCI(base_ctx.contract, jobs, fleet, model.label_policy, config.paths.suites_module)
    for row in candidates:
        dispatch = config.dispatch_for(row.suite) or Dispatch(workflow="")
        try:
            run = plan(row.suite, dispatch, target.options, jobs=jobs, fleet=fleet,
                       suites_module=config.paths.suites_module,
                       default_timeout_per_file_s=config.calibration.timeout_per_file_s)
        except NoRunner as exc:
            row.refused = str(exc)
            continue
        chosen = planned_selection(after, row.suite, run, target)
        if not chosen:
            continue  # /run-rocm refuses: nothing of the suite is selected at head
        costing = charge(chosen, run, est_time_positive=base_ctx.contract.est_time_positive)
        if costing.refusal:
            row.refused = costing.refusal
        else:
            row.charge = costing.gpu_hours
