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

from checks.model import Severity

CODE = "REG017"
NAME = "external-consumer-unread"
SEVERITY = Severity.WARNING
SUMMARY = "A configured external consumer's workflow could not be read (not given to the CLI, not readable by the App, not UTF-8 or not YAML): the suites it runs are unknown, so the checks that need them (REG013, REG016) are skipped for this check."
FIXABLE = False
IMPLEMENTED_IN = "checks/target/workflows.py"
