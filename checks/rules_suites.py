"""Rules about suites: REG010 unknown suite, REG011 hardware, REG012 nightly namespace moves,
REG013 no consumer, REG014 stale consumer, REG015 consumer without registrations, REG016 nightly
flag no consumer selects, REG040 GPU count; REG030 (suite over its job timeout) is
checks/ruleset/reg030_suite_over_budget.py."""

from __future__ import annotations

from collections import defaultdict

from checks.model import code, Backend, Change, Finding, Registration, Report, Severity
from checks.scanning.registrations import gpu_count_from_name
from checks.rules import make_finding
from checks.ruleset import reg030_suite_over_budget
from checks.target.suites import HardwareIndex, is_nightly, parse_suite_name
from checks.target.workflows import GITHUB_DEFAULT_TIMEOUT_MINUTES, direct_run_of
from checks.wording import article, backend_name, plural


def _q(s: str) -> str:
    return f'"{s}"'


def apply(ctx, checked: set[str], base_ctx, report: Report, durations_index=None) -> list[Finding]:
    findings: list[Finding] = []
    contract = ctx.contract
    consumers_of: dict[str, list] = defaultdict(list)
    for use in ctx.uses:
        consumers_of[use.suite].append(use)
    regs = [r for r in ctx.registrations() if not r.implicit]
    hardware = _hardware_index(contract)
    for reg in regs:
        if reg.file in checked:
            findings.extend(_per_registration(ctx, reg, consumers_of, hardware))
    findings.extend(_stale_consumers(ctx, hardware))
    findings.extend(_consumers_without_registrations(ctx))
    findings.extend(reg030_suite_over_budget.check(ctx, checked, consumers_of, durations_index))
    return findings


def _hardware_index(contract) -> HardwareIndex:
    return HardwareIndex({name for suites in contract.suites.values() for name in suites})


