"""One file's scan as JSON-able facts, and the scan-cache hook of the engine.

A FileScan (checks/scanning/registrations.py) depends only on the file's bytes, the contract the file is
read against, whether the file lies in an implicit-CPU root, and whether it is read whole
(`exact`). So it can be kept by content: the command line keeps it on disk by content hash
(checks/scanning/scan_cache.py, `DiskScanCache`), the App by git blob SHA. Both use this module, the one
place that turns a FileScan into plain data and back.

Facts
    `to_facts(scan) -> dict` gives JSON-able data with one entry per field of the model (FileScan,
    Registration, Argument, Finding: composed suites, implicit flags, spans, the `__main__` block,
    everything; `NOT_FACTS` names the few fields that are not facts of the bytes, and why), and no
    path (the same bytes at two paths share one entry); `from_facts(facts, path) -> FileScan` rebuilds the scan for `path`. Literal values
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
from checks.scanning.registrations import FileScan
from checks.scanning.tree import git_blob_sha  # noqa: F401  (part of this module's key API)

# Bump when scan_file's output or the facts layout changes.
ENGINE_FACTS_VERSION = 4  # 2: composed suites and the __main__ block are facts too; 3: suppression comments; 4: bare ones

# Contract fields a scan never reads (the inventory feeds the suite rules, not scan_file; the
# findings and the did-you-mean memo are the contract's own). Everything else is fingerprinted,
# so a field added to Contract later invalidates cached scans until it is listed here.
# Discovery and the runner's facts say which files are scanned and how findings are judged after
# the scan, never what a scan of given bytes holds; they also hold predicates (functions) whose
# repr changes with every process, which would make every key new.
_NOT_SCAN_INPUTS = frozenset({"suites", "partial_backends", "inventory_known", "findings", "near", "facts", "discovery",
                              "implicit_cpu_roots", "unregistered_severity", "suite_checked_backends",
                              "unknown_suite_when_disabled", "unknown_suite_warns", "unregistered_configured",
                              # what was read from where, for people: its line numbers move with
                              # every edit of the runner, which would make every indexed scan a miss
                              "notes"})
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
_ENGINE_MODULES = ("checks.scanning.registrations", "checks.model", "checks.source", "checks.target.contract", "checks.findings",
                   "checks.target.suites", "checks.limits", "checks.scanning.scan_facts", "checks.scanning.suppressions",
                   # the rules the scanner applies as it reads (their findings are facts of the scan)
                   "checks.ruleset.reading.reg001_unparsable_file", "checks.ruleset.reading.reg002_rejected_registration",
                   "checks.ruleset.reading.reg003_invisible_registration")


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
    from checks.scanning import registrations

    parts = {"engine": engine_fingerprint()}
    if dataclasses.is_dataclass(contract):
        for f in dataclasses.fields(contract):
            if f.name not in _NOT_SCAN_INPUTS:
                parts[f.name] = _canonical(getattr(contract, f.name))
    else:
        parts["contract"] = repr(contract)
    parts["register_functions"] = _canonical(getattr(registrations, "REGISTER_FUNCTIONS", {}))
    from checks.ruleset import rule_names

    # the rules' codes and names (finding titles); the scan's own rules' severities are in their
    # modules' source, which engine_fingerprint reads
    parts["rules"] = [[code, name] for code, name in rule_names().items()]
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


# -- scans ----------------------------------------------------------------------------------
#
# Every field of the scan's model is either written (a codec below) or named here with the reason
# it is not a fact of the bytes. `unpersisted_fields()` lists any field that is neither: while
# there is one, `to_facts` refuses every scan (UnfitForFacts), so a field added to the model is
# never silently dropped by a warm run; tests/checks/scanning/test_scan_cache.py fails on it.

NOT_FACTS = {
    FileScan: {
        "path": "the entry's, not the content's: the same bytes at two paths share one entry",
        "lines": "the file's text: fixes re-read the file",
    },
    Registration: {
        "file": "the scan's path",
        "change": "the diff's classification, made after the scan",
        "base": "the diff's classification, made after the scan",
    },
    Finding: {
        "file": "the scan's path",
        "fix": "formatted after the scan, from the file's text",
    },
    Argument: {},
}


def _identity(kind):
    """Written as it is; read back through `kind` (bool, int, str)."""
    return (lambda v: v), kind


_ARGUMENT = {
    "name": _identity(str),
    "value": (_encode, _decode),
    "is_literal": _identity(bool),
    "span": (_span, _unspan),
    "source": _identity(str),
}


def _encode_arguments(arguments: dict) -> list:
    return [_encode_record(a, _ARGUMENT) for a in arguments.values()]


def _decode_arguments(items) -> dict:
    out = {}
    for item in items:
        arg = Argument(**_decode_record(item, _ARGUMENT, {}))
        out[arg.name] = arg
    return out


def _optional(encode, decode):
    return (lambda v: None if v is None else encode(v)), (lambda v: None if v is None else decode(v))


_REGISTRATION = {
    "function": _identity(str),
    "backend": ((lambda b: b.value), _backend),
    "span": (_span, _unspan),
    "statement_lines": ((lambda t: [int(t[0]), int(t[1])]), (lambda v: (int(v[0]), int(v[1])))),
    "arguments": (_encode_arguments, _decode_arguments),
    "implicit": _identity(bool),
    "composed_suite": _optional(str, str),
}

_FINDING = {
    "rule": _identity(str),
    "severity": ((lambda s: s.value), Severity),
    "span": (_span, _unspan),
    "message": _identity(str),
    "suggestion": _optional(str, str),
    "title": _identity(str),
}


def _encode_num_gpus(value):
    n, span = value
    return [int(n), _span(span)]


def _decode_num_gpus(value):
    n, span = value
    return (int(n), _unspan(span))


_SCAN = {
    "parsed": _identity(bool),
    "unreadable": _identity(bool),
    "invisible": _identity(int),
    "num_gpus_constant": _optional(_encode_num_gpus, _decode_num_gpus),
    "has_main": _identity(bool),
    "suppressions": ((lambda ms: [[int(m[0]), int(m[1]), str(m[2]), str(m[3])] for m in ms]),
                     (lambda ms: [[int(m[0]), int(m[1]), str(m[2]), str(m[3])] for m in ms])),
    # registrations and findings: below, with the scan's path
}

CODECS = {FileScan: _SCAN, Registration: _REGISTRATION, Finding: _FINDING, Argument: _ARGUMENT}
_NESTED = {FileScan: ("registrations", "findings")}


def unpersisted_fields(codecs=None, not_facts=None) -> list[str]:
    """Fields of the scan's model that the facts neither write nor exclude with a reason."""
    codecs = CODECS if codecs is None else codecs
    not_facts = NOT_FACTS if not_facts is None else not_facts
    out = []
    for cls, codec in codecs.items():
        known = set(codec) | set(not_facts.get(cls, {})) | {f for c, fs in _NESTED.items() if c.__name__ == cls.__name__ for f in fs}
        out.extend(f"{cls.__name__}.{f.name}" for f in dataclasses.fields(cls) if f.name not in known)
    return out


