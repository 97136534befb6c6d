"""The rule registry: every finding's stable code, name, default severity and what it means.

Each rule is a module of checks/ruleset/ (one module per rule: code, name, severity, summary,
whether it is fixable, its docs, its messages and its check); they all register here, in RULES, which the
engine, the configuration (`rules:` overrides), docs/rules.md, SARIF rule help
and `ci-registrar rule CODE` read. `rule(code, name, severity, summary)` still registers a rule
directly; such a rule's "How to fix" is then ADVICE[code] in checks/rule_docs.py.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType

from checks import ruleset
from checks.findings import FindingMaker
from checks.model import Finding, Fix, Severity, Span
from checks.ruleset import REQUIRED_SECTIONS, RULE_MODULE, doc_sections, reading


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str  # what it checks
    fixable: bool = False  # its findings carry a one-click fix
    docs: tuple[tuple[str, str], ...] = ()  # ((section title, Markdown), ...): Why, Example, How to fix
    module: str | None = None  # the checks/ruleset module that declares and checks it

    def section(self, title: str) -> str | None:
        return next((text for t, text in self.docs if t == title), None)


RULES: dict[str, Rule] = {}


def rule(code: str, name: str, severity: Severity, summary: str, *, fixable: bool = False,
         docs: tuple[tuple[str, str], ...] = (), module: str | None = None) -> Rule:
    if code in RULES:
        raise ValueError(f"rule {code} registered twice")
    if any(r.name == name for r in RULES.values()):
        raise ValueError(f"rule name {name} registered twice")
    RULES[code] = Rule(code, name, severity, summary, fixable, docs, module)
    ordered = sorted(RULES.items())  # by code, whatever the order of registration
    RULES.clear()
    RULES.update(ordered)
    return RULES[code]


def register_module(module) -> Rule:
    """Register the rule a checks/ruleset module declares (see checks/ruleset/__init__.py)."""
    docs = doc_sections(module.__doc__)
    missing = [s for s in REQUIRED_SECTIONS if not any(t == s and text for t, text in docs)]
    if missing:
        raise ValueError(f"{module.__name__}: the docstring lacks the section(s) {', '.join(missing)}")
    short = module.__name__.rsplit(".", 1)[-1]
    if not short.startswith(module.CODE.lower() + "_"):
        raise ValueError(f"{module.__name__}: a rule module is named after its code ({module.CODE.lower()}_...)")
    if short != f"{module.CODE.lower()}_{module.NAME.replace('-', '_')}":
        # checks/ruleset.rule_names reads the rules' names from their file names
        raise ValueError(f"{module.__name__}: a rule module is named after its code and name "
                         f"({module.CODE.lower()}_{module.NAME.replace('-', '_')})")
    return rule(module.CODE, module.NAME, Severity(module.SEVERITY), module.SUMMARY, fixable=bool(module.FIXABLE),
                docs=docs, module=module.__name__)


def rule_modules() -> list[ModuleType]:
    """Every rule module, of checks/ruleset and checks/ruleset/reading, by module name (regNNN_...
    sorts by code): the registry loads them by name, so it sits above every rule."""
    found = sorted((m.name, f"{package.__name__}.{m.name}") for package in (ruleset, reading)
                   for m in pkgutil.iter_modules(package.__path__) if RULE_MODULE.match(m.name))
    return [importlib.import_module(name) for _, name in found]


F, W, N = Severity.FAILURE, Severity.WARNING, Severity.NOTICE

# Every rule is a module of checks/ruleset (code, name, severity, summary, fixable, docs).
for _module in rule_modules():
    register_module(_module)
del _module


def make_finding(
    code: str,
    file: str,
    span: Span,
    message: str,
    *,
    severity: Severity | None = None,
    suggestion: str | None = None,
    fix: Fix | None = None,
) -> Finding:
    """A finding of any registered rule, by its code (a rule's own module makes its findings with
    its own checks/findings.FindingMaker, without importing this registry)."""
    r = RULES[code]
    return FindingMaker(code, r.name, r.severity)(code, file, span, message, severity=severity, suggestion=suggestion, fix=fix)


def resolve_rules(selectors) -> tuple[set[str], list[str]]:
    """The rule codes a list of selectors names, and the selectors that name none.

    A selector is a code (REG010), a code prefix (REG01: REG010-REG019, ruff's convention) or a rule
    name (unknown-suite), case-insensitive; `ALL` is every rule.
    """
    codes: set[str] = set()
    unknown: list[str] = []
    names = {r.name.lower(): code for code, r in RULES.items()}
    for raw in selectors:
        selector = raw.strip()
        if not selector:
            continue
        upper = selector.upper()
        if upper == "ALL":
            codes.update(RULES)
        elif selector.lower() in names:
            codes.add(names[selector.lower()])
        elif upper.startswith("REG") and any(code.startswith(upper) for code in RULES):
            codes.update(code for code in RULES if code.startswith(upper))
        else:
            unknown.append(selector)
    return codes, unknown
