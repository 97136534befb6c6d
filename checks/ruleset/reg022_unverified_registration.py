"""REG022 unverified-registration: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A pull request that enables a ROCm test says the test passes on the suite's hardware. The App
holds the runs that say so or not: the default branch's stored runs, and the on-demand runs it
dispatched for the pull request's head. A registration with neither asks the reviewer to take
it on trust; with `verification: required` in the configuration it cannot merge that way
([evidence.md](evidence.md)).

## Example
```python
# the diff adds it; no run of the file on MI355X on the default branch, no /run-rocm of this head
register_rocm_ci(est_time=800, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])
```
Reports:

> not verified on MI355X: no passing run of tests/e2e/test_case.py on the default branch and no on-demand run of this head; `/run-rocm nightly-stage-c-4-gpu-mi350` verifies it

## How to fix
Comment `/run-rocm SUITE` on the pull request (or click the summary's button): a maintainer's
run of this head that passes the file verifies it, and the check run's summary and verdict
follow when the run completes. A file that failed or timed out needs fixing (or a passing run
after it). By default this is a notice; `verification: required` makes it a failure.
"""

from checks.findings import FindingMaker
from checks.model import Severity

CODE = "REG022"
NAME = "unverified-registration"
SEVERITY = Severity.NOTICE
SUMMARY = (
    "A ROCm registration the pull request enables or changes has no passing run on its suite's "
    "hardware: none on the default branch, none the App ran for this head (a failure with "
    "`verification: required`)."
)
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_registration(facts, reg) -> list:
    """Each ROCm registration a diff adds or changes (enabled), judged by the evidence module: the
    same state the summary shows."""
    from checks.calibration import evidence

    if facts.base_ctx is None or not evidence.needs_evidence(reg):
        return []
    if not evidence.wanted(facts.durations, facts.head_runs, facts.config):
        return []  # nothing known of runs and nothing required: no notice on every ROCm registration
    judged = evidence.judge(reg, facts.durations, facts.head_runs or evidence.HeadRuns(None), facts.config.calibration)
    if judged.verified:
        return []
    run = judged.run or {}
    if judged.state == evidence.FAILED:
        verb = "timed out" if run.get("outcome") == "TIMEOUT" else "failed"
        where = "at this head" if run.get("on_demand") else "on the default branch"
        why = f"its newest run {where} {verb} ({(run.get('at') or '?')[:10]}) and no newer one passed"
    else:
        why = f"no passing run of {reg.file} on the default branch and no on-demand run of this head"
    severity = Severity.FAILURE if facts.config.verification == "required" else SEVERITY
    return [make_finding(CODE, reg.file, reg.span,
                         f"not verified on {judged.hardware}: {why}; `/run-rocm {reg.suite}` verifies it",
                         severity=severity)]
