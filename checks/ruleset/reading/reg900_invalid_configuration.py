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

from __future__ import annotations

from checks.findings import FindingMaker
from checks.model import Finding, Severity, Span

CODE = "REG900"
NAME = "invalid-configuration"
SEVERITY = Severity.FAILURE
SUMMARY = "`.github/ci-registrar.yml` is invalid: the check says what is wrong and where; defaults are not silently used instead."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)
# Applied while reading: the configuration loader (checks/config/schema.py load_config) parses
# the file and validates it against its schema, and asks this module whether each number is in
# range (number_errors) and for each finding (not_utf8, not_yaml, schema_error, invalid).


# The range of each number a configuration may hold, by its path (a dispatch entry's by
# `$.dispatch.*`, a consumer's by `$.consumers[]`): (least, most), both inclusive. The upper ends
# are far past any real value; they keep a typo (or a 400-digit number) from becoming a budget,
# a day count or a shard count nobody meant. Ranges checked elsewhere (checks/config/schema.py: a
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
    import msgspec

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
    import math
    import re

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


def _at(path: str, node, message: str) -> Finding:
    """A REG900 finding at a YAML node of the file (its first line when there is none)."""
    if node is None:
        return make_finding(CODE, path, Span.at_line(1), message)
    s, e = node.start_mark, node.end_mark
    span = Span(s.line + 1, s.column + 1, s.line + 1, (e.column + 1) if e.line == s.line else s.column + 2)
    return make_finding(CODE, path, span, message)


def not_utf8(path: str, reason: str) -> Finding:
    return make_finding(CODE, path, Span.at_line(1), f"{path} is not UTF-8: {reason}")


def not_yaml(path: str, line: int, column: int, problem: str, *, number_too_long: bool = False) -> Finding:
    """The YAML parser refused the file at (line, column); a number too long to read is the
    configuration's limit, not a YAML error."""
    what = "invalid configuration: " if number_too_long else f"{path} is not valid YAML: "
    return make_finding(CODE, path, Span(line, column, line, column), what + problem)


def invalid(path: str, node, message: str) -> Finding:
    """A value the configuration's schema refuses, at its YAML node."""
    return _at(path, node, f"invalid configuration: {message}")


# The severities a rule may be given under `rules:`.
SEVERITY_WORDS = ("failure", "warning", "notice", "off")
YAML11_BOOLEANS = {"yes": True, "no": False, "on": True, "off": False, "y": True, "n": False}


def schema_error(path: str, node, message: str, err_path: str | None, shown: str | None) -> Finding:
    """msgspec's `message` for the value at `err_path` (None when it names no place), found at
    `node` and shown as `shown` (the rule as the file names it), with what to write instead."""
    if err_path is not None:
        detail = message.rsplit(" - at `", 1)[0]
        if err_path.startswith("$.rules.") and detail.startswith(("Invalid enum value", "Expected `str`")):
            detail += f": a rule's severity is one of {', '.join(SEVERITY_WORDS)}"
        detail += _boolean_hint(node, detail)
        message = f"{detail} (at {shown})"
    elif message.startswith("Expected `object`"):
        message = f"{message}: the configuration must be a mapping"
    return invalid(path, node, message)


def _boolean_hint(node, detail: str) -> str:
    """Why a `yes`, `no`, `on` or `off` was refused, for a person used to YAML 1.1, where they are
    booleans: this file reads YAML 1.2 (checks/config/yamlload.py), where only true and false are."""
    import yaml

    written = node.value if isinstance(node, yaml.ScalarNode) and not node.style else None  # plain, not quoted
    if not isinstance(written, str) or written.lower() not in YAML11_BOOLEANS:
        return ""
    if "`bool" in detail:
        return (f"; `{written}` is a string here, not a boolean (this file is YAML 1.2: only true and false "
                f"are booleans): write {str(YAML11_BOOLEANS[written.lower()]).lower()}")
    if "Invalid enum value" in detail:
        if written.lower() in SEVERITY_WORDS:
            return f"; write `{written.lower()}` in lower case"
        return (f"; `{written}` is not a boolean in this file (YAML 1.2): write `off` (or false) to turn the rule "
                "off, a severity to turn it on")
    return ""
