"""REG030 suite-over-budget: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
The runner splits a suite over the consumer's shards by est_time; when the longest shard needs
more than the job's `timeout-minutes`, the job is cancelled and every test after the cut never
reports.

## Example
```python
# four files, each: register_rocm_ci(est_time=6000, suite="stage-c-4-gpu-mi350", labels=["long"])
# the consumer: 2 shards, timeout-minutes: 180
```
Reports:

> suite `stage-c-4-gpu-mi350` holds 24000 s over 4 file(s); its longest of 2 shard(s) needs 12000 s, over the 180 min timeout of ...

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

from checks.model import Severity

CODE = "REG030"
NAME = "suite-over-budget"
SEVERITY = Severity.WARNING
SUMMARY = ("A suite's heaviest shard, as the runner splits it by est_time, exceeds its consumer's job timeout "
           "(predicted from measured durations where they are stored).")
FIXABLE = False
IMPLEMENTED_IN = "checks/rules_suites.py (_budgets)"
