"""REG017 external-consumer-unread: what it checks is SUMMARY below; why, an example and the fix are here.

## Why
An external consumer (a workflow in another repository that runs this repository's suites) is
read from its own file, never typed by hand, so it cannot go stale. When that file cannot be read,
the check says so instead of guessing which suites run.

## Example
```yaml
consumers:
  - repository: sgl-project/sglang
    workflow: .github/workflows/nightly-test-amd-miles-rocm720.yml
```
checked locally without `--consumers-from`.

## How to fix
Locally, give `ci-registrar check` a copy of the workflow with `--consumers-from PATH` (for
example, download `nightly-test-amd-miles-rocm720.yml` from sgl-project/sglang and pass
`--consumers-from nightly-test-amd-miles-rocm720.yml`). For the App, make the repository readable
by its installation (a public repository, or install the App there too), or fix the `consumers:`
entry in `.github/ci-registrar.yml`. `REG017: off` under `rules:` silences it where the copy is
never available.
"""

from __future__ import annotations

from checks.findings import FindingMaker
from checks.model import Finding, Severity, Span

CODE = "REG017"
NAME = "external-consumer-unread"
SEVERITY = Severity.WARNING
SUMMARY = "A configured external consumer's workflow could not be read (not given to the CLI, not readable by the App, not UTF-8 or not YAML): the suites it runs are unknown, so the checks that need them (REG013, REG016) are skipped for this check."
FIXABLE = False
make_finding = FindingMaker(CODE, NAME, SEVERITY)


# Applied while reading: the external consumers' reader (checks/workflows/runs.py) calls these.
# The finding points to `anchor` (the configuration, else the suite inventory): the workflow
# itself is not in this repository.


def unread(anchor: str, label: str, why: str) -> Finding:
    """No copy of consumer `label` (`owner/repo:path`) was given, or it could not be read (`why`)."""
    how = ("the App reads it at that repository's default branch; locally, pass a copy with "
           "`ci-registrar check --consumers-from PATH`")
    return make_finding(CODE, anchor, Span.at_line(1),
                        f"external consumer {label} could not be read ({why}): the suites it runs are unknown, "
                        f"so the no-consumer (REG013) and nightly-selection (REG016) checks are skipped and its "
                        f"timeouts are not checked (REG030); {how}")


def not_yaml(anchor: str, label: str, line: int) -> Finding:
    """The copy given of consumer `label` is not valid YAML (at `line` of it)."""
    return make_finding(CODE, anchor, Span.at_line(1), f"external consumer {label} is not valid YAML (line {line}): its suites are not counted as consumers")
