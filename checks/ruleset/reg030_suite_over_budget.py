"""REG030 suite-over-budget: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The runner splits a suite over the consumer's shards by est_time; when the longest shard needs
more than the job's `timeout-minutes`, the job is cancelled and every test after the cut never
reports. Each job is judged on what its runner selects (its backend, cadence and labels): a PR job
does not carry the suite's nightly-only files.

## Example
```python
# four files, each: register_rocm_ci(est_time=6000, suite="stage-c-4-gpu-mi350", labels=["long"])
# the consumer: 2 shards, timeout-minutes: 180
```
Reports:

> suite `stage-c-4-gpu-mi350` holds 24000 s over 4 files; its longest of 2 shards needs 12000 s, over the 180 min timeout of ...

A suite over the timeout of several workflows is one finding that names each of them.

With stored durations the runner's split is replayed (its LPT partitioning by est_time, ties by
file name) and each shard's time predicted from measured p90s: the finding names the overloaded
shard (`--auto-partition-id`), its files, and the est_times that rebalance it, or the shard count
that would fit (docs/calibration.md).

## How to fix
Calibrate the suite's est_times (`ci-registrar calibrate --write`) when the split is what
overloads a shard; otherwise split the suite's files across more shards (`consumers[].shards`),
raise the consumer job's `timeout-minutes`, or move files to another suite, so each shard fits
its job timeout.
"""

from checks.findings import FindingMaker
from checks.model import Severity, code
from checks.wording import plural

CODE = "REG030"
NAME = "suite-over-budget"
SEVERITY = Severity.WARNING
SUMMARY = ("A suite's heaviest shard, as the runner splits it by est_time, exceeds its consumer's job timeout "
           "(predicted from measured durations where they are stored).")
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_tree(facts) -> list:
    """REG030: the runner's partition replayed by est_time, each shard's time predicted from
    measured p90 (est_time where there is none); an overloaded suite gets the est_times that
    rebalance it, or the shard count it needs. One finding per suite, naming every workflow whose
    job it overruns (the defect is the suite's size, whichever jobs run it)."""
    from collections import defaultdict

    from checks.calibration.shards import Item, heaviest, minutes, partition, rebalance, shards_needed
    from checks.workflows.runs import GITHUB_DEFAULT_TIMEOUT_MINUTES

    ctx, checked, consumers_of, durations_index = facts.ctx, facts.checked, facts.consumers_of, facts.durations
    out = []
    params = ctx.config.calibration

    def item(reg) -> tuple:
        if durations_index:
            from checks.calibration.durations_index import calibrated_seconds, policy_suggestion

            measured = calibrated_seconds(durations_index, reg, params.min_samples)
            if measured is not None:
                return (Item(reg.file, reg.est_time, measured, True),
                        policy_suggestion(durations_index, reg, params, flagged_only=True),
                        policy_suggestion(durations_index, reg, params))
        return Item(reg.file, reg.est_time, reg.est_time), None, None

    by_suite: dict[str, list] = defaultdict(list)
    for reg in ctx.registrations():
        if reg.suite and reg.disabled is None and reg.est_time is not None:
            by_suite[reg.suite].append(reg)
    for suite, regs in sorted(by_suite.items()):
        if not any(r.file in checked for r in regs):
            continue
        by_reg = {id(r): item(r) for r in regs}
        over = []  # (use, shards, heaviest shard, timeout in minutes, its triples), one per consumer it overruns
        for use in consumers_of.get(suite, []):
            if use.shards < 1:
                continue  # a shard count over the `shards` cap: REG902 said REG030 is not checked
            # what this run's runner selects (its backend, cadence, labels; checks/target/suite_runs.py),
            # not every registration of the suite
            chosen = [by_reg[id(r)] for r in facts.runs.selection(use, regs)]
            if not chosen:
                continue
            timeout = use.timeout_minutes or GITHUB_DEFAULT_TIMEOUT_MINUTES
            shards = partition([i for i, _f, _a in chosen], use.shards)
            worst = heaviest(shards)
            if worst.predicted > timeout * 60:
                over.append((use, shards, worst, timeout, chosen))
        if not over:
            continue
        # The consumer it overruns most is the one the split and the fix are computed for.
        use, shards, worst, timeout, triples = max(over, key=lambda o: (o[2].predicted / (o[3] * 60), o[0].consumer))
        over = [o[:4] for o in over]
        items = [i for i, _f, _a in triples]
        # What calibration changes anyway (REG020's flags) first; every measured file only if that is not enough.
        flagged = {i.file: f for i, f, _a in triples if f is not None}
        proposals = {i.file: a for i, _f, a in triples if a is not None}
        measured = sum(1 for i in items if i.measured)
        where = ctx.contract.find_suite(suite)
        file, span = (where.file, where.span) if where else (regs[0].file, regs[0].anchor("suite"))
        source = ((" (measured p90 for every file)" if measured == len(items)
                   else f" (measured p90 for {plural(measured, 'file')}, est_time for the rest)") if measured
                  else " (totals from est_time)")
        total = f"suite {code(suite)} holds {sum(i.seconds for i in items):.0f} s over {plural(len(items), 'file')}"

        def timeout_note(u, t) -> str:
            return f"{t} min" + ("" if u.timeout_minutes else " (GitHub's default job timeout)")

        if len(over) == 1:
            message = (f"{total}; its longest of {plural(use.shards, 'shard')} needs {worst.predicted:.0f} s, "
                       f"over the {timeout_note(use, timeout)} timeout of {use.consumer}" + source)
        else:
            each = ", ".join(f"{u.consumer} (longest of {plural(u.shards, 'shard')} {w.predicted:.0f} s, "
                             f"timeout {timeout_note(u, t)})" for u, _s, w, t in sorted(over, key=lambda o: o[0].consumer))
            message = f"{total}{source}; it overruns the job timeout in {plural(len(over), 'workflow')}: {each}"
        if use.shards > 1:
            others = ", ".join(minutes(s.predicted) for s in shards if s.index != worst.index)
            message += ((f"; in {use.consumer}, " if len(over) > 1 else "; ")
                        + f"the runner's split by est_time puts {', '.join(code(f) for f in worst.files)} in shard "
                        f"{worst.index} (--auto-partition-id {worst.index}, {minutes(worst.predicted)}; "
                        f"{'the other' if len(shards) == 2 else 'the others'}: {others})")
        if proposals:
            fix = rebalance(items, use.shards, timeout * 60, flagged) if flagged else None
            if fix is None:
                fix = rebalance(items, use.shards, timeout * 60, proposals)
            if fix is not None and fix.est_times:
                message += ("; est_time " + ", ".join(f"{code(f)} {next(i.est_time for i in items if i.file == f):g} -> {v:g}" for f, v in sorted(fix.est_times.items()))
                            + " rebalance it: predicted shards " + ", ".join(minutes(s.predicted) for s in fix.shards)
                            + " (`ci-registrar calibrate`)")
            elif fix is None:
                need = shards_needed(items, timeout * 60, proposals)
                message += ("; no est_time rebalances it: " + (f"{need} shards would fit" if need else "one file alone exceeds the timeout"))
        out.append(make_finding(CODE, file, span, message))
    return out
