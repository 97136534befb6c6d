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

## How to fix
Fix `.github/ci-registrar.yml` at the reported line (`ci-registrar config validate` checks it
locally; docs/configuration.md lists every key). The check does not fall back to defaults.
"""

from checks.model import Severity

CODE = "REG900"
NAME = "invalid-configuration"
SEVERITY = Severity.FAILURE
SUMMARY = "`.github/ci-registrar.yml` is invalid: the check says what is wrong and where; defaults are not silently used instead."
FIXABLE = False
IMPLEMENTED_IN = "checks/config.py"
