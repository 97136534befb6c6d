"""What one check of a tree hands every rule: the revision's context and the indexes rules share.

The engine (checks/engine.py) builds one TreeFacts per check and drives the rule modules of this
package with it: `check_registration(facts, reg)` for each explicit registration of a checked
file, then `check_tree(facts)` once. The indexes are built on first use and shared, so a rule
that needs "who runs this suite" does not rebuild it per registration.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from checks.model import Registration, Report, Span



@dataclass(eq=False)
class TreeFacts:
    ctx: object  # checks.engine.Context: config, contract, consumers (uses), scans, registrations()
    checked: set[str]  # the files whose findings this check reports
    report: Report
    base_ctx: object | None = None  # a diff check: the base revision's Context
    durations: object | None = None  # checks.calibration.durations_index.DurationsIndex, when durations were given
    # a diff check: every registration the diff took out, with the head path its file was compared
    # to (None: the file was deleted or renamed away)
    removed: list[tuple[str | None, Registration]] = field(default_factory=list)
    head_runs: object | None = None  # checks.calibration.evidence.HeadRuns: the App's on-demand runs for this PR
    _memo: dict = field(default_factory=dict)

    @property
    def contract(self):
        return self.ctx.contract

    @property
    def config(self):
        return self.ctx.config

    @property
    def consumers_partial(self) -> bool:
        """A workflow was not read whole (REG902): its suites may be the consumers not found."""
        return getattr(self.ctx, "consumers_partial", False)

    @cached_property
    def explicit(self) -> list[Registration]:
        """The registrations calls declare (the runner's implicit CPU ones are not judged)."""
        return [r for r in self.ctx.registrations() if not r.implicit]

    @cached_property
    def consumers_of(self) -> dict[str, list]:
        """suite -> the consumers (workflow steps, configured consumers) that run it, in reading order."""
        out: dict[str, list] = defaultdict(list)
        for use in self.ctx.uses:
            out[use.suite].append(use)
        return out

    @cached_property
    def hardware(self):
        """The hardware models and GPU counts the inventory's suite names state (did-you-mean keeps them)."""
        from checks.target.suites import HardwareIndex

        return HardwareIndex({name for suites in self.contract.suites.values() for name in suites})

    def who_runs(self, suite: str) -> str:
        uses = self.consumers_of.get(suite) or []
        if not uses:
            return "nobody"
        return ", ".join(sorted({u.consumer for u in uses}))

    def selecting(self, reg: Registration) -> list:
        """The consumers of the registration's suite that select its backend (`--hw`)."""
        return [u for u in self.consumers_of.get(reg.suite) or [] if u.selects(reg.backend.value)]

    def once(self, key: str, compute):
        """A value one rule computes once per check (compute() on first use)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]


def suite_span(reg: Registration) -> Span:
    """Where a finding about a registration's suite points: the suite argument, or runner_config
    for a suite composed from `stage=` and `runner_config=`."""
    return reg.anchor("suite") if reg.composed_suite is None else reg.anchor("runner_config")


def quoted(s: str) -> str:
    """A suite name as a fix's replacement argument text."""
    return f'"{s}"'
