"""The check: one pass over a tree (and optionally its base) that applies every rule.

Data flows one way: tree -> contract, consumers, registrations -> rules -> findings. Nothing here
fetches, stores or formats for a particular output.

Every read and every expansion is bounded by checks/limits.py (`limits=`, default Limits()): a
file or structure past a cap is analysed no further and a REG902 finding says so.

Per-file scans can come from a cache (`check_tree(..., scan_cache=...)`): any object with
`get_many(keys) -> {key: facts}` and `put_many({key: facts})`, keyed by git blob SHA, contract
fingerprint, implicit-CPU root and exact reading (checks/scanning/scan_facts.py describes the hook and
holds the one FileScan <-> JSON conversion; the command line's cache is
checks/scan_cache.DiskScanCache).
"""

from __future__ import annotations

import fnmatch
import gc
import os
from dataclasses import dataclass, field

import msgspec

from checks.config.schema import CONFIG_PATH, Config, load_config
from checks.target.contract import Contract, read_contract
from checks.limits import FILE_CHECKS, Budget, Limits
from checks.model import Change, Finding, Registration, Report, Severity
from checks.scanning.parallel import map_forked
from checks.scanning.registrations import FileScan, implicit_registration, scan_file
from checks.target.runner import anchor_sources
from checks.rules import RULES, rule_modules
from checks.ruleset.reading import reg002_rejected_registration as reg002
from checks.ruleset.facts import TreeFacts
from checks.source import decode_source
from checks.scanning.suppressions import apply_suppressions
from checks.target import suite_runs
from checks.target.suite_runs import SuiteRuns
from checks.workflows.runs import SuiteUse, is_workflow_path, read_consumers

_FROM_TREE = object()
ANY_BACKEND = frozenset({"*"})  # Context.emptied_suites: the diff's change concerns every backend
_SCAN_BATCH = 256  # files per scan-cache lookup
_PARALLEL_BATCH_FILES, _PARALLEL_BATCH_BYTES = 8192, 64 << 20  # a batch shared between workers


@dataclass
class Context:
    """Everything the rules need about one revision of the repository."""

    config: Config
    contract: Contract
    uses: list[SuiteUse]
    scans: dict[str, FileScan] = field(default_factory=dict)
    implicit: dict[str, Registration] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    scan_cache: object | None = None  # get_many/put_many of scan facts (checks/scanning/scan_facts.py)
    workers: int = 1  # processes that parse files (checks/scanning/parallel.py)
    # every discovered file was read and parsed: "no registration names this suite" is a fact (REG015)
    registrations_complete: bool = False
    # a diff check: the head paths it changed (REG015 reports only what the diff brings); None: whole tree
    changed_paths: set[str] | None = None
    # a diff check: suite -> backends whose registrations the changed files took out, or
    # ANY_BACKEND for a suite the diff added to the inventory (REG015 reports their consumers)
    emptied_suites: dict[str, set[str]] = field(default_factory=dict)
    direct_runs: dict[str, str] = field(default_factory=dict)  # files a workflow runs itself -> "workflow:line"
    suite_runs: SuiteRuns | None = None  # how every suite runs at this revision (checks/target/suite_runs.py)

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


def discover(paths, config: Config, contract: Contract | None = None) -> list[str]:
    """Test files the runner discovers.

    With a contract whose discovery was read from the runner (checks/target/runner.py), exactly the
    runner's globs and filters; else the configuration: `paths.discovery` (per root: pattern and
    excludes) and the flat `paths.test_roots` / `test_pattern` / `test_excludes`.
    """
    if contract is not None and contract.discovery is not None:
        # relative globs are anchored already unless the contract was read from an unlisted tree
        paths = list(paths)
        sources = anchor_sources(contract.discovery, config.paths.suites_module.rpartition("/")[0], paths)
        matchers = [s.matcher() for s in sources]
        return sorted({path for path in paths if any(m(path) for m in matchers)})
    p = config.paths
    roots = [(d.root, d.pattern, d.excludes) for d in p.discovery] if p.discovery else \
        [(r, p.test_pattern, p.test_excludes) for r in p.test_roots]
    out = []
    for path in paths:
        if not path.endswith(".py"):
            continue
        name = path.rsplit("/", 1)[-1]
        for root, pattern, excludes in roots:
            if _under(path, [root]) and fnmatch.fnmatchcase(name, pattern) \
                    and not any(fnmatch.fnmatchcase(name, exclude) for exclude in excludes):
                out.append(path)
                break
    return sorted(out)


