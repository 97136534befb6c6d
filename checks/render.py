"""Output formats for a report: text for people, JSON (README.md), GitHub workflow commands, SARIF.

The analysis never knows how it will be shown; each renderer reads the same Report.
"""

from __future__ import annotations

import json
import re
from itertools import groupby

from checks.model import Finding, Registration, Report, Severity, code
from checks.rules import RULES
from checks.wording import plural

_TOOL_URI = "https://github.com/radixark/ci-registrar"


def registration_json(reg: Registration) -> dict:
    return {
        "file": reg.file,
        "line": reg.span.line,
        "backend": reg.backend.value,
        "suite": reg.suite,
        "est_time": reg.est_time,
        "labels": reg.labels if reg.value("labels") is not None else ([] if "labels" in reg.arguments else None),
        "nightly": reg.nightly,
        "disabled": reg.disabled,
        "change": reg.change.value if reg.change else None,
        "implicit": reg.implicit,  # the runner's own CPU registration of a file without a call
    }


def finding_json(f: Finding) -> dict:
    return {
        "rule": f.rule,
        "severity": f.severity.value,
        "file": f.file,
        "line": f.span.line,
        "column": f.span.column,
        "end_line": f.span.end_line,
        "end_column": f.span.end_column,
        "message": f.message,
        "suggestion": f.suggestion,
    }


def to_json(report: Report) -> str:
    doc = {
        "registrations": [registration_json(r) for r in report.registrations],
        "findings": [finding_json(f) for f in report.findings],
    }
    if report.suppressed:  # taken out by `# ci-registrar: ignore[...]`: what, and the comment's reason
        doc["suppressed"] = [{**finding_json(f), "suppression": s.as_json()} for f, s in report.suppressed]
    return json.dumps(doc, indent=2)


def summary_line(report: Report) -> str:
    counts = [f"{report.count(s)} {s.value}{'s' if report.count(s) != 1 else ''}" for s in Severity]
    regs = sum(1 for r in report.registrations if not r.implicit)
    if report.suppressed:
        counts.append(f"{len(report.suppressed)} suppressed")
    return f"{plural(report.files_checked, 'test file')}, {plural(regs, 'registration')}: " + ", ".join(counts)


def to_text(report: Report) -> str:
    out = []
    for file, group in groupby(report.findings, key=lambda f: f.file):
        out.append(file)
        for f in group:
            out.append(f"  {f.span.line}:{f.span.column}  {f.severity.value:<7}  {f.rule}  {f.message}")
            if f.fix is not None:
                out.append("      fix:")
                out.extend("        " + line for line in f.fix.text.split("\n"))
            elif f.suggestion is not None:
                out.append(f"      suggestion: {f.suggestion}")
        out.append("")
    out.append(summary_line(report))
    return "\n".join(out)


def to_brief_text(report: Report, verbose: bool = False) -> str:
    """What a person reads at a commit (the pre-commit hook): failures first, in full; warnings and
    notices summarised in one line by rule, or listed after the failures with `verbose`."""
    failures = [f for f in report.findings if f.severity is Severity.FAILURE]
    others = [f for f in report.findings if f.severity is not Severity.FAILURE]
    shown = failures + (sorted(others, key=lambda f: (f.severity is not Severity.WARNING, f.file, f.span.line))
                        if verbose else [])
    out = []
    for file, group in groupby(shown, key=lambda f: (f.severity is Severity.FAILURE, f.file)):
        out.append(file[1])
        for f in group:
            out.append(f"  {f.span.line}:{f.span.column}  {f.severity.value:<7}  {f.rule}  {f.message}")
            if f.fix is not None:
                out.append("      fix:")
                out.extend("        " + line for line in f.fix.text.split("\n"))
            elif f.suggestion is not None:
                out.append(f"      suggestion: {f.suggestion}")
        out.append("")
    if others and not verbose:
        by_rule: dict[str, int] = {}
        for f in others:
            by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
        warnings = report.count(Severity.WARNING)
        notices = report.count(Severity.NOTICE)
        what = " and ".join(p for p in (plural(warnings, "warning") if warnings else "",
                                         plural(notices, "notice") if notices else "") if p)
        out.append(f"{what} not shown ({', '.join(f'{rule} x{n}' for rule, n in sorted(by_rule.items()))}): "
                   "--verbose lists them")
    out.append(summary_line(report))
    return "\n".join(out)


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


