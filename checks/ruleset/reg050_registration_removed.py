"""REG050 registration-removed: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A removed registration drops coverage on that backend; it is a notice so that the removal is a
visible decision in review.

## Example
```python
# base: a CUDA and a ROCm registration; head: the ROCm one deleted
register_cuda_ci(est_time=700, suite="stage-c-8-gpu-h200", labels=["megatron"])
```
Reports:

> the rocm registration (suite `nightly-stage-c-8-gpu-mi350`) was removed: coverage drops on rocm

## How to fix
Nothing to fix if intended: the notice records that coverage on that backend drops. Restore the
registration if the removal was an accident.
"""

from checks.findings import FindingMaker
from checks.model import Severity, Span, code

CODE = "REG050"
NAME = "registration-removed"
SEVERITY = Severity.NOTICE
SUMMARY = "A registration was removed: coverage drops on that backend."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


def check_tree(facts) -> list:
    """Each registration a diff took out (facts.removed, in the engine's classification order):
    at the registration in a file that remains (line 1 of the head file it was renamed to), at the
    registration of a file deleted or renamed away."""
    out = []
    for head_path, gone in facts.removed:
        backend = gone.backend.value
        if head_path is not None:
            out.append(make_finding(
                CODE, head_path, Span.at_line(1) if head_path != gone.file else gone.span,
                f"the {backend} registration (suite {code(gone.suite)}) was removed: coverage drops on {backend}"))
        else:
            out.append(make_finding(
                CODE, gone.file, gone.span,
                f"{gone.file} no longer exists: its {backend} registration (suite {code(gone.suite)}) is gone and "
                f"coverage drops on {backend}"))
    return out
