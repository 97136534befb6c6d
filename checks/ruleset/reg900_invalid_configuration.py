"""REG900 invalid-configuration: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
A configuration the check cannot read would otherwise be replaced by defaults without anyone
noticing; the check fails instead and says where the problem is.

## Example
```yaml
# .github/ci-registrar.yml
rules:
  REG030: loud
```
Reports:

> invalid configuration: Invalid enum value 'loud' (at rules.REG030)

Every number must be finite and in its range (`number_errors` below): `daily_gpu_hours: .nan`
or `.inf` is a REG900 at its line, and nothing is dispatched on such a configuration (a NaN
budget compares false with every cost, so it would stop nothing).

## How to fix
Fix `.github/ci-registrar.yml` at the reported line (`ci-registrar config validate` checks it
locally; docs/configuration.md lists every key). The check does not fall back to defaults.
"""

import math
import re

import msgspec

from checks.model import Severity

CODE = "REG900"
NAME = "invalid-configuration"
SEVERITY = Severity.FAILURE
SUMMARY = "`.github/ci-registrar.yml` is invalid: the check says what is wrong and where; defaults are not silently used instead."
FIXABLE = False
IMPLEMENTED_IN = "checks/target/config.py"


# The range of each number a configuration may hold, by its path (a dispatch entry's by
# `$.dispatch.*`, a consumer's by `$.consumers[]`): (least, most), both inclusive. The upper ends
# are far past any real value; they keep a typo (or a 400-digit number) from becoming a budget,
# a day count or a shard count nobody meant. Ranges checked elsewhere (checks/target/config.py: a
# dispatch entry's shards and timeouts, the calibration's lower bounds) are not repeated here, and
# a consumer's shards and timeout and a dispatch entry's GPUs are checked here only (one error each).
MAX_DAYS = 3650
NUMBER_RANGES: dict[str, tuple[float, float]] = {
    "$.budgets.daily_gpu_hours": (0, 1_000_000),
    "$.budgets.max_files_per_command": (1, 1000),
    "$.calibration.window_runs": (1, 10_000),
    "$.calibration.window_days": (1, MAX_DAYS),
    "$.calibration.min_samples": (1, 10_000),
    "$.calibration.margin": (1, 10),
    "$.calibration.round_to_s": (1, 3600),
    "$.calibration.over_factor": (1, 100),
    "$.calibration.over_slack_s": (0, 86_400),
    "$.calibration.timeout_per_file_s": (1, 7 * 86_400),
    "$.calibration.max_margin": (1, 10),
    "$.calibration.floor_days": (1, MAX_DAYS),
    "$.calibration.pull_request_every_days": (1, 365),
    "$.consumers[].timeout_minutes": (1, 7 * 24 * 60),
    "$.consumers[].shards": (1, 256),
    "$.dispatch.*.gpus": (1, 64),
}


def _numbers(value, path: str, pattern: str):
    """(path, pattern, number) of every number in a parsed configuration (bools are not numbers)."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path, pattern, value
    elif isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            yield from _numbers(getattr(value, name), f"{path}.{name}", f"{pattern}.{name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{path}.{key}", f"{pattern}.*")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers(item, f"{path}[{i}]", f"{pattern}[]")


def number_errors(config) -> list[tuple[str, str]]:
    """(error path, message) for each number of `config` that is not finite or not in its range."""
    errors = []
    for path, pattern, number in _numbers(config, "$", "$"):
        # a list item's index is left out: the parsed list may lack an item the file has (one
        # with a type error), and the finding's line says which item it is
        shown = re.sub(r"\[\d+\]", "[]", path.removeprefix("$."))
        if isinstance(number, float) and not math.isfinite(number):
            errors.append((path, f"{shown} must be a finite number, not {number}"))
            continue
        least, most = NUMBER_RANGES.get(pattern, (-math.inf, math.inf))
        if not least <= number <= most:
            errors.append((path, f"{shown} must be from {least:g} to {most:g}, not {number:g}"))
    return errors
