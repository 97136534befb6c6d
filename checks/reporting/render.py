"""Output formats for a report: text for people, JSON (docs/command-line.md), GitHub workflow commands, SARIF.

The analysis never knows how it will be shown; each renderer reads the same Report.
"""

from __future__ import annotations

import json
import re
from itertools import groupby

from checks.model import Finding, Registration, Report, Severity, code
from checks.reporting import evidence
from checks.rules import RULES
from checks.wording import REFUSED, amount, has_invisible, plural, usable, visible

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
    if report.evidence is not None:  # a diff check with stored runs: each newly enabled ROCm registration's
        doc["evidence"] = [e.as_json() for e in report.evidence]
    if report.suppressed:  # taken out by `# ci-registrar: ignore[...]`: what, and the comment's reason
        doc["suppressed"] = [{**finding_json(f), "suppression": s.as_json()} for f, s in report.suppressed]
    return json.dumps(doc, indent=2)


def summary_line(report: Report) -> str:
    """The counts line of every format. Its registrations are the JSON's `registrations`, one for
    one: the runner's implicit CPU registrations included (and said how many), and in a diff, the
    removed ones too."""
    counts = [f"{report.count(s)} {s.value}{'s' if report.count(s) != 1 else ''}" for s in Severity]
    regs = len(report.registrations)
    implicit = sum(1 for r in report.registrations if r.implicit)
    if report.suppressed:
        counts.append(f"{len(report.suppressed)} suppressed")
    return (f"{plural(report.files_checked, 'test file')}, {plural(regs, 'registration')}"
            + (f" ({implicit} implicit)" if implicit else "") + ": " + ", ".join(counts))


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


def to_brief_text(report: Report, verbose: bool = False, counts: bool = True) -> str:
    """What a person reads at a commit (the pre-commit hook): failures first, in full; warnings and
    notices summarised in one line by rule, or listed after the failures with `verbose`; then the
    counts line, unless `counts` is false (a clean batch of the hook's files, bot/commands/check.py)."""
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
    if counts:
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


def to_summary(report: Report) -> str:
    """The check run's summary Markdown, exactly as the App posts it (check_run_summary below)."""
    return check_run_summary(report)


RENDERERS = {"text": to_text, "json": to_json, "github": to_github, "sarif": to_sarif, "summary": to_summary}


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
    text = visible(" ".join(str(text).split("\n")).replace("\r", " "))  # before the zero-width spaces below
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


_VERDICT = {"failure": "Failure", "neutral": "Not fully checked", "success": "Passed"}


def _hours(value: float) -> str:
    return amount(value, ".2f")


def _run_cost(gpu_hours: float) -> str:
    if not usable(gpu_hours):
        return f"has no usable charge: its GPU-hours are {REFUSED}"
    return f"is charged {_hours(gpu_hours)} GPU-hours against the budget"


def _seconds(value: float | None) -> str:
    return "?" if value is None else amount(value, "g", "s")


def _change_counts(report: Report) -> str:
    from checks.model import Change

    counts = {c: sum(1 for r in report.registrations if r.change is c) for c in Change}
    other = len(report.registrations) - sum(counts.values())  # the runner's implicit ones, not compared
    return (f"{counts[Change.ADDED]} added, {counts[Change.CHANGED]} changed, {counts[Change.REMOVED]} removed, "
            f"{counts[Change.UNCHANGED]} unchanged" + (f", {other} implicit" if other else ""))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _registration_only(summary) -> str:
    parts = []
    if summary.test_files:
        parts.append(f"{_plural(summary.test_files, 'test file')} whose code is the same AST once registrations and their imports are set aside")
    if summary.inventories:
        parts.append(_plural(summary.inventories, "suite inventory or register module") if summary.inventories != 1 else "1 suite inventory or register module")
    if summary.workflows:
        parts.append(_plural(summary.workflows, "workflow"))
    if summary.docs:
        parts.append(_plural(summary.docs, "documentation file"))
    if summary.registration_only:
        return "**Registration-only: yes.** Changed: " + ("; ".join(parts) or "nothing CI reads") + "."
    why = "; ".join(md_text(r) for r in summary.reasons)
    more = f" ({plural(summary.other, 'path')} in all)" if summary.other > len(summary.reasons) else ""
    return f"**Registration-only: no.** {why}{more}." + (f" Also changed: {'; '.join(parts)}." if parts else "")


