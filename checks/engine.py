"""The check: one pass over a tree (and optionally its base) that applies every rule.

Data flows one way: tree -> contract, consumers, registrations -> rules -> findings. Nothing here
fetches, stores or formats for a particular output.

Every read and every expansion is bounded by checks/limits.py (`limits=`, default Limits()): a
file or structure past a cap is analysed no further and a REG902 finding says so.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from checks import rules_suites
from checks.config import CONFIG_PATH, Config, load_config
from checks.contract import Contract, read_contract
from checks.limits import FILE_CHECKS, Budget, Limits
from checks.model import code, Change, Finding, Registration, Report, Severity, Span
from checks.registrations import FileScan, implicit_registration, scan_file
from checks.rules import RULES, make_finding
from checks.workflows import SuiteUse, is_workflow_path, read_consumers

_FROM_TREE = object()


@dataclass
class Context:
    """Everything the rules need about one revision of the repository."""

    config: Config
    contract: Contract
    uses: list[SuiteUse]
    scans: dict[str, FileScan] = field(default_factory=dict)
    implicit: dict[str, Registration] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    # every discovered file was read and parsed: "no registration names this suite" is a fact (REG015)
    registrations_complete: bool = False
    # a diff check: the head paths it changed (REG015 reports only what the diff brings); None: whole tree
    changed_paths: set[str] | None = None

    @property
    def consumers_partial(self) -> bool:
        """A workflow could not be read whole (REG902): REG013 would be guesswork."""
        return self.budget.consumers_partial

    def registrations(self) -> list[Registration]:
        out = [r for s in self.scans.values() for r in s.registrations]
        out.extend(self.implicit.values())
        return out


def _under(path: str, roots: list[str]) -> bool:
    return any(path.startswith(r.rstrip("/") + "/") for r in roots)


def discover(paths, config: Config) -> list[str]:
    """Test files the runner discovers: under a discovery root, named like `test_pattern`, not excluded."""
    p = config.paths
    out = []
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        if path.endswith(".py") and _under(path, p.test_roots) and fnmatch.fnmatchcase(name, p.test_pattern) \
                and not any(fnmatch.fnmatchcase(name, exclude) for exclude in p.test_excludes):
            out.append(path)
    return sorted(out)


def contract_paths(config: Config) -> set[str]:
    p = config.paths
    return {p.register_module, p.suites_module, p.labels_module, CONFIG_PATH}


def _scan(ctx: Context, tree, paths: list[str], exact_paths: set[str] | frozenset = frozenset(), prefetch: bool = True) -> None:
    if prefetch and hasattr(tree, "prefetch"):
        tree.prefetch(paths)
    implicit_roots = ctx.config.paths.implicit_cpu_roots
    budget = ctx.budget
    for i, path in enumerate(paths):
        if not budget.take_file(path, len(paths) - i, "test files"):
            break
        data = budget.read(tree, path, FILE_CHECKS)
        if data is None:
            continue  # absent (a symlink that leads nowhere in the tree) or over the byte cap
        implicit = _under(path, implicit_roots)
        scan = scan_file(path, data, ctx.contract, implicit_cpu=implicit, exact=path in exact_paths, budget=budget)
        ctx.scans[path] = scan
        if not scan.registrations and not scan.unreadable and implicit:
            ctx.implicit[path] = implicit_registration(path)


def build_context(tree, config: Config, budget: Budget | None = None, consumers_from: dict | None = None) -> tuple[Context, list[str], list[Finding]]:
    budget = budget or Budget()
    all_paths = list(tree.paths())
    workflow_paths = sorted(p for p in all_paths if is_workflow_path(p, config))
    # findings about external consumers point at the configuration, else at the suite inventory
    anchor = CONFIG_PATH if CONFIG_PATH in all_paths else config.paths.suites_module
    uses, findings = read_consumers(tree, config, workflow_paths, budget, consumers_from=consumers_from, anchor=anchor)
    return Context(config, read_contract(tree, config, budget), uses, budget=budget), all_paths, findings


def check_tree(
    head,
    base=None,
    changed: dict[str, str | None] | set[str] | None = None,
    *,
    config_text=_FROM_TREE,
    durations=None,
    fixes: bool = True,
    limits: Limits | None = None,
    consumers_from: dict | None = None,
) -> Report:
    """Check `head`; with `base` and `changed` (head path -> base path), check the diff.

    `config_text`: the configuration to use (the App passes the default branch's copy, never the
    PR's); by default it is read from `head` itself, as a local checkout does.
    `durations`: rows of per-(file, backend, hardware) statistics (`durations show --format json`),
    or a callable that takes the Config and returns them (the window is configuration);
    given, REG020/REG021 judge est_time against them and REG030 uses measured time where it can.
    `fixes`: format each suggestion as a whole-line Fix (libcst); a caller whose output shows no
    fix (JSON, workflow commands) passes False and never loads libcst.
    `limits`: the caps of checks/limits.py (default Limits()); a cap hit is a REG902 finding.
    `consumers_from`: the configured external consumers' workflows, `owner/repo:path` (or a local
    path with the workflow's file name) -> bytes, or a string saying why it could not be read
    (checks/workflows.read_consumers). One not given is a REG901 warning naming it.
    """
    limits = limits or Limits()
    budget = Budget(limits)
    if config_text is _FROM_TREE:
        config_text = head.read(CONFIG_PATH)
    config, config_findings = load_config(config_text, limits=limits)
    ctx, all_paths, findings = build_context(head, config, budget, consumers_from)
    findings = config_findings + list(ctx.contract.findings) + findings
    discovered = discover(all_paths, config)

    diff_mode = base is not None and changed is not None
    if diff_mode and not isinstance(changed, dict):
        changed = {p: p for p in changed}
    # A diff that touches the contract (inventory, signatures, labels, configuration, workflows)
    # can break files it never touched: then every registration is checked again.
    contract_files = contract_paths(config)
    recheck_all = not diff_mode or any(p in contract_files or is_workflow_path(p, config) for p in changed)
    to_check = discovered if recheck_all else [p for p in discovered if p in changed]
    # A PR's changed files are read whole (REG001 anywhere in them); a whole-tree sweep reads the
    # registration part of each file only (see registrations.registration_prefix).
    _scan(ctx, head, to_check, exact_paths=set(changed) if diff_mode else frozenset())
    to_check = [p for p in to_check if p in ctx.scans]  # not: absent, or skipped by a cap (REG902)

    report = Report(files_checked=len(to_check))
    checked = set(to_check)
    for path in to_check:
        scan = ctx.scans[path]
        findings.extend(scan.findings)
        if not scan.registrations and not scan.unreadable and path not in ctx.implicit:
            why = " (its register calls are invisible to the runner, see REG003)" if scan.invisible else ""
            findings.append(
                make_finding("REG004", path, Span.at_line(1), f"no registration: this test file is discovered under {_root_of(path, config)} but declares no register_<backend>_ci(...) call{why}, so the runner never runs it")
            )

    base_ctx = None
    if diff_mode:
        # The base is read only to compare registrations: its contract, not its workflows.
        base_ctx = Context(config, read_contract(base, config, budget), [], budget=budget)
        head_paths = set(all_paths)
        base_paths = sorted({changed[p] for p in checked if changed.get(p)} | {b for h, b in changed.items() if b and h not in head_paths})
        base_discovered = set(discover(base_paths, config))
        _scan(base_ctx, base, sorted(base_discovered))
        _classify(ctx, base_ctx, changed, checked, report, findings)

    # Suite-level rules need every registration of a suite (its total est_time).
    if diff_mode and not recheck_all and _suite_totals_needed(ctx):
        _scan(ctx, head, [p for p in discovered if p not in ctx.scans])
    index = None
    if durations is not None:
        from checks import rules_calibration

        rows = durations(config) if callable(durations) else durations
        index = rules_calibration.durations_index(rows, config.calibration.hardware)
        if not recheck_all and any(r.backend.is_gpu for r in ctx.registrations()):
            _scan(ctx, head, [p for p in discovered if p not in ctx.scans])  # the CUDA/ROCm ratio needs every file
        findings.extend(rules_calibration.apply(ctx, checked, index))
    ctx.changed_paths = set(changed) if diff_mode else None
    ctx.registrations_complete = all(p in ctx.scans and not ctx.scans[p].unreadable for p in discovered)
    findings.extend(rules_suites.apply(ctx, checked, base_ctx, report, index))

    report.registrations.extend(r for p in to_check for r in ctx.scans[p].registrations)
    report.registrations.sort(key=lambda r: (r.file, r.span.line, r.span.column))
    if fixes and any(f.suggestion is not None for f in findings):
        from checks.fixes import attach_fixes  # libcst loads only when there is a fix to make

        attach_fixes(findings, report.registrations, lambda path: ctx.scans[path].lines if path in ctx.scans else [])
    findings.extend(budget.findings)
    report.findings = _apply_overrides(findings, config)
    report.findings.sort(key=Finding.sort_key)
    return report


def _root_of(path: str, config: Config) -> str:
    for root in config.paths.test_roots:
        if path.startswith(root.rstrip("/") + "/"):
            return root
    return "a discovery root"


def _suite_totals_needed(ctx: Context) -> bool:
    return any(r.change in (Change.ADDED, Change.CHANGED) for r in ctx.registrations())


def _same(a: Registration, b: Registration) -> bool:
    keys = set(a.arguments) | set(b.arguments)
    return all(a.value(k) == b.value(k) for k in keys)


def _classify(ctx: Context, base_ctx: Context, changed: dict, checked: set[str], report: Report, findings: list[Finding]) -> None:
    """added / changed / removed / unchanged, per (file, backend), in file order."""
    for path, scan in ctx.scans.items():
        if path not in changed:  # re-checked because the contract changed; the file itself did not
            for reg in scan.registrations:
                reg.change = Change.UNCHANGED
            continue
        base_path = changed[path]
        base_scan = base_ctx.scans.get(base_path) if base_path else None
        base_regs = list(base_scan.registrations) if base_scan else []
        for reg in scan.registrations:
            match = next((b for b in base_regs if b.backend is reg.backend), None)
            if match is None:
                reg.change = Change.ADDED
            else:
                base_regs.remove(match)
                reg.change = Change.UNCHANGED if _same(reg, match) else Change.CHANGED
                reg.base = match
        for gone in base_regs:
            gone.change = Change.REMOVED
            report.registrations.append(gone)
            findings.append(
                make_finding(
                    "REG050",
                    path,
                    Span.at_line(1) if path != gone.file else gone.span,
                    f"the {gone.backend.value} registration (suite {code(gone.suite)}) was removed: coverage drops on {gone.backend.value}",
                )
            )
    # files deleted or renamed away in head: every registration they held is gone
    compared = {changed[p] for p in ctx.scans if changed.get(p)}
    for base_path, base_scan in base_ctx.scans.items():
        if base_path in compared:
            continue
        for gone in base_scan.registrations:
            if gone.change is Change.REMOVED:
                continue
            gone.change = Change.REMOVED
            report.registrations.append(gone)
            findings.append(
                make_finding("REG050", gone.file, gone.span, f"{gone.file} no longer exists: its {gone.backend.value} registration (suite {code(gone.suite)}) is gone and coverage drops on {gone.backend.value}")
            )


def _apply_overrides(findings: list[Finding], config: Config) -> list[Finding]:
    out = []
    for f in findings:
        override = config.severity_override(f.rule)
        if override == "off":
            continue
        if override:
            f.severity = Severity(override)
        out.append(f)
    return out


__all__ = ["check_tree", "discover", "Context", "RULES"]
