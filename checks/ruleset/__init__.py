"""The rules, one module per rule (ruff-style): checks/ruleset/regNNN_<name>.py.

A rule module holds everything about its rule (docs, messages, check), and nothing else:

    CODE            "REG010", the stable code findings carry
    NAME            "unknown-suite", the kebab-case name (`ci-registrar rule unknown-suite`)
    SEVERITY        the default Severity (`rules:` in .github/ci-registrar.yml overrides it)
    SUMMARY         what it checks, one paragraph (SARIF fullDescription; its first sentence is
                    the shortDescription)
    FIXABLE         True when its findings carry a one-click fix (a corrected argument)
    docstring       Markdown with the sections `## Why`, `## Example` and `## How to fix`
    the check       `check_registration(facts, reg)` (each explicit registration of a checked file)
                    or `check_tree(facts)` (once per check), which checks/engine.apply_rules calls
                    with a TreeFacts (checks/ruleset/facts.py); a rule applied while reading
                    (a file that does not parse, a rejected call, the configuration, the contract,
                    a limit) has functions its reader calls instead, as ruff's AST checker calls
                    its rules' functions

checks/rules.py registers every module found here (`RULES`); docs/rules.md, SARIF rule help and
`ci-registrar rule CODE` are generated from the registry (checks/rule_docs.py). Adding a rule:
add its module here, its fixtures under tests/checks/ruleset/<CODE>/ (tests/checks/ruleset/test_rule_fixtures.py
runs them), then `make docs`. Helpers two rules share live in named modules beside them
(facts.py here; checks/calibration/durations_index.py for stored durations), never in a rule's.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

REQUIRED_SECTIONS = ("Why", "Example", "How to fix")
_SECTION = re.compile(r"^## (.+?)\s*$", re.MULTILINE)
# a rule's own module; any other module of the package (a helper two rules share) is not a rule
_RULE_MODULE = re.compile(r"^reg\d{3}_")


def rule_modules() -> list[ModuleType]:
    """Every rule module of this package, by module name (regNNN_... sorts by code)."""
    return [importlib.import_module(f"{__name__}.{m.name}") for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
            if _RULE_MODULE.match(m.name)]


def doc_sections(docstring: str | None) -> tuple[tuple[str, str], ...]:
    """The `## Title` sections of a rule module's docstring, in order: ((title, markdown), ...)."""
    text = docstring or ""
    heads = list(_SECTION.finditer(text))
    out = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((head.group(1), text[head.end() : end].strip()))
    return tuple(out)
