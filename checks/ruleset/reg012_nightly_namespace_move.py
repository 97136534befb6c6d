"""REG012 nightly-namespace-move: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
Moving between a PR-gate suite and a `nightly-` suite changes who runs the test and when: it
leaves (or joins) the gate every pull request pays for. Often intended, so it is a notice naming
the consumers on both sides.

## Example
```python
# base: register_rocm_ci(est_time=600, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])
register_rocm_ci(est_time=600, suite="stage-c-4-gpu-mi350", labels=["long"])
```
Reports:

> registration moved from `nightly-stage-c-4-gpu-mi350` (run by ...) to `stage-c-4-gpu-mi350` (run by ...): it joins the PR gate: it will run (and cost GPU time) on every PR

## How to fix
Nothing to fix if the move is intended: PR-gate suites run on pull requests, `nightly-` suites
run only in the nightly workflows the finding names. Check the new consumer runs the file.
"""

from checks.model import Severity

CODE = "REG012"
NAME = "nightly-namespace-move"
SEVERITY = Severity.NOTICE
SUMMARY = "A registration moved between a PR-gate suite and a nightly- suite; says who consumes each."
FIXABLE = False
IMPLEMENTED_IN = "checks/rules_suites.py"