def _per_registration(ctx, reg: Registration, consumers_of, hardware: HardwareIndex) -> list[Finding]:
    out: list[Finding] = []
    contract = ctx.contract
    suite = reg.suite
    if suite is None:
        return out
    composed = reg.composed_suite is not None
    span = reg.anchor("suite") if not composed else reg.anchor("runner_config")
    parsed = parse_suite_name(suite)
    known_here = contract.suite_names(reg.backend)
    in_inventory = suite in known_here
    # REG010
    if contract.inventory_known and reg.backend not in contract.partial_backends and not in_inventory:
        owners = [b for b in contract.owners(suite) if b is not reg.backend]
        checked = contract.suite_checked_backends is None or reg.backend in contract.suite_checked_backends
        what = f"suite {code(suite)}" + (" (composed from `stage=` and `runner_config=`)" if composed else "")
        if checked:
            parts = [f"{what} is not {article(backend_name(reg.backend.value) + ' suite')} in the inventory ({ctx.config.paths.suites_module}), so this registration never runs"]
        else:
            parts = [f"{what} is not {article(backend_name(reg.backend.value) + ' suite')} in the inventory ({ctx.config.paths.suites_module}); the runner does not validate {backend_name(reg.backend.value)} suites against it, so only a job that passes this exact suite name runs the test"]
        if owners:
            parts.append(f"{code(suite)} belongs to {', '.join(b.value for b in owners)}")
        # did-you-mean and fixes keep the GPU count and hardware the name states (b200 never
        # becomes h200, an 8-GPU suite never a 4-GPU one)
        keep = hardware.same_hardware
        near = contract.near.close(suite, known_here, reg.backend, keep)
        if near:
            parts.append("did you mean " + " or ".join(f"{code(n)}" for n in near) + "?")
        fix_to = contract.near.correction(suite, known_here, reg.backend, keep) if not composed else None
        if reg.disabled is not None and fix_to is not None:
            # disabled on purpose (its hardware may have no CI yet): a hint, never a one-click move
            parts.append("no fix is offered for a disabled registration")
            fix_to = None
        # One defect, one severity, in every era and for every backend: where the runner rejects
        # the name (it validates this backend and raises) or no job runs the suite for this
        # backend, the test never runs (failure); where the runner lets the name through (it does
        # not validate this backend, or only warns) and a job runs it, the test runs (warning).
        severity = None
        lets_through = not checked or bool(contract.unknown_suite_warns)
        if reg.disabled is not None and (not checked or contract.unknown_suite_when_disabled == "warning"):
            severity = Severity.WARNING
        elif lets_through:
            run_by = [u for u in consumers_of.get(suite, []) if u.selects(reg.backend.value)
                      and (u.nightly is None or bool(u.nightly) == reg.nightly)]
            direct = direct_run_of(getattr(ctx, "direct_runs", {}), reg.file)
            runner = (f"the runner ({contract.unknown_suite_warns}) only prints \"Unknown suite\" and runs it anyway"
                      if checked else f"the runner does not validate {backend_name(reg.backend.value)} suites against it")
            if run_by:
                severity = Severity.WARNING
                use = run_by[0]
                flags = f"--hw {use.hw} " if use.hw else ""
                flags += f"--suite {suite}" + (" --nightly" if use.nightly else "")
                where = f"{use.file}:{use.span.line}" if use.file else use.consumer
                parts[0] = (f"{what} is not {article(backend_name(reg.backend.value) + ' suite')} in the inventory ({ctx.config.paths.suites_module}); "
                            f"{runner}, and {where} runs it ({code(flags)}), so the test runs: add the suite to the inventory")
            elif direct is not None:
                severity = Severity.WARNING
                parts[0] = (f"{what} is not {article(backend_name(reg.backend.value) + ' suite')} in the inventory ({ctx.config.paths.suites_module}) "
                            f"and no job runs it, so the runner never selects this registration; "
                            f"{direct} runs the file itself, so the test runs: register it in a suite that job runs, or drop the registration")
            elif getattr(ctx, "consumers_partial", False):
                severity = Severity.WARNING  # a workflow was not read whole: it may be the one that runs it
                parts[0] = (f"{what} is not {article(backend_name(reg.backend.value) + ' suite')} in the inventory ({ctx.config.paths.suites_module}); "
                            f"{runner}, so only a job that passes this exact suite name runs the test, and a workflow "
                            "could not be read whole (REG902)")
            else:
                parts[0] = (f"{what} is not {article(backend_name(reg.backend.value) + ' suite')} in the inventory ({ctx.config.paths.suites_module}) "
                            f"and no workflow in this repository or its configured consumers runs suite {code(suite)} "
                            f"for {backend_name(reg.backend.value)}" + (" with `--nightly`" if reg.nightly else "")
                            + f", so this test never runs ({runner})")
        out.append(
            make_finding("REG010", reg.file, span, "; ".join(parts), severity=severity, suggestion=_q(fix_to) if fix_to else None)
        )
    # REG011
    if parsed is not None:
        klass = parsed.backend_class
        if klass is not None and klass.family is not reg.backend.family:  # amd and rocm: one hardware family
            out.append(
                make_finding(
                    "REG011",
                    reg.file,
                    span,
                    f"suite {code(suite)} runs on {parsed.hardware} ({klass.value}) hardware, but {reg.function} registers the test for {reg.backend.value}",
                )
            )
    # REG012: moved across the nightly- namespace
    base = reg.base
    if reg.change is Change.CHANGED and base is not None and base.suite and base.suite != suite and is_nightly(base.suite) != is_nightly(suite):
        out.append(make_finding("REG012", reg.file, span, _namespace_message(base.suite, suite, consumers_of)))
    # REG013 (not when a workflow could not be read whole: its suites may be the missing consumers)
    partial = getattr(ctx, "consumers_partial", False)
    backend = reg.backend.value
    all_uses = consumers_of.get(suite) or []
    uses = [u for u in all_uses if u.selects(backend)]
    if reg.disabled is None and (in_inventory or not contract.inventory_known) and not uses and not partial:
        if all_uses:
            hws = ", ".join(sorted({code("--hw " + u.hw) for u in all_uses if u.hw}))
            detail = f"{_who(suite, consumers_of)} runs {code(suite)} only with {hws}, which does not select {backend} registrations"
        else:
            detail = (f"no workflow in this repository or its configured consumers runs suite {code(suite)} for {backend} "
                      f"(none passes {code('--suite ' + suite)})")
        out.append(make_finding("REG013", reg.file, span, f"no consumer runs suite {code(suite)} for {backend}: {detail}, so this test never runs"))
    # REG016: nightly=True, but every invocation that runs the suite for this backend leaves nightly tests out
    if reg.nightly and reg.disabled is None and uses and not partial and all(u.nightly is False for u in uses):
        who = ", ".join(sorted({u.consumer for u in uses}))
        out.append(
            make_finding(
                "REG016",
                reg.file,
                reg.anchor("nightly"),
                f"registered with nightly=True, but no consumer of suite {code(suite)} selects nightly registrations: {who} "
                f"run{'s' if len({u.consumer for u in uses}) == 1 else ''} it without {code('--nightly')} or {code('--cadence nightly')}, so the runner never runs this test",
            )
        )
    # REG040
    if parsed is not None and parsed.gpus is not None:
        own = gpu_count_from_name(reg.file)
        source = "its file name"
        scan = ctx.scans.get(reg.file)
        if scan is not None and scan.num_gpus_constant is not None:
            own, source = scan.num_gpus_constant[0], "its NUM_GPUS constant"
        if own is not None and own != parsed.gpus:
            out.append(make_finding("REG040", reg.file, span, f"suite {code(suite)} runs on {plural(parsed.gpus, 'GPU')} but the test says it needs {own} ({source})"))
    return out


def _who(suite: str, consumers_of) -> str:
    uses = consumers_of.get(suite) or []
    if not uses:
        return "nobody"
    return ", ".join(sorted({u.consumer for u in uses}))