def contract_paths(config: Config) -> set[str]:
    return {*config.paths.contract_modules(), CONFIG_PATH}


def _scan(ctx: Context, tree, paths: list[str], exact_paths: set[str] | frozenset = frozenset(), prefetch: bool = True) -> None:
    """Scan `paths` into ctx.scans, through ctx.scan_cache when there is one (checks/scanning/scan_facts.py
    describes the hook: keys by git blob SHA + contract fingerprint + implicit-CPU + exact)."""
    implicit_roots = ctx.contract.implicit_cpu_roots
    budget = ctx.budget
    taken = []
    for i, path in enumerate(paths):
        if not budget.take_file(path, len(paths) - i, "test files"):
            break
        taken.append(path)
    cache = ctx.scan_cache
    results: dict[str, FileScan] = {}
    fingerprint = None
    if cache is not None:
        from checks.scanning import scan_facts

        fingerprint = scan_facts.contract_fingerprint(ctx.contract)

        def key_of(path: str, blob_sha: str) -> str:
            return scan_facts.scan_key(blob_sha, fingerprint, _under(path, implicit_roots), path in exact_paths)

        def take_hits(keys: dict[str, str]) -> None:
            if not keys:
                return
            found = cache.get_many(list(keys.values()))
            for path, key in keys.items():
                facts = found.get(key)
                if facts is None:
                    continue
                try:
                    results[path] = scan_facts.from_facts(facts, path)
                except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError):
                    pass  # a corrupt or foreign entry: scan the file again

        # A tree that knows blob SHAs without reading (a git revision, the App's GitHub tree)
        # answers from the cache before any blob is fetched.
        blob_sha = getattr(tree, "blob_sha", None)
        if blob_sha is not None:
            take_hits({p: key_of(p, sha) for p in taken if (sha := blob_sha(p))})
    to_read = [p for p in taken if p not in results]
    if prefetch and to_read and hasattr(tree, "prefetch"):
        tree.prefetch(to_read)
    fresh: dict[str, dict] = {}
    # Parsing allocates many objects and frees them all (ast trees hold no cycles): the cyclic
    # collector would walk them for nothing, a sixth of the parse time. Off while scanning.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _scan_batches(ctx, tree, to_read, exact_paths, results, fresh, cache, key_of if cache is not None else None,
                      take_hits if cache is not None else None, ctx.workers)
    finally:
        if collecting:
            gc.enable()
    if fresh:
        cache.put_many(fresh)
    for path in taken:
        scan = results.get(path)
        if scan is None:
            continue
        ctx.scans[path] = scan
        if not scan.registrations and not scan.unreadable and _under(path, implicit_roots):
            ctx.implicit[path] = implicit_registration(path)