_COMMAND = {Severity.FAILURE: "error", Severity.WARNING: "warning", Severity.NOTICE: "notice"}


def to_github(report: Report) -> str:
    """Workflow commands (`::error file=...,line=...,col=...::message`) that Actions shows inline."""
    out = []
    for f in report.findings:
        props = [f"file={_escape_property(f.file)}", f"line={f.span.line}", f"endLine={f.span.end_line}"]
        if f.span.line == f.span.end_line:
            props += [f"col={f.span.column}", f"endColumn={f.span.end_column}"]
        props.append(f"title={_escape_property(f.title or f.rule)}")
        out.append(f"::{_COMMAND[f.severity]} {','.join(props)}::{_escape_data(f.message)}")
    out.append(summary_line(report))
    return "\n".join(out)


_SARIF_LEVEL = {Severity.FAILURE: "error", Severity.WARNING: "warning", Severity.NOTICE: "note"}
FINGERPRINT_KEY = "ciRegistrar/v2"


def _sarif_identities(report: Report, findings: list[Finding] | None = None) -> list[str]:
    """A stable identity per finding, for code scanning's partialFingerprints.

    Built from the rule, the file and what the finding is about: the registration (its function
    and its ordinal among that function's calls in the file) and the argument, or for a finding on
    no registration, its ordinal among the same rule's findings in the file. Never the message
    (it carries totals and numbers that change) nor line numbers (they shift with every edit above).
    """
    calls: dict[str, list[tuple[tuple[int, int], str, Registration]]] = {}
    for reg in sorted(report.registrations, key=lambda r: (r.file, r.span.line, r.span.column)):
        if reg.implicit or reg.change is not None and reg.change.value == "removed":
            continue
        same = [c for c in calls.get(reg.file, []) if c[2].function == reg.function]
        calls.setdefault(reg.file, []).append((reg.statement_lines, f"{reg.function}#{len(same)}", reg))
    ordinal: dict[tuple[str, str], int] = {}
    seen: dict[str, int] = {}
    out = []
    for f in report.findings if findings is None else findings:
        about = None
        for (first, last), ident, reg in calls.get(f.file, []):
            if first <= f.span.line <= last:
                arg = next((name for name, a in reg.arguments.items() if a.span == f.span), "")
                about = f"{ident}:{arg}"
                break
        if about is None:
            n = ordinal.get((f.rule, f.file), 0)
            ordinal[(f.rule, f.file)] = n + 1
            about = f"#{n}"
        key = f"{f.rule}:{f.file}:{about}"
        n = seen.get(key, 0)  # two findings of one rule on one argument: still distinct
        seen[key] = n + 1
        out.append(key if n == 0 else f"{key}:{n}")
    return out


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ci-registrar")
    except PackageNotFoundError:  # pragma: no cover - a source tree without installed metadata
        return "0.0.0"


