"""Caps on what one check may read and build: a pull request controls the bytes the engine reads.

Every cap has a default that fits real repositories with a wide margin (radixark/miles: about 1,700
files, 400 test files, files under 100 KB, an inventory under 100 suites; sgl-project/sglang is
about ten times that). When a cap is hit the engine carries on with what it can and reports a
REG902 finding that names the cap, its value, the file and the checks it skipped there: a result
is never a success by omission. docs/limits.md lists the caps, their environment variables and
what a user sees.
"""

from __future__ import annotations

import re
from typing import Mapping

import msgspec

from checks.model import Finding, Span

ENV_PREFIX = "CI_REGISTRAR_LIMIT_"


class Limits(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    # bytes of one file the engine reads (test file, contract module, workflow, configuration)
    file_bytes: int = 4 * 1024 * 1024
    # syntax nodes of one Python file, counted from its tokens before it is parsed (a token
    # makes at most about 1.5 nodes; 400,000 tokens parse in ~2 s into ~400 MB at most)
    ast_nodes: int = 400_000
    # nodes of one YAML document (workflow or configuration) once its aliases are expanded
    yaml_nodes: int = 200_000
    # strings (suite names, labels) plus expressions the inventory/labels resolver may expand
    resolved_names: int = 20_000
    # shards of one suite (--auto-partition-size, or the size of the partition-id matrix axis)
    shards: int = 256
    # values of one matrix axis a workflow runs suites over (GitHub itself runs at most 256 jobs)
    matrix_combinations: int = 4_096
    # files (test files and workflows) one check reads
    files: int = 50_000

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return cls.__struct_fields__

    @staticmethod
    def env_var(name: str) -> str:
        return ENV_PREFIX + name.upper()

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> "Limits":
        """Limits from `CI_REGISTRAR_LIMIT_<NAME>` variables (e.g. CI_REGISTRAR_LIMIT_FILE_BYTES);
        unset ones keep their default. A value that is not a positive integer, or a variable
        naming no cap, is an error (a typo must not silently leave a default in place)."""
        known = {cls.env_var(n): n for n in cls.names()}
        values: dict[str, int] = {}
        for var, raw in environ.items():
            if not var.startswith(ENV_PREFIX):
                continue
            if var not in known:
                raise ValueError(f"{var} names no analysis limit (known: {', '.join(sorted(known))})")
            text = raw.strip().replace("_", "")
            if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
                raise ValueError(f"{var}={raw!r}: expected a positive integer")
            values[known[var]] = int(text)
        return cls(**values)


_TOKEN = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]|\n")


def count_tokens(text: str, stop_after: int) -> int:
    """Tokens of Python source (names, numbers, each punctuation character, each line end), an
    upper-bound proxy of its AST nodes, counted at C speed without keeping them. Stops counting
    once past `stop_after`."""
    count = 0
    # chunks keep the count's own memory small on a large file
    for start in range(0, len(text), 1 << 18):
        count += _TOKEN.subn("", text[start : start + (1 << 18)])[1]
        if count > stop_after:
            break
    return count


class Budget:
    """The caps of one check and what hitting them cost: REG902 findings, one per (cap, file)."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.findings: list[Finding] = []
        self.files_read = 0
        self._reported: set[tuple[str, str]] = set()
        self.too_large: set[str] = set()
        # some workflow could not be read whole: "no consumer runs this suite" would be a guess
        self.consumers_partial = False

    def hit(self, limit: str, file: str, consequence: str, *, measured: str | None = None, span: Span | None = None, severity=None,
            at: str | None = None) -> None:
        """`at`: the file the finding points to when `file` is not in the repository (an external
        consumer's workflow, named in the message)."""
        if (limit, file) in self._reported:
            return
        self._reported.add((limit, file))
        from checks.ruleset.reading.reg902_analysis_limit_reached import limit_reached

        self.findings.append(limit_reached(limit, getattr(self.limits, limit), Limits.env_var(limit), file, consequence,
                                           measured=measured, span=span, severity=severity, at=at))

    def take_file(self, path: str, remaining: int, what: str) -> bool:
        """Count one more file read by the check; False (and one REG902 finding) past the cap."""
        if self.files_read >= self.limits.files:
            self.hit("files", path, f"this file and {remaining - 1:,} more {what} after it are not read")
            return False
        self.files_read += 1
        return True

    def read(self, tree, path: str, consequence: str) -> bytes | None:
        """A file's bytes, or None when it is absent or larger than the file_bytes cap (then a
        REG902 finding says what was not checked)."""
        data = tree.read(path)
        if data is not None and len(data) > self.limits.file_bytes:
            self.too_large.add(path)
            self.hit("file_bytes", path, consequence)
            return None
        return data

    def parse_allowed(self, text: str, path: str, consequence: str) -> bool:
        """False (and a REG902 finding) when the source has more tokens than the ast_nodes cap."""
        cap = self.limits.ast_nodes
        if len(text) <= cap:  # fewer characters than the cap: fewer tokens too
            return True
        if count_tokens(text, cap) <= cap:
            return True
        self.hit("ast_nodes", path, consequence, measured=f"more than {cap:,} tokens")
        return False


# The checks a skipped test file no longer gets (REG902 messages name them).
FILE_CHECKS = "its registrations are not read, so REG001-REG004 and the suite rules (REG010-REG040) are skipped for it"