def _scan_batches(ctx: Context, tree, to_read: list[str], exact_paths, results: dict, fresh: dict, cache, key_of, take_hits,
                  workers: int = 1) -> None:
    implicit_roots = ctx.contract.implicit_cpu_roots
    budget = ctx.budget
    if cache is not None:
        from checks.scanning import scan_facts
    # In batches: one cache lookup per batch, and never more than a batch of file contents held.
    # Parsed on several processes, a batch is larger (bounded by bytes): each batch waits for its
    # slowest worker, so fewer, larger ones.
    max_files, max_bytes = (_SCAN_BATCH, None) if workers <= 1 else (_PARALLEL_BATCH_FILES, _PARALLEL_BATCH_BYTES)
    for datas in _read_batches(tree, to_read, budget, max_files, max_bytes):
        new_keys: dict[str, str] = {}
        if cache is not None:
            keys = {p: key_of(p, scan_facts.git_blob_sha(d)) for p, d in datas.items()}
            take_hits(keys)
            new_keys = {p: k for p, k in keys.items() if p not in results}
        near = ctx.contract.near
        parent = os.getpid()

        def effects() -> tuple:
            # what a scan may change outside its FileScan: the caps' findings, the did-you-mean budget
            return len(budget.findings), getattr(near, "left", 0), getattr(near, "refused", 0)

        def scan_one(item: tuple[str, bytes]) -> tuple[str, FileScan | None, bool]:
            path, data = item
            before = effects()
            scan = scan_file(path, data, ctx.contract, implicit_cpu=_under(path, implicit_roots), exact=path in exact_paths, budget=budget)
            after = effects()
            if os.getpid() != parent:  # in a worker (checks/scanning/parallel.py): its effects would be lost
                if after != before:
                    return path, None, False  # scanned again here, in file order
                scan.lines = []  # the text stays here; a fix reads it again (as after a cache hit)
            # Kept only when the scan depends on nothing but its key: not one cut short by a cap
            # (its REG902 lives in the budget), nor one whose did-you-mean hints the budget refused.
            cut = after[0] != before[0] or (scan.unreadable and not scan.findings) or after[2] != before[2]
            return path, scan, cut

        todo = [(p, d) for p, d in datas.items() if p not in results]
        done = map_forked(scan_one, todo, workers) if workers > 1 else [scan_one(item) for item in todo]
        by_path = dict(todo)
        for path, scan, cut in done:
            if scan is None:
                path, scan, cut = scan_one((path, by_path[path]))
            results[path] = scan
            if path in new_keys and not cut:
                try:
                    fresh[new_keys[path]] = scan_facts.to_facts(scan)
                except scan_facts.UnfitForFacts:
                    pass


def _read_batches(tree, paths: list[str], budget: Budget, max_files: int, max_bytes: int | None):
    """The files' contents, in order, in batches of at most `max_files` files and (past the
    first file) `max_bytes` bytes. A file absent (a symlink that leads nowhere in the tree) or over
    the byte cap is left out."""
    datas: dict[str, bytes] = {}
    size = 0
    for path in paths:
        data = budget.read(tree, path, FILE_CHECKS)
        if data is None:
            continue
        if datas and max_bytes is not None and size + len(data) > max_bytes:
            yield datas
            datas, size = {}, 0
        datas[path] = data
        size += len(data)
        if len(datas) >= max_files:
            yield datas
            datas, size = {}, 0
    if datas:
        yield datas


def build_context(tree, config: Config, budget: Budget | None = None, consumers_from: dict | None = None) -> tuple[Context, list[str], list[Finding]]:
    budget = budget or Budget()
    all_paths = list(tree.paths())
    workflow_paths = sorted(p for p in all_paths if is_workflow_path(p, config))
    # findings about external consumers point at the configuration, else at the suite inventory
    anchor = CONFIG_PATH if CONFIG_PATH in all_paths else config.paths.suites_module
    direct_runs: dict[str, str] = {}
    texts: dict[str, str] = {}
    uses, findings = read_consumers(tree, config, workflow_paths, budget, consumers_from=consumers_from, anchor=anchor,
                                    direct_runs=direct_runs, texts=texts)
    contract = read_contract(tree, config, budget)
    runs = suite_runs.read(tree, config, contract, uses, texts, direct_runs, consumers_from, budget)
    # calibration's hardware of each suite: the pool its jobs run on, unless configured
    calibration = suite_runs.with_pool_hardware(config.calibration, runs)
    if calibration is not config.calibration:
        config = msgspec.structs.replace(config, calibration=calibration)
    ctx = Context(config, contract, uses, budget=budget, direct_runs=direct_runs, suite_runs=runs)
    return ctx, all_paths, findings