def to_sarif(report: Report, version: str | None = None, srcroot: str | None = None) -> str:
    """SARIF 2.1.0 for GitHub code scanning (github/codeql-action/upload-sarif).

    Locations are repository-relative under `%SRCROOT%`; `srcroot` (the checkout's file URI,
    ending in `/`) is recorded when the caller knows it, and left out otherwise.
    """
    import hashlib

    from checks.rule_docs import help_markdown, help_text, help_uri, short_description

    version = version or _package_version()
    rule_ids = sorted(RULES)
    index = {code: i for i, code in enumerate(rule_ids)}
    results = []
    shown = report.findings + [f for f, _s in report.suppressed]
    suppressions = {id(f): s for f, s in report.suppressed}
    for f, identity in zip(shown, _sarif_identities(report, shown)):
        result = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.file, "uriBaseId": "%SRCROOT%"},
                        "region": {
                            "startLine": f.span.line,
                            "startColumn": f.span.column,
                            "endLine": f.span.end_line,
                            "endColumn": max(f.span.end_column, f.span.column + 1) if f.span.line == f.span.end_line else f.span.end_column,
                        },
                    }
                }
            ],
            "partialFingerprints": {FINGERPRINT_KEY: hashlib.sha256(identity.encode()).hexdigest()[:32]},
        }
        if id(f) in suppressions:
            # An in-source suppression (SARIF 2.1.0 §3.35): code scanning shows the result as dismissed.
            result["suppressions"] = [{"kind": "inSource", "justification": suppressions[id(f)].reason}
                                      if suppressions[id(f)].reason else {"kind": "inSource"}]
        if f.fix is not None:
            result["fixes"] = [
                {
                    "description": {"text": f"apply the {f.rule} fix"},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": f.file, "uriBaseId": "%SRCROOT%"},
                            "replacements": [
                                {
                                    "deletedRegion": {"startLine": f.span.line, "startColumn": f.span.column, "endLine": f.span.end_line, "endColumn": f.span.end_column},
                                    "insertedContent": {"text": f.suggestion or ""},
                                }
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    srcroot_location: dict = {"description": {"text": "The root of the repository checkout."}}
    if srcroot:
        srcroot_location["uri"] = srcroot if srcroot.endswith("/") else srcroot + "/"
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "ci-registrar",
                        "version": version,
                        "semanticVersion": version,
                        "informationUri": _TOOL_URI,
                        "rules": [
                            {
                                "id": code,
                                "name": RULES[code].name,
                                "shortDescription": {"text": short_description(RULES[code])},
                                "fullDescription": {"text": RULES[code].summary},
                                "help": {"text": help_text(RULES[code]), "markdown": help_markdown(RULES[code])},
                                "helpUri": help_uri(code),
                                "defaultConfiguration": {"level": _SARIF_LEVEL[RULES[code].severity]},
                                "properties": {"tags": ["ci-registrations"]},
                            }
                            for code in rule_ids
                        ],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": srcroot_location},
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2)


RENDERERS = {"text": to_text, "json": to_json, "github": to_github, "sarif": to_sarif}


# -- Markdown posted to GitHub (check-run summaries, review comments) ------------------------------
# Everything a pull request controls (suite names, paths, labels, source text) reaches GitHub only
# as a code span or as escaped text: code spans are fenced longer than any backtick run inside
# them, and plain text has its Markdown punctuation backslash-escaped and a zero-width space after
# every `@`, `#` and `www`, and before every `://`, so it can produce no mention, reference or link.

_ZWSP = "\u200b"
_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()<>#+!|~&$=^-])")
_NEUTRALISE = re.compile(r"(@|#|://|(?i:www)\.)")
_TICKS = re.compile(r"`+")


def md_code(text: object) -> str:
    """A Markdown code span holding `text` exactly (checks.model.code)."""
    return code(text)


def md_text(text: object) -> str:
    """Plain text that renders as itself: no formatting, mention, reference, link, HTML or line break."""
    text = " ".join(str(text).split("\n")).replace("\r", " ")
    text = _MD_PUNCT.sub(r"\\\1", text)
    return _NEUTRALISE.sub(lambda m: _ZWSP + m.group(1) if m.group(1) == "://" else m.group(1) + _ZWSP, text)


def md_fence(text: str, info: str = "") -> str:
    """A fenced code block holding `text`: its fence is longer than any backtick run inside."""
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def md_message(message: str) -> str:
    """A finding's message as Markdown: its code spans (CommonMark: a run of n backticks up to the
    next run of exactly n) stay code, re-fenced from their content; everything else is md_text."""
    out: list[str] = []
    plain_start = 0
    pos = 0
    runs = list(_TICKS.finditer(message))
    i = 0
    while i < len(runs):
        opener = runs[i]
        if opener.start() < pos:
            i += 1
            continue
        closer = next((r for r in runs[i + 1 :] if len(r.group()) == len(opener.group())), None)
        if closer is None:
            i += 1
            continue  # an unmatched run is literal text (escaped below)
        content = message[opener.end() : closer.start()]
        if len(content) >= 2 and content[0] == " " and content[-1] == " " and content.strip():
            content = content[1:-1]
        out.append(md_text(message[plain_start : opener.start()]))
        out.append(md_code(content))
        plain_start = pos = closer.end()
        i = runs.index(closer) + 1
    out.append(md_text(message[plain_start:]))
    return "".join(out)


def _cell(markdown: str) -> str:
    """A GFM table cell: pipes escaped (inside code spans too, as GFM tables read them first)."""
    return markdown.replace("|", "\\|")


# -- GitHub check run ---------------------------------------------------------------------------
CHECK_RUN_NAME = "CI registrations"
ANNOTATIONS_PER_REQUEST = 50  # GitHub appends annotations per PATCH, at most 50 each
SUMMARY_LIMIT = 65_000  # GitHub's limit is 65,535 characters
_ANNOTATION_LEVEL = {Severity.FAILURE: "failure", Severity.WARNING: "warning", Severity.NOTICE: "notice"}


LIMIT_RULE = "REG902"  # analysis limit reached: what it names was not (fully) read


def limited_files(report: Report) -> list[str]:
    """Files the engine stopped reading at an analysis limit: their registrations are unchecked."""
    return sorted({f.file for f in report.findings if f.rule == LIMIT_RULE})


def check_run_conclusion(report: Report) -> str:
    """`failure` when a finding fails; `neutral` when nothing fails but a file went unread (a pass
    would vouch for registrations nobody checked); else `success`."""
    if report.failed:
        return "failure"
    return "neutral" if limited_files(report) else "success"


def check_run_title(report: Report) -> str:
    skipped = limited_files(report)
    unread = f"{plural(len(skipped), 'file')} skipped at an analysis limit ({LIMIT_RULE})" if skipped else ""
    if report.failed:
        title = f"{plural(report.count(Severity.FAILURE), 'registration problem')} would stop tests from running"
        return f"{title}; {unread}" if unread else title
    counts = f"{plural(report.count(Severity.WARNING), 'warning')}, {plural(report.count(Severity.NOTICE), 'notice')}"
    if unread:
        return f"Not fully checked: {unread}; {counts}"
    if report.findings:
        return f"Registrations valid; {counts}"
    return "Registrations valid"


def check_run_summary(report: Report) -> str:
    lines = [f"**{summary_line(report)}**", ""]
    skipped = limited_files(report)
    if skipped:
        shown = ", ".join(md_code(file) for file in skipped[:20]) + (f" and {len(skipped) - 20} more" if len(skipped) > 20 else "")
        lines += [f"Not checked past an analysis limit ({LIMIT_RULE}), so this check does not vouch for their "
                  f"registrations: {shown}.", ""]
    if report.findings:
        lines += ["| rule | severity | where | finding |", "| --- | --- | --- | --- |"]
        for f in report.findings:
            lines.append(f"| {f.rule} | {f.severity.value} | {_cell(md_code(f'{f.file}:{f.span.line}'))} | {_cell(md_message(f.message))} |")
        lines.append("")
    shown = [r for r in report.registrations if not r.implicit]
    if shown:
        lines += ["<details><summary>Registrations</summary>", "", "| file | backend | suite | est_time | labels | change |", "| --- | --- | --- | --- | --- | --- |"]
        for r in shown:
            est = "" if r.est_time is None else f"{r.est_time:g}"
            change = r.change.value if r.change else ""
            suite = md_code(r.suite)
            labels = ", ".join(md_code(label) for label in r.labels)
            lines.append(f"| {_cell(md_code(f'{r.file}:{r.span.line}'))} | {r.backend.value} | {_cell(suite)} | {est} | {_cell(labels)} | {change} |")
        lines += ["", "</details>"]
    text = "\n".join(lines)
    if len(text) > SUMMARY_LIMIT:
        text = text[: SUMMARY_LIMIT - 80].rsplit("\n", 1)[0] + "\n\n… (truncated: every finding is also an annotation)"
    return text


def check_run_annotations(report: Report) -> list[dict]:
    out = []
    for f in report.findings:
        a = {
            "path": f.file,
            "start_line": f.span.line,
            "end_line": f.span.end_line,
            "annotation_level": _ANNOTATION_LEVEL[f.severity],
            "message": f.message[:64_000],
            "title": (f.title or f.rule)[:255],
        }
        if f.span.line == f.span.end_line:  # GitHub accepts columns on one-line annotations only
            a["start_column"] = f.span.column
            a["end_column"] = max(f.span.end_column, f.span.column)
        if f.fix is not None:
            a["raw_details"] = f"Suggested change (lines {f.fix.start_line}-{f.fix.end_line}):\n{f.fix.text}"[:64_000]
        out.append(a)
    return out


def suggestion_comment(f: Finding) -> str | None:
    """A review-comment body with a GitHub ```suggestion``` block for a finding's fix."""
    if f.fix is None:
        return None
    return f"**{f.rule}** {md_message(f.message)}\n\n{md_fence(f.fix.text, 'suggestion')}\n"