def _namespace_message(old: str, new: str, consumers_of) -> str:
    if is_nightly(new):
        cost = "it leaves the PR gate (which costs every ROCm PR) and runs only where the nightly consumer schedules it"
    else:
        cost = "it joins the PR gate: it will run (and cost GPU time) on every PR"
    return f"registration moved from {code(old)} (run by {_who(old, consumers_of)}) to {code(new)} (run by {_who(new, consumers_of)}): {cost}"


def _stale_consumers(ctx, hardware: HardwareIndex) -> list[Finding]:
    contract = ctx.contract
    if not contract.inventory_known:
        return []
    known = set().union(*(set(s) for s in contract.suites.values())) if contract.suites else set()
    # A suite some registration names is selected by the job even outside the inventory, where the
    # runner does not validate that backend's suites (sglang's AMD nightlies): not stale. The
    # registration itself gets REG010 for the inventory.
    unchecked = contract.suite_checked_backends
    registered = {r.suite for r in ctx.registrations() if r.suite and unchecked is not None and r.backend not in unchecked}
    out = []
    reported = set()
    for use in ctx.uses:
        if use.file is None or use.suite in known or use.suite in registered or (use.file, use.suite) in reported:
            continue
        if contract.partial_backends:
            continue  # cannot tell a stale name from one we could not read
        reported.add((use.file, use.suite))
        keep = hardware.same_hardware
        near = contract.near.close(use.suite, known, "all", keep)
        hint = f"; did you mean {' or '.join(f'{code(n)}' for n in near)}?" if near else ""
        fix_to = contract.near.correction(use.suite, known, "all", keep)
        out.append(
            make_finding(
                "REG014",
                use.file,
                use.span,
                f"{use.consumer} runs suite {code(use.suite)}, which is not in the inventory: that job selects no test (the runner raises for an unknown suite){hint}",
                suggestion=fix_to,
            )
        )
    return out


def _consumers_without_registrations(ctx) -> list[Finding]:
    """REG015: a consumer runs an inventory suite that no registration names (for its --hw). Only
    when every discovered file was read: a file not read (a diff check, a syntax error, a cap) may
    hold the registration. A diff check reports what the diff brings: consumers in the workflows
    it changed, and consumers of a suite whose last registrations for the consumer's --hw the
    diff removed or moved elsewhere (the workflow is untouched, the PR empties its suite), or that
    the diff added to the inventory; every consumer when the diff changes how registrations read."""
    if not getattr(ctx, "registrations_complete", False):
        return []
    changed = getattr(ctx, "changed_paths", None)
    emptied = getattr(ctx, "emptied_suites", None) or {}
    contract = ctx.contract
    known = set().union(*(set(s) for s in contract.suites.values())) if contract.inventory_known and contract.suites else None
    registered: dict[str, set[str]] = defaultdict(set)
    unread: set[str] = set()  # backends with a registration whose suite is not read (not a literal, composed)
    for reg in ctx.registrations():
        if reg.suite:
            registered[reg.suite].add(reg.backend.value)
        else:  # (an implicit registration always has its suite)
            unread.add(reg.backend.value)
    out = []
    reported = set()
    for use in ctx.uses:
        if known is not None and use.suite not in known:
            continue  # REG014's finding
        backends = registered.get(use.suite, set())
        if (backends if use.hw is None else use.hw in backends) or (use.consumer, use.suite, use.hw) in reported:
            continue
        if changed is not None and use.file not in changed and not _emptied_for(emptied.get(use.suite), use.hw):
            continue
        if (use.hw is None and unread) or use.hw in unread:
            continue  # a registration whose suite could not be read may name it
        reported.add((use.consumer, use.suite, use.hw))
        if use.file is not None:
            file, span = use.file, use.span
        else:
            where = contract.find_suite(use.suite)
            if where is None:
                continue
            file, span = where.file, where.span
        hw = f" with {code('--hw ' + use.hw)}" if use.hw else ""
        out.append(
            make_finding(
                "REG015",
                file,
                span,
                f"{use.consumer} runs suite {code(use.suite)}{hw}, but no registration names that suite"
                + (f" for {use.hw}" if use.hw else "")
                + ": that job selects no test",
            )
        )
    return out


def _emptied_for(backends: set[str] | None, hw: str | None) -> bool:
    """The diff took this suite's registrations out for the backends a consumer with `hw` selects
    (or added the suite to the inventory: "*", every backend)."""
    return bool(backends) and (hw is None or hw in backends or "*" in backends)


def shard_totals(est_times: list[tuple[str, float]], shards: int) -> list[float]:
    """The runner's split (checks/calibration/shards.py) of est_times alone: each shard's est_time sum, largest first."""
    from checks.calibration.shards import Item, partition

    return sorted((s.est_total for s in partition([Item(f, e, e) for f, e in est_times], shards)), reverse=True)