def check_tree(
    head,
    base=None,
    changed: dict[str, str | None] | set[str] | None = None,
    *,
    config_text=_FROM_TREE,
    durations=None,
    fixes: bool = True,
    limits: Limits | None = None,
    scan_cache=None,
    consumers_from: dict | None = None,
    workers: int = 1,
    head_runs: dict | None = None,
    context: tuple | None = None,
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
    `scan_cache`: an object with get_many(keys)/put_many(entries) that keeps per-file scan facts
    by content (checks/scanning/scan_facts.py; the command line's is checks/scan_cache.DiskScanCache).
    `consumers_from`: the configured external consumers' workflows, `owner/repo:path` (or a local
    path with the workflow's file name) -> bytes, or a string saying why it could not be read
    (checks/workflows.read_consumers). One not given is a REG901 warning naming it.
    `workers`: processes that parse the files to scan (checks/scanning/parallel.py; 1: this one only).
    The report is the same whatever the number.
    `head_runs`: {"head_sha", "runs"}: the on-demand runs the App dispatched for this pull request
    (bot/store/evidence.py), evidence at its head (checks/calibration/evidence.py).
    `context`: what `build_context(head, config)` returned for this same head and configuration
    (default limits, no `consumers_from`), when the caller needed it first (`calibrate` reads
    each suite's calibration hardware from it): the check takes it over instead of reading the
    contract and the workflows again.
    """
    limits = limits or Limits()
    budget = Budget(limits)
    if config_text is _FROM_TREE:
        config_text = head.read(CONFIG_PATH)
    config, config_findings = load_config(config_text, limits=limits)
    _read_ahead(head, base, changed, config)
    if context is None:
        ctx, all_paths, findings = build_context(head, config, budget, consumers_from)
    else:
        ctx, all_paths, findings = context
        budget, findings = ctx.budget, list(findings)
    ctx.scan_cache = scan_cache
    ctx.workers = workers
    findings = config_findings + list(ctx.contract.findings) + findings
    discovered = discover(all_paths, config, ctx.contract)

    diff_mode = base is not None and changed is not None
    if diff_mode and not isinstance(changed, dict):
        changed = {p: p for p in changed}
    # A diff that touches the contract (inventory, signatures, labels, configuration, workflows)
    # can break files it never touched: then every registration is checked again.
    contract_files = contract_paths(config)
    recheck_all = not diff_mode or any(p in contract_files or is_workflow_path(p, config) for p in changed)
    to_check = discovered if recheck_all else [p for p in discovered if p in changed]
    # Every file whose findings are reported for its own sake is read whole (REG001 anywhere in
    # it): each discovered file of a whole-tree check, each changed file of a diff. Files read only
    # for their registrations (the base, untouched files re-checked for a contract change) are
    # read up to their last registration (see registrations.registration_prefix).
    _scan(ctx, head, to_check, exact_paths=set(changed) if diff_mode else set(to_check))
    to_check = [p for p in to_check if p in ctx.scans]  # not: absent, or skipped by a cap (REG902)

    report = Report(files_checked=len(to_check))
    checked = set(to_check)
    for path in to_check:
        scan = ctx.scans[path]
        findings.extend(scan.findings)
        no_main = reg002.check_main_block(path, scan, ctx.contract)
        if no_main is not None:
            findings.append(no_main)

    base_ctx = None
    removed: list[tuple[str | None, Registration]] = []  # what the diff took out (REG050)
    if diff_mode:
        # The base is read only to compare registrations: its contract, not its workflows.
        base_ctx = Context(config, read_contract(base, config, budget), [], budget=budget, scan_cache=scan_cache, workers=workers)
        head_paths = set(all_paths)
        base_paths = sorted({changed[p] for p in checked if changed.get(p)} | {b for h, b in changed.items() if b and h not in head_paths})
        base_discovered = set(discover(base_paths, config, base_ctx.contract))
        _scan(base_ctx, base, sorted(base_discovered))
        _classify(ctx, base_ctx, changed, report, removed)

    # Suite-level rules need every registration of a suite (its total est_time), and a suite the
    # diff took registrations out of may be left empty while a job still runs it (REG015).
    emptied = _emptied_suites(ctx, base_ctx, changed) if diff_mode else {}
    if diff_mode and not recheck_all and (_suite_totals_needed(ctx) or any(u.suite in emptied for u in ctx.uses)):
        _scan(ctx, head, [p for p in discovered if p not in ctx.scans])
    index = None
    if durations is not None:
        from checks.calibration.durations_index import durations_index

        rows = durations(config) if callable(durations) else durations
        if rows:  # the runner's per-file timeout model, from the revision under check (checks/target/timeout_model.py)
            import msgspec

            from checks.target.timeout_model import with_runner_timeout

            ctx.config = msgspec.structs.replace(ctx.config, calibration=with_runner_timeout(
                ctx.config.calibration, head.read, ctx.config.paths.register_module))
        index = durations_index(rows, ctx.config.calibration)
        if not recheck_all and any(r.backend.is_gpu for r in ctx.registrations()):
            _scan(ctx, head, [p for p in discovered if p not in ctx.scans])  # the CUDA/ROCm ratio needs every file
    # REG015 in a diff: consumers in the workflows it changed, of the suites it emptied, and of the
    # suites its inventory change brought in; a contract change that reads registrations anew (a
    # signature, a suite template) can empty any suite, so then every consumer.
    ctx.changed_paths = set(changed) if diff_mode else None
    if diff_mode and any(p in contract_files for p in changed):
        from checks.scanning.scan_facts import contract_fingerprint

        if contract_fingerprint(ctx.contract) != contract_fingerprint(base_ctx.contract):
            ctx.changed_paths = None
        else:
            before = set().union(*base_ctx.contract.suites.values()) if base_ctx.contract.suites else set()
            for suite in set().union(*ctx.contract.suites.values()) - before if ctx.contract.suites else ():
                emptied[suite] = ANY_BACKEND
    ctx.emptied_suites = emptied
    ctx.registrations_complete = all(p in ctx.scans and not ctx.scans[p].unreadable for p in discovered)
    from checks.calibration.evidence import HeadRuns

    at_head = HeadRuns.of(head_runs)
    findings.extend(apply_rules(TreeFacts(ctx, checked, report, base_ctx, index, removed, head_runs=at_head)))

    if diff_mode:
        if any(r.change is not Change.UNCHANGED for r in report.registrations) or any(
                r.change in (Change.ADDED, Change.CHANGED) for r in ctx.registrations()):
            # the summary's per-suite totals need every file of the suites the diff touches
            _scan(ctx, head, [p for p in discovered if p not in ctx.scans])
        from checks.reporting import pr_summary

        report.pr_summary = pr_summary.build(ctx, base_ctx, changed, report.registrations + ctx.registrations(), head, base,
                                             set(discovered), base_discovered, contract_files, index)
    report.registrations.extend(r for p in to_check for r in ctx.scans[p].registrations)
    # the runner's implicit CPU registrations (a file in an implicit-CPU root without a call) are
    # registrations of the target like any other: reported, flagged `implicit`
    report.registrations.extend(ctx.implicit[p] for p in to_check if p in ctx.implicit)
    report.registrations.sort(key=lambda r: (r.file, r.span.line, r.span.column))
    from checks.calibration.evidence import wanted

    if diff_mode and wanted(index, at_head, ctx.config):
        from checks.calibration.evidence import collect

        from checks.reporting.evidence import mark_unverified

        report.evidence = collect(report.registrations, index, at_head, ctx.config.calibration)
        mark_unverified(report.pr_summary, report.evidence)
    if fixes and any(f.suggestion is not None for f in findings):
        from checks.fixing.fixes import attach_fixes  # libcst loads only when there is a fix to make

        attach_fixes(findings, report.registrations, lambda path: _lines(ctx, head, path))
    findings.extend(budget.findings)
    report.findings = findings
    # `# ci-registrar: ignore[...]` on a registration: from each checked file's scan (cached too)
    apply_suppressions(report, {p: ctx.scans[p].suppressions for p in to_check if ctx.scans[p].suppressions})
    report.findings = _apply_overrides(report.findings, config)
    report.findings.sort(key=Finding.sort_key)
    return report


def _read_ahead(head, base, changed, config: Config) -> None:
    """Name, up front, the files every check reads: a remote tree fetches them in one bulk read.

    Head: the contract, the workflows and the changed test files; base: the contract and the
    changed files' old paths. Other test files (suite totals, a whole-tree check) are read when a
    rule needs them, through _scan. A local tree ignores this.
    """
    from checks.scanning.tree import prefetch

    contract = config.paths.contract_modules()
    head_paths = list(head.paths())
    workflows = [p for p in head_paths if is_workflow_path(p, config)]
    if base is None or changed is None:
        prefetch([(head, contract + workflows)])
        return
    changed = changed if isinstance(changed, dict) else {p: p for p in changed}
    present = set(head_paths)
    head_tests = discover([p for p in changed if p in present], config)
    base_tests = discover([b for b in changed.values() if b], config)
    prefetch([(head, contract + workflows + head_tests), (base, contract + base_tests)])


def _lines(ctx: Context, tree, path: str) -> list[str]:
    """A scanned file's lines for a fix: kept by the scan, or read again (a scan from the cache
    holds no text)."""
    scan = ctx.scans.get(path)
    if scan is None:
        return []
    if not scan.lines and scan.parsed:
        data = tree.read(path)
        text = decode_source(data)[0] if data is not None else None
        if text is not None:
            scan.lines = text.split("\n")
    return scan.lines


def _suite_totals_needed(ctx: Context) -> bool:
    return any(r.change in (Change.ADDED, Change.CHANGED) for r in ctx.registrations())


def _emptied_suites(ctx: Context, base_ctx: Context, changed: dict) -> dict[str, set[str]]:
    """Suites (with the backends) that the base versions of the changed files register and their
    head versions no longer do: the diff may have left them empty (REG015 decides, once every
    file is read). A suite still named by another file is not empty, and REG015 sees that."""
    before: dict[str, set[str]] = {}
    for scan in base_ctx.scans.values():
        for reg in scan.registrations:
            if reg.suite and not reg.implicit:
                before.setdefault(reg.suite, set()).add(reg.backend.value)
    for path, scan in ctx.scans.items():
        if path not in changed:
            continue
        for reg in scan.registrations:
            if reg.suite:
                before.get(reg.suite, set()).discard(reg.backend.value)
    return {suite: backends for suite, backends in before.items() if backends}


def _same(a: Registration, b: Registration) -> bool:
    keys = set(a.arguments) | set(b.arguments)
    return all(a.value(k) == b.value(k) for k in keys)


def _classify(ctx: Context, base_ctx: Context, changed: dict, report: Report,
              removed: list[tuple[str | None, Registration]]) -> None:
    """added / changed / removed / unchanged, per (file, backend), in file order; each registration
    taken out goes to `removed` with the head path its file was compared to (None: deleted)."""
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
            removed.append((path, gone))
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
            removed.append((None, gone))


def apply_rules(facts: TreeFacts) -> list[Finding]:
    """Every rule of checks/ruleset on one check: each rule module's `check_registration(facts,
    reg)` for every explicit registration of a checked file (in the order the files were read),
    then each one's `check_tree(facts)`, in code order. Rules applied while reading (a file that
    does not parse, a rejected call, the configuration, the contract, a limit) are not here: the
    scanner, the loader and the budget apply them."""
    per_registration = [m.check_registration for m in rule_modules() if hasattr(m, "check_registration")]
    per_tree = [m.check_tree for m in rule_modules() if hasattr(m, "check_tree")]
    findings: list[Finding] = []
    for reg in facts.explicit:
        if reg.file in facts.checked:
            for check in per_registration:
                findings.extend(check(facts, reg))
    for check in per_tree:
        findings.extend(check(facts))
    return findings


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