def _suite_table(summary) -> list[str]:
    if not summary.rows:
        return []
    lines = ["#### Suites this pull request touches", "",
             "| suite | backend | files +/- (before → after) | est_time of enabled files, before → after | consumer | cadence "
             "| shards: longest / timeout (before → after) | GPU-hours per run before → after | stored runs |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    suggestions, refusals = [], []
    for row in summary.rows:
        files = f"+{len(row.files_added)} / −{len(row.files_removed)} ({row.files_before} → {row.files_after})"
        est = f"{_seconds(row.est_before)} → {_seconds(row.est_after)}"
        stored = f"{plural(row.stored_runs, 'run')} over {row.files_measured} of {plural(row.files_after, 'file')}"
        lead = f"| {_cell(md_code(row.suite))} | {row.backend} | {files} | {est} "
        if not row.consumers and row.unknown:
            unread = ", ".join(f"{_cell(md_code(what))} ({_cell(md_text(why))})" for what, why in row.unknown)
            lines.append(lead + f"| **unknown**: no job read here runs suite {_cell(md_code(row.suite))} for "
                                f"{row.backend}; not read: {unread} | unknown | unknown | unknown | {stored} |")
        elif not row.consumers:
            lines.append(lead + f"| **none**: no workflow in this repository or its configured consumers runs suite "
                                f"{_cell(md_code(row.suite))} for {row.backend} | | | | {stored} |")
        for use in row.consumers:
            timeout = f"{use.timeout_minutes} min" + ("" if use.timeout_stated else " (GitHub's default)")
            if use.shards < 1:
                shards = f"decided at run time / {timeout}"
            else:
                fits = "" if use.longest_after is None or use.longest_after <= use.timeout_minutes * 60 else " **over**"
                shards = (f"{use.shards}: {_seconds(use.longest_before)} → {_seconds(use.longest_after)}{fits} / {timeout}")
            if use.gpus is None:
                pool = (f"its pool {_cell(md_code(use.pool))} does not say how many GPUs" if use.pool
                        else "its pool is decided at run time")
                hours = f"unknown ({pool})"
            else:
                hours = f"{_hours(use.gpu_hours_before)} → {_hours(use.gpu_hours_after)} ({plural(use.gpus, 'GPU')})"
            lines.append(lead + f"| {_cell(md_code(use.where))} | {use.cadence} | {shards} | {hours} | {stored} |")
        if row.refused and row.to_measure:
            refusals.append(f"- {md_code(RUN_ROCM + ' ' + row.suite)} is not offered: {md_message(row.refused)}")
        if row.suggest_run and row.run_gpu_hours is not None:
            n = len(suggestions) + 1
            button = f"the **{md_text(_action_label(n))}** button or " if n <= MAX_ACTIONS else ""
            measure = (f"{_plural(len(row.to_measure), 'file')} not verified on its hardware" if row.unverified
                       else f"{_plural(len(row.unmeasured_added), 'new file')} with no stored run")
            suggestions.append(f"{n}. {md_code(RUN_ROCM + ' ' + row.suite)}: {measure}; one run as `/run-rocm` plans it "
                               f"{_run_cost(row.run_gpu_hours)} (each file's timeout bound × the "
                               f"runner's GPUs, as `run-plan` shows it). A maintainer starts it with {button}this comment; "
                               f"it goes through the usual approval and budget.")
    lines.append("")
    lines.append("GPU-hours per run are est_time of what each job selects (its cadence and labels) × the GPUs of "
                 "its runner pool; shards are the runner's own longest-processing-time split by est_time.")
    if suggestions:
        lines += ["", "Measure the new ROCm registrations before they run every night:", *suggestions]
    if refusals:
        lines += ["", *refusals]
    return lines + [""]


# -- the summary's buttons: GitHub's check run `actions` (at most 3; label <= 20, description <= 40,
# identifier <= 20 characters). A click sends check_run.requested_action with the identifier;
# bot/worker/handlers/summary_actions.py finds the suite in this run's own summary by its number.
RUN_ROCM = "/run-rocm"
MAX_ACTIONS = 3
ACTION_PREFIX = "run-rocm-"


def _action_label(n: int) -> str:
    return f"Run ROCm suite {n}"


def suggested_runs(report: Report) -> list[str]:
    """The suites the summary suggests measuring with `/run-rocm`, in its order (1-based there)."""
    summary = getattr(report, "pr_summary", None)
    return [row.suite for row in summary.rows if row.suggest_run and row.run_gpu_hours is not None] if summary is not None else []


def check_run_actions(report: Report) -> list[dict]:
    out = []
    for n, suite in enumerate(suggested_runs(report)[:MAX_ACTIONS], 1):
        description = f"{RUN_ROCM} {suite}"
        if len(description) > 40:
            description = description[:39] + "…"
        out.append({"label": _action_label(n), "description": description, "identifier": f"{ACTION_PREFIX}{n}"})
    return out


_SUGGESTION = re.compile(r"^(\d+)\. (`+) ?" + re.escape(RUN_ROCM) + r" (.+?) ?\2: ", re.M)


def suggestion_in_summary(summary: str, identifier: str) -> str | None:
    """The suite the button `identifier` stands for, read back from the summary it was posted with."""
    if not identifier.startswith(ACTION_PREFIX) or not identifier[len(ACTION_PREFIX):].isdigit():
        return None
    n = int(identifier[len(ACTION_PREFIX):])
    for m in _SUGGESTION.finditer(summary or ""):
        if int(m.group(1)) == n:
            return m.group(3)
    return None


def _finding_rule(f: Finding) -> str:
    from checks.rule_docs import help_uri

    return f"[{f.rule}]({help_uri(f.rule)})"


def check_run_summary(report: Report) -> str:
    """The check run's summary Markdown: the App posts it, `ci-registrar check --format summary`
    prints it. Verdict first, then (in a diff) whether the PR only changes registrations and what
    each suite it touches gains, costs and rests on, then the findings, failures first."""
    conclusion = check_run_conclusion(report)
    lines = [f"**{_VERDICT[conclusion]}: {md_text(check_run_title(report))}**", ""]
    summary = getattr(report, "pr_summary", None)
    if summary is not None:
        lines += [_registration_only(summary) + f" Registrations: {_change_counts(report)}.", ""]
    lines += [evidence.header(report.evidence), ""] if evidence.header(report.evidence) else []
    lines += [f"{summary_line(report)}", ""]
    skipped = limited_files(report)
    if skipped:
        shown = ", ".join(md_code(file) for file in skipped[:20]) + (f" and {len(skipped) - 20} more" if len(skipped) > 20 else "")
        lines += [f"Not checked past an analysis limit ({LIMIT_RULE}), so this check does not vouch for their "
                  f"registrations: {shown}.", ""]
    if summary is not None:
        lines += _suite_table(summary)
    lines += evidence.section(report, suggested_runs(report), md_code, _cell, _hours)
    if report.findings:
        lines += ["#### Findings, failures first", "", "| rule | severity | where | finding |", "| --- | --- | --- | --- |"]
        for f in sorted(report.findings, key=lambda f: (f.severity.rank, f.sort_key())):
            lines.append(f"| {_finding_rule(f)} | {f.severity.value} | {_cell(md_code(f'{f.file}:{f.span.line}'))} | {_cell(md_message(f.message))} |")
        lines.append("")
    shown = [r for r in report.registrations if not r.implicit]
    if shown:
        lines += ["<details><summary>Registrations</summary>", "", "| file | backend | suite | est_time | labels | change |", "| --- | --- | --- | --- | --- | --- |"]
        for r in shown:
            est = "" if r.est_time is None else amount(r.est_time)
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
            "message": visible(f.message)[:64_000],  # plain text on GitHub: names shown as they are
            "title": visible(f.title or f.rule)[:255],
        }
        if f.span.line == f.span.end_line:  # GitHub accepts columns on one-line annotations only
            a["start_column"] = f.span.column
            a["end_column"] = max(f.span.end_column, f.span.column)
        if f.fix is not None:
            a["raw_details"] = visible(f"Suggested change (lines {f.fix.start_line}-{f.fix.end_line}):\n{f.fix.text}")[:64_000]
        out.append(a)
    return out


def suggestion_comment(f: Finding) -> str | None:
    """A review-comment body with a GitHub ```suggestion``` block for a finding's fix."""
    if f.fix is None:
        return None
    if has_invisible(f.fix.text):
        # GitHub would apply the block as written, and show it reordered or with characters no one
        # sees: the change is shown escaped, to be made by hand, never offered as a suggestion.
        return (f"**{f.rule}** {md_message(f.message)}\n\nThe lines hold invisible or bidirectional characters "
                f"(shown as `<U+XXXX>`), so this is not offered as a suggestion; the change:\n\n"
                f"{md_fence(visible(f.fix.text))}\n")
    return f"**{f.rule}** {md_message(f.message)}\n\n{md_fence(f.fix.text, 'suggestion')}\n"
