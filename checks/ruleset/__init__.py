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

The rules applied while files are read live in the subpackage reading/ (checks/ruleset/reading/),
below their readers; the others here, above what they check. checks/rules.py registers every module
of both (`RULES`); this package itself names them (`rule_names`) without loading them, for the
readers that must know every rule's code and name (the configuration's `rules:`, suppression
comments) and sit below the rules; docs/rules.md, SARIF rule help and
`ci-registrar rule CODE` are generated from the registry (checks/rule_docs.py). Adding a rule:
add its module here, its fixtures under tests/checks/ruleset/<CODE>/ (tests/checks/ruleset/test_rule_fixtures.py
runs them), then `make docs`. Helpers two rules share live in named modules beside them
(facts.py here; checks/calibration/durations_index.py for stored durations), never in a rule's.
"""

from __future__ import annotations

import functools
import pkgutil
import re
from pathlib import Path

REQUIRED_SECTIONS = ("Why", "Example", "How to fix")
_SECTION = re.compile(r"^## (.+?)\s*$", re.MULTILINE)
# a rule's own module; any other module of the package (a helper two rules share) is not a rule
RULE_MODULE = re.compile(r"^reg\d{3}_")


# Findings that say the result cannot be trusted (invalid configuration, an unreadable contract,
# an analysis limit): never taken out of a report by --select/--ignore, nor by a suppression.
UNSELECTABLE = ("REG900", "REG901", "REG902")


@functools.lru_cache(maxsize=1)
def rule_names() -> dict[str, str]:
    """code -> name of every rule, read from its module's file name, regNNN_<name>.py (REG010 is
    reg010_unknown_suite.py: unknown-suite; the registry refuses a module whose NAME differs), by
    code. Nothing is imported: the catalogue for the readers below the rules."""
    here = Path(__file__).parent
    found = [m.name for folder in (here, here / "reading") for m in pkgutil.iter_modules([str(folder)]) if RULE_MODULE.match(m.name)]
    return {short[:6].upper(): short[7:].replace("_", "-") for short in sorted(found)}


def doc_sections(docstring: str | None) -> tuple[tuple[str, str], ...]:
    """The `## Title` sections of a rule module's docstring, in order: ((title, markdown), ...)."""
    text = docstring or ""
    heads = list(_SECTION.finditer(text))
    out = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out.append((head.group(1), text[head.end() : end].strip()))
    return tuple(out)
