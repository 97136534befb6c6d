"""Calibration edits: new est_time numbers written into test files with libcst, every other byte kept.

libcst keeps a module's exact text (comments, blank lines, trailing commas, the layout of a
multi-line call); only the est_time argument's value node is replaced. The argument is found where
the scan found it (Registration.arguments["est_time"].span), so a keyword `est_time=`, a positional
first argument, any backend of the family (`register_rocm_ci`, sglang's `register_amd_ci`) and
either style of suite (miles' `suite=`, sglang's `stage=` + `runner_config=`) are the same case.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable, Mapping

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from checks.calibration.policy import Decision


class EditError(ValueError):
    """A file whose registrations cannot be edited as planned (changed since it was scanned)."""


def _literal(value: float) -> cst.BaseExpression:
    if isinstance(value, float):
        return cst.Float(repr(value))
    return cst.Integer(str(int(value)))


class _SetValues(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, wanted: Mapping[tuple[int, int], float]):
        self.wanted = dict(wanted)  # (line, 1-based column) of the old value -> new value
        self.done: set[tuple[int, int]] = set()

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        pos = self.get_metadata(PositionProvider, original.value)
        key = (pos.start.line, pos.start.column + 1)
        if key not in self.wanted:
            return updated
        if not isinstance(original.value, (cst.Integer, cst.Float)):
            raise EditError(f"line {key[0]}: est_time is no longer a number literal")
        self.done.add(key)
        return updated.with_changes(value=_literal(self.wanted[key]))


def edit_source(text: str, decisions: Iterable[Decision]) -> str:
    """`text` with the est_time of each changed decision replaced; nothing else differs."""
    wanted = {}
    for d in decisions:
        if not d.changed:
            continue
        span = d.registration.arguments["est_time"].span
        wanted[(span.line, span.column)] = d.new
    if not wanted:
        return text
    wrapper = MetadataWrapper(cst.parse_module(text))
    transformer = _SetValues(wanted)
    new = wrapper.visit(transformer).code
    missing = set(wanted) - transformer.done
    if missing:
        line, _col = min(missing)
        raise EditError(f"line {line}: no est_time argument where the scan found it")
    return new


@dataclass
class FileEdit:
    path: str
    before: str
    after: str

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.before.splitlines(True), self.after.splitlines(True),
                                            f"a/{self.path}", f"b/{self.path}"))


def plan_edits(decisions: Iterable[Decision], read) -> list[FileEdit]:
    """One FileEdit per file with a change; `read(path) -> str` gives the file's current text."""
    by_file: dict[str, list[Decision]] = {}
    for d in decisions:
        if d.changed:
            by_file.setdefault(d.registration.file, []).append(d)
    out = []
    for path in sorted(by_file):
        before = read(path)
        out.append(FileEdit(path, before, edit_source(before, by_file[path])))
    return out
