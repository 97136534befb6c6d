"""One file's scan as JSON-able facts, and the scan-cache hook of the engine.

A FileScan (checks/registrations.py) depends only on the file's bytes, the contract the file is
read against, whether the file lies in an implicit-CPU root, and whether it is read whole
(`exact`). So it can be kept by content: the command line keeps it on disk by content hash
(checks/scan_cache.py, `DiskScanCache`), the App by git blob SHA. Both use this module, the one
place that turns a FileScan into plain data and back.

Facts
    `to_facts(scan) -> dict` gives JSON-able data (no path: the same bytes at two paths share one
    entry); `from_facts(facts, path) -> FileScan` rebuilds the scan for `path`. Literal values
    that JSON cannot hold as they are (tuples, bytes, complex, Ellipsis, non-finite floats) are
    tagged (`{"$tuple": [...]}` ...), so a rebuilt scan compares equal to the original. `lines`
    (the file's text, which fixes need) are not facts: a rebuilt scan has `lines == []` and the
    engine re-reads the file when a fix needs it. `to_facts` raises `UnfitForFacts` for a scan it
    cannot represent; the caller then simply does not cache that scan.

Keys
    `scan_key(blob_sha, fingerprint, implicit_cpu, exact) -> str` where `blob_sha` is the git
    blob SHA of the bytes (`git_blob_sha(data)`: sha1 of b"blob <len>\\0" + data, what GitHub's
    tree API and `git ls-tree` give without reading the blob) and `fingerprint` is
    `contract_fingerprint(contract)`: a digest of everything in the contract that a scan may read
    (signatures, labels, and any field added later unless listed in `_NOT_SCAN_INPUTS`), the
    register-function table and `engine_fingerprint()` (ENGINE_FACTS_VERSION and the source of
    the modules that decide scan_file's output). Bump ENGINE_FACTS_VERSION when
    the facts format changes; an edited scanner changes the fingerprint by itself.

The hook
    `check_tree(..., scan_cache=cache)` (checks/engine.py `_scan`) accepts any object with

        cache.get_many(keys: list[str]) -> dict[str, dict]   # key -> facts, for the keys it has
        cache.put_many(entries: dict[str, dict]) -> None      # key -> facts, new entries

    The engine computes the keys (from `tree.blob_sha(path)` when the tree offers it, so a hit
    need not even read the file; else from the bytes it read), asks `get_many` once per batch,
    scans the misses and hands them to `put_many`. A cache may drop, evict or refuse anything;
    a facts dict that `from_facts` cannot read (corrupt, another version) is treated as a miss.
    Scans that hit an analysis limit (a REG902 finding) are never put: the finding lives in the
    check's budget, not in the scan.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import math
import re

from checks.model import Argument, Backend, Finding, Registration, Severity, Span
from checks.registrations import FileScan
from checks.tree import git_blob_sha  # noqa: F401  (part of this module's key API)

# Bump when scan_file's output or the facts layout changes.
ENGINE_FACTS_VERSION = 2  # 2: a file's suppression comments

# Contract fields a scan never reads (the inventory feeds the suite rules, not scan_file; the
# findings and the did-you-mean memo are the contract's own). Everything else is fingerprinted,
# so a field added to Contract later invalidates cached scans until it is listed here.
# Discovery and the runner's facts say which files are scanned and how findings are judged after
# the scan, never what a scan of given bytes holds; they also hold predicates (functions) whose
# repr changes with every process, which would make every key new.
_NOT_SCAN_INPUTS = frozenset({"suites", "partial_backends", "inventory_known", "findings", "near", "facts", "discovery",
                              "implicit_cpu_roots", "unregistered_severity", "suite_checked_backends",
                              "unknown_suite_when_disabled"})
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class UnfitForFacts(ValueError):
    """The scan holds something the facts format does not represent: do not cache it."""


# -- keys ---------------------------------------------------------------------------------------


def _canonical(value):
    """A deterministic JSON-able form of contract data (dataclasses, enums, sets, dicts, tuples)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare}
    if isinstance(value, enum.Enum):
        return _canonical(value.value)
    if isinstance(value, dict):
        return sorted([json.dumps(_canonical(k), sort_keys=True), _canonical(v)] for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return sorted(json.dumps(_canonical(v), sort_keys=True) for v in value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return repr(value)
    return _ADDRESS.sub("", repr(value))  # an object's address differs in every process


# The modules whose code decides what scan_file returns: their source is part of every key, so an
# engine change (an upgrade, or an edit in a development checkout) never reads facts of another.
_ENGINE_MODULES = ("checks.registrations", "checks.model", "checks.source", "checks.contract", "checks.rules",
                   "checks.suites", "checks.limits", "checks.scan_facts")


@functools.lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """A digest of ENGINE_FACTS_VERSION and the scanner's own source (not the package version:
    reading installed metadata costs more than a warm check)."""
    import importlib.util

    h = hashlib.sha256(f"{ENGINE_FACTS_VERSION}".encode())
    for name in _ENGINE_MODULES:
        spec = importlib.util.find_spec(name)
        origin = getattr(spec, "origin", None) if spec else None
        try:
            with open(origin, "rb") as handle:
                h.update(handle.read())
        except (OSError, TypeError):
            h.update(name.encode())
    return h.hexdigest()


def contract_fingerprint(contract) -> str:
    """A hex digest of what a scan reads from `contract`, and of the engine that scans."""
    from checks import registrations

    parts = {"engine": engine_fingerprint()}
    if dataclasses.is_dataclass(contract):
        for f in dataclasses.fields(contract):
            if f.name not in _NOT_SCAN_INPUTS:
                parts[f.name] = _canonical(getattr(contract, f.name))
    else:
        parts["contract"] = repr(contract)
    parts["register_functions"] = _canonical(getattr(registrations, "REGISTER_FUNCTIONS", {}))
    from checks.rules import RULES

    parts["rules"] = [[code, r.name, r.severity.value] for code, r in RULES.items()]  # finding titles, severities
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def scan_key(blob_sha: str, fingerprint: str, implicit_cpu: bool, exact: bool) -> str:
    """The cache key of one scan: hex, safe as a file name."""
    raw = f"{ENGINE_FACTS_VERSION}:{blob_sha}:{fingerprint}:{int(bool(implicit_cpu))}:{int(bool(exact))}"
    return hashlib.sha256(raw.encode()).hexdigest()


# -- values -------------------------------------------------------------------------------------


def _encode(value):
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": repr(value)}  # inf, -inf, nan
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v) for v in value]}
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, complex):
        return {"$complex": [_encode(value.real), _encode(value.imag)]}
    if value is Ellipsis:
        return {"$ellipsis": True}
    raise UnfitForFacts(f"a literal of type {type(value).__name__}")


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if "$tuple" in value:
            return tuple(_decode(v) for v in value["$tuple"])
        if "$float" in value:
            return float(value["$float"])
        if "$bytes" in value:
            return bytes.fromhex(value["$bytes"])
        if "$complex" in value:
            re_, im = value["$complex"]
            return complex(_decode(re_), _decode(im))
        if "$ellipsis" in value:
            return Ellipsis
        raise ValueError(f"unknown tagged value {sorted(value)}")
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    raise ValueError(f"unexpected value {value!r}")


