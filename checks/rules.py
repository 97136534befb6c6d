"""The rule registry: every finding's stable code, name, default severity and what it means.

The registry is data, so a rule is added in one place and documented from the same source
(`ci-registrar check --list-rules`). REG020/REG021 (calibration) register here as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from checks.model import Finding, Fix, Severity, Span


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str


RULES: dict[str, Rule] = {}


def rule(code: str, name: str, severity: Severity, summary: str) -> Rule:
    if code in RULES:
        raise ValueError(f"rule {code} registered twice")
    RULES[code] = Rule(code, name, severity, summary)
    return RULES[code]


F, W, N = Severity.FAILURE, Severity.WARNING, Severity.NOTICE

rule("REG001", "unparsable-file", F, "The file does not parse (syntax error, not UTF-8, too deep): the runner cannot read it.")
rule("REG002", "rejected-registration", F, "A registration the target's own runner rejects: non-literal or starred arguments, too many positionals, unknown, duplicate or missing keywords, bad est_time, suite, labels, nightly or disabled.")
rule("REG003", "invisible-registration", W, "A registration the runner silently ignores: aliased import, attribute call, call not a top-level expression statement, call inside `if`.")
rule("REG004", "unregistered-test-file", F, "A test file in a discovery root with no registration (outside the implicit-CPU roots): the runner never runs it.")
rule("REG017", "external-consumer-unread", W, "A configured external consumer's workflow could not be read (not given to the CLI, not readable by the App, not UTF-8 or not YAML): the suites it runs are unknown, so the checks that need them (REG013, REG016) are skipped for this check.")
rule("REG010", "unknown-suite", F, "The suite is not in the inventory for that backend (did-you-mean, and the backend that owns the name).")
rule("REG011", "hardware-mismatch", F, "The suite's hardware class contradicts the backend (an -mi350 suite in register_cuda_ci, an -h200 suite in register_rocm_ci).")
rule("REG012", "nightly-namespace-move", N, "A registration moved between a PR-gate suite and a nightly- suite; says who consumes each.")
rule("REG013", "unconsumed-suite", W, "No workflow in the repository runs the suite (for the registration's backend, when the workflow passes `--hw`) and no configured external consumer runs it: its tests never run.")
rule("REG014", "stale-consumer", W, "A workflow runs a suite that is not in the inventory: that job selects nothing (or fails).")
rule("REG015", "consumer-without-registrations", W, "A consumer (a workflow of the repository, or a configured external one read from its file) runs a suite of the inventory that no registration names, for the backend it passes with `--hw`: that job selects no test.")
rule("REG016", "nightly-never-selected", W, "A `nightly=True` registration whose suite is run only by invocations that do not select nightly registrations (no `--nightly`, no `--cadence nightly|weekly|release`): the runner never runs it.")
rule("REG020", "est-time-miscalibrated", W, "est_time out of line with stored durations on the calibration hardware: below the p90 of recent passing runs, or above max(1.5 x p90, p90 + 120 s); failure when the observed maximum exceeds the runner's timeout for that est_time.")
rule("REG021", "est-time-uncalibrated", N, "No or too few stored durations (fewer than min_samples runs): says so, and estimates a value from the other backend's est_time times the ratio learnt across files that have both.")
rule("REG030", "suite-over-budget", W, "A suite's total est_time per shard exceeds its consumer's job timeout.")
rule("REG040", "gpu-count-mismatch", W, "The GPU count in the suite name contradicts the test's own (a 2xGPU file name, a NUM_GPUS constant).")
rule("REG050", "registration-removed", N, "A registration was removed: coverage drops on that backend.")
rule("REG900", "invalid-configuration", F, "`.github/ci-registrar.yml` is invalid: the check says what is wrong and where; defaults are not silently used instead.")
rule("REG901", "unreadable-contract", W, "The suite inventory, register signatures or labels cannot be read statically; rules that depend on the unreadable part are skipped.")
rule("REG902", "analysis-limit-reached", W, "A file is larger or more expanded than an analysis limit allows (bytes, syntax nodes, YAML nodes after aliases, names, shards, matrix values, files): it is analysed no further, and the finding names the limit, its value, the file and the checks skipped.")


def make_finding(
    code: str,
    file: str,
    span: Span,
    message: str,
    *,
    severity: Severity | None = None,
    suggestion: str | None = None,
    fix: Fix | None = None,
) -> Finding:
    r = RULES[code]
    return Finding(
        rule=code,
        severity=severity or r.severity,
        file=file,
        span=span,
        message=message,
        suggestion=suggestion,
        fix=fix,
        title=f"{code} {r.name}",
    )