_UNPERSISTED = unpersisted_fields()


def _encode_record(obj, codec) -> dict:
    return {name: encode(getattr(obj, name)) for name, (encode, _decode) in codec.items()}


def _decode_record(data: dict, codec, extra: dict) -> dict:
    return {**extra, **{name: decode(data[name]) for name, (_encode, decode) in codec.items()}}


def to_facts(scan: FileScan) -> dict:
    """The JSON-able facts of `scan` (without its path and lines). Raises UnfitForFacts."""
    if _UNPERSISTED:
        raise UnfitForFacts(f"the facts do not persist {', '.join(_UNPERSISTED)}")
    regs = []
    for reg in scan.registrations:
        if reg.file != scan.path or reg.change is not None or reg.base is not None:
            raise UnfitForFacts("a registration that is not the scan's own, or already classified")
        regs.append(_encode_record(reg, _REGISTRATION))
    findings = []
    for f in scan.findings:
        if f.file != scan.path or f.fix is not None:
            raise UnfitForFacts("a finding about another file, or with a fix attached")
        findings.append(_encode_record(f, _FINDING))
    return {"v": ENGINE_FACTS_VERSION, **_encode_record(scan, _SCAN), "registrations": regs, "findings": findings}


def from_facts(facts: dict, path: str) -> FileScan:
    """The FileScan of `path` from its facts (`lines` left empty). Raises ValueError (or a
    KeyError/TypeError) on facts it cannot read: the caller treats that as a cache miss."""
    if not isinstance(facts, dict) or facts.get("v") != ENGINE_FACTS_VERSION:
        raise ValueError("facts of another version")
    scan = FileScan(path, **_decode_record(facts, _SCAN, {}))
    scan.registrations = [Registration(**_decode_record(r, _REGISTRATION, {"file": path})) for r in facts["registrations"]]
    scan.findings = [Finding(**_decode_record(f, _FINDING, {"file": path})) for f in facts["findings"]]
    return scan


def dumps(facts: dict) -> str:
    """Facts as compact JSON text (ASCII; non-finite floats are tagged, never bare NaN/Infinity)."""
    return json.dumps(facts, separators=(",", ":"), allow_nan=False)


def decode(text: str | bytes) -> dict | None:
    """Stored facts (their JSON text, as the App's registration index keeps them) as the engine
    reads them, by msgspec (half json's time); None when they are not a JSON object: a miss."""
    import msgspec

    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, TypeError):
        return None
    return value if isinstance(value, dict) else None