def _span(s: Span) -> list[int]:
    return [s.line, s.column, s.end_line, s.end_column]


def _unspan(v) -> Span:
    line, column, end_line, end_column = (int(x) for x in v)
    return Span(line, column, end_line, end_column)


def _backend(value: str):
    return Backend(value)


# -- scans --------------------------------------------------------------------------------------


def to_facts(scan: FileScan) -> dict:
    """The JSON-able facts of `scan` (without its path and lines). Raises UnfitForFacts."""
    regs = []
    for reg in scan.registrations:
        if reg.file != scan.path or reg.change is not None or reg.base is not None:
            raise UnfitForFacts("a registration that is not the scan's own, or already classified")
        regs.append({
            "function": reg.function,
            "backend": reg.backend.value,
            "span": _span(reg.span),
            "statement_lines": list(reg.statement_lines),
            "implicit": reg.implicit,
            "arguments": [
                {"name": a.name, "value": _encode(a.value), "literal": a.is_literal, "span": _span(a.span), "source": a.source}
                for a in reg.arguments.values()
            ],
        })
    findings = []
    for f in scan.findings:
        if f.file != scan.path or f.fix is not None:
            raise UnfitForFacts("a finding about another file, or with a fix attached")
        findings.append({
            "rule": f.rule, "severity": f.severity.value, "span": _span(f.span), "message": f.message,
            "suggestion": f.suggestion, "title": f.title,
        })
    num_gpus = None
    if scan.num_gpus_constant is not None:
        n, span = scan.num_gpus_constant
        num_gpus = [n, _span(span)]
    return {
        "v": ENGINE_FACTS_VERSION,
        "parsed": scan.parsed,
        "unreadable": scan.unreadable,
        "invisible": scan.invisible,
        "num_gpus": num_gpus,
        "registrations": regs,
        "findings": findings,
        "suppressions": [list(m) for m in scan.suppressions],
    }


def from_facts(facts: dict, path: str) -> FileScan:
    """The FileScan of `path` from its facts (`lines` left empty). Raises ValueError (or a
    KeyError/TypeError) on facts it cannot read: the caller treats that as a cache miss."""
    if not isinstance(facts, dict) or facts.get("v") != ENGINE_FACTS_VERSION:
        raise ValueError("facts of another version")
    scan = FileScan(path)
    scan.parsed = bool(facts["parsed"])
    scan.unreadable = bool(facts["unreadable"])
    scan.invisible = int(facts["invisible"])
    scan.suppressions = [[int(m[0]), int(m[1]), str(m[2]), str(m[3])] for m in facts["suppressions"]]
    if facts["num_gpus"] is not None:
        n, span = facts["num_gpus"]
        scan.num_gpus_constant = (int(n), _unspan(span))
    for r in facts["registrations"]:
        first, last = r["statement_lines"]
        reg = Registration(
            file=path, function=str(r["function"]), backend=_backend(r["backend"]), span=_unspan(r["span"]),
            statement_lines=(int(first), int(last)), implicit=bool(r["implicit"]),
        )
        for a in r["arguments"]:
            reg.arguments[str(a["name"])] = Argument(str(a["name"]), _decode(a["value"]), bool(a["literal"]), _unspan(a["span"]), str(a["source"]))
        scan.registrations.append(reg)
    for f in facts["findings"]:
        suggestion = f["suggestion"]
        scan.findings.append(Finding(
            rule=str(f["rule"]), severity=Severity(f["severity"]), file=path, span=_unspan(f["span"]),
            message=str(f["message"]), suggestion=None if suggestion is None else str(suggestion), title=str(f["title"]),
        ))
    return scan


def dumps(facts: dict) -> str:
    """Facts as compact JSON text (ASCII; non-finite floats are tagged, never bare NaN/Infinity)."""
    return json.dumps(facts, separators=(",", ":"), allow_nan=False)


def loads(text: str | bytes) -> dict:
    return json.loads(text)
