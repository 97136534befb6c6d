"""Which container image a target's job runs in, and how it resolves a dated tag, read from its scripts.

Both targets pick their MI35x image at run time, by date: sglang's nightly for miles walks back
from today for `rocm/sgl-dev:miles-rocm720-mi35x-<YYYYMMDD>` (`for i in $(seq 0 6)` with
`docker manifest inspect`), sglang's own jobs call `scripts/ci/amd/amd_ci_start_container.sh`,
which looks for `rocm/sgl-dev:<sglang version>-<rocm version>-mi35x-<YYYYMMDD>` over the last
seven days (`for days_back in {0..6}`), the version coming from the repository's git tags. miles'
PR job names the undated `rocm/sgl-dev:miles-rocm720-mi35x` in its `resolve-ci-image` job.

An ImageRule keeps that as a tag template: `{date}` is the newest YYYYMMDD of the last `days`
days that has an image, `{version}` a version the run finds itself (`v` and digits, dots,
`post`/`rc` suffixes). The shipped workflow resolves both the same way (docs/on-demand-workflow.md).

The shell is read, never run: `NAME=value` assignments (the last literal default of a variable
wins over an input it defaults for), `${NAME}` references, `$(date ... +%Y%m%d)` for a date,
`$(...)` into a variable whose name says VERSION for a version, `{0..N}` / `$(seq 0 N)` for the
days, and a script's `--option) NAME="$2"` for what an argument sets.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from checks.workflows.expressions import UNKNOWN, Scope, substitute
from checks.workflows.shellcode import shell_code

DATE, VERSION = "{date}", "{version}"
# NAME= at the start of a command: a line's start, after `;`, `&&`, `||`, `then`, `else`, `do`,
# `export`/`local`/`readonly`, or a `case` pattern's `)`; the value is one shell word (read_word).
_ASSIGN = re.compile(r"(?:^|[;&|]\s*|\b(?:then|else|do|export|local|readonly)\s+|^\s*[^)#\s(]+\)\s*)\s*([A-Za-z_]\w*)=")
_EMPTY_TEST = re.compile(r"-z\s+\"?\$\{?([A-Za-z_]\w*)\}?\"?")
_POSITIONAL = re.compile(r"\$\{?[0-9@*#]")
_REF = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")
_DATE_SUB = re.compile(r"\$\(date\b[^)]*\+%Y%m%d\)")
_DAYS = re.compile(r"\{0\.\.(\d{1,2})\}|\$\(seq\s+0\s+(\d{1,2})\)")
_IMAGE_TEXT = re.compile(r"^[a-z0-9][a-z0-9._/-]*/[a-z0-9._-]+:[A-Za-z0-9_{}][A-Za-z0-9_.{}-]*$")
# a `case` branch `--opt)` whose first command sets NAME from its argument (on its line or the next)
_OPTION_SETS = re.compile(r"^[ \t]*(--[A-Za-z0-9-]+)\)\s*([A-Za-z_]\w*)=\"?\$2\"?", re.M)
_WRITES = re.compile(r"echo\s+\"?([A-Za-z_]\w*)=([^\"\s>]+)\"?\s*>>\s*\"?\$\{?(GITHUB_ENV|GITHUB_OUTPUT)\}?\"?")


@dataclass(frozen=True)
class ImageRule:
    repository: str  # "rocm/sgl-dev"
    tag: str  # "miles-rocm720-mi35x-{date}", "{version}-rocm724-mi35x-{date}", "miles-rocm720-mi35x"
    days: int = 0  # > 0 when the tag holds {date}: how many days back the run looks
    where: str = ""  # "workflow.yml:12" or a script path: where the rule was read

    @property
    def image(self) -> str:
        return f"{self.repository}:{self.tag}"

    @property
    def dated(self) -> bool:
        return DATE in self.tag

    def describe(self) -> str:
        parts = [self.image]
        if self.dated:
            parts.append(f"{{date}}: the newest YYYYMMDD of the last {self.days} days with that image")
        if VERSION in self.tag:
            parts.append("{version}: the release version the image was built for (v<digits>...)")
        return "; ".join(parts)


@functools.lru_cache(maxsize=512)
def _assignments(text: str) -> tuple[dict, dict, int]:
    """A script's assignments (name -> values), its defaults (set only when empty) and the days
    its image lookup goes back; cached, callers copy."""
    values: dict[str, list[str]] = {}
    defaults: dict[str, list[str]] = {}
    lines = text.replace("\\\n", " ").split("\n")
    guards: list[str | None] = []  # per open `if`: the variable it tests for emptiness
    for line in lines:
        stripped = line.strip()  # `text` is shell_code (Shell): no comments
        empty_test = _EMPTY_TEST.search(line)
        if re.match(r"(?:el)?if\b", stripped) and not re.search(r"\bfi\s*;?\s*$", stripped):
            if stripped.startswith("elif") and guards:
                guards.pop()
            guards.append(empty_test.group(1) if empty_test else None)
        for m in _ASSIGN.finditer(line):
            name = m.group(1)
            default = name in guards or (empty_test is not None and empty_test.group(1) == name)
            (defaults if default else values).setdefault(name, []).append(_unquote(read_word(line, m.end())))
        if re.match(r"fi\b", stripped) and guards:
            guards.pop()
    m = _DAYS.search(text)
    return values, defaults, int(m.group(1) or m.group(2)) + 1 if m else 0


class Shell:
    """The assignments of one script, to resolve `${NAME}` the way the script's default path does."""

    def __init__(self, text: str, scope: Scope | None = None, preset: dict[str, str] | None = None):
        self.text = text = shell_code(text)  # a commented-out assignment or GITHUB_ENV write is not made
        self.scope = scope or Scope()
        values, defaults, days = _assignments(text)  # one parse per distinct script (a job's rows share it)
        self.values: dict[str, list[str]] = {k: list(v) for k, v in values.items()}
        # set only when the variable is empty (`[ -z "$X" ] && X=...`)
        self.defaults: dict[str, list[str]] = {k: list(v) for k, v in defaults.items()}
        self.preset = dict(preset or {})
        self.days = days

    def resolve(self, value: str, prefer: str = "", depth: int = 0) -> str | None:
        """`value` with its references put in; None when it needs what only the run knows."""
        if depth > 12:
            return None
        if "${{" in value:
            got = substitute(value, self.scope)
            if got is UNKNOWN:
                return None
            value = str(got)
        value = _DATE_SUB.sub(DATE, value)
        if "$(" in value or "`" in value:
            return None
        out = []
        last = 0
        for m in _REF.finditer(value):
            out.append(value[last:m.start()])
            got = self.variable(m.group(1) or m.group(2), prefer, depth + 1)
            if got is None:
                return None
            out.append(got)
            last = m.end()
        out.append(value[last:])
        return "".join(out)

    def variable(self, name: str, prefer: str = "", depth: int = 0) -> str | None:
        if name in self.preset:
            return self.preset[name]
        got = self._candidates(self.values.get(name, []), name, prefer, depth)
        # an empty-guarded default applies only when nothing else gives the variable a value
        return got if got is not None else self._candidates(self.defaults.get(name, []), name, prefer, depth)

    def _candidates(self, values: list[str], name: str, prefer: str, depth: int) -> str | None:
        candidates = []
        for raw in values:
            if _POSITIONAL.search(raw):
                continue  # an argument (`"$2"`): what the job passes is preset through option_variables
            if _DATE_SUB.fullmatch(raw.strip()):
                candidates.append(DATE)
                continue
            if raw.startswith("$(") and "VERSION" in name.upper():
                candidates.append(VERSION)  # computed at run time (sglang: from the git tags)
                continue
            got = self.resolve(raw, prefer, depth)
            if got:
                candidates.append(got)
        if not candidates:
            return None
        if VERSION in candidates:
            return VERSION  # a version found at run time wins over the script's stale literal default
        mine = [c for c in candidates if prefer and prefer in c]  # the arch's own `case` branch
        return (mine or candidates)[-1]  # as at run time: a later assignment overrides

    def option_variables(self) -> dict[str, str]:
        """`--rocm-version) ROCM_VERSION="$2"` -> {"--rocm-version": "ROCM_VERSION"}."""
        out = {}
        for m in _OPTION_SETS.finditer(self.text):
            out.setdefault(m.group(1), m.group(2))
        return out

    def written(self, name: str) -> str | None:
        """What the script writes as NAME to $GITHUB_ENV / $GITHUB_OUTPUT."""
        for line in self.text.replace("\\\n", " ").split("\n"):
            for m in _WRITES.finditer(line):
                if m.group(1) == name:
                    return self.resolve(m.group(2))
        return None

    def writes(self) -> list[str]:
        return [m.group(1) for line in self.text.split("\n") for m in _WRITES.finditer(line)]


def read_word(text: str, start: int) -> str:
    """The shell word starting at `start`: quotes, `$( )` and `${ }` nest; it ends at an unquoted
    blank, `;`, `&`, `|` or the end of the line."""
    i, depth, quote = start, 0, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
            elif quote == '"' and text.startswith("$(", i):
                depth += 1
                quote = ""
                i += 2
                continue
        elif c in "\"'":
            quote = c
        elif text.startswith("$(", i) or text.startswith("${", i):
            depth += 1
            i += 2
            continue
        elif c in ")}" and depth:
            depth -= 1
        elif depth == 0 and (c.isspace() or c in ";&|"):
            break
        i += 1
    return text[start:i]


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def rule_from_image(text: str | None, days: int, where: str) -> ImageRule | None:
    """`rocm/sgl-dev:miles-rocm720-mi35x-{date}` -> its rule; None when it is not an image name."""
    if not text or not _IMAGE_TEXT.match(text):
        return None
    repository, tag = text.rsplit(":", 1)
    dated = DATE in tag
    if dated and days <= 0:
        return None  # a date, but no telling how far back the run looks
    return ImageRule(repository, tag, days if dated else 0, where)


def start_script_rule(script: str, path: str, args: dict[str, str], arch: str, scope: Scope) -> ImageRule | None:
    """The image sglang's container start script finds (`find_latest_image`), for the runner's arch
    (`mi35x`) and the options the job passes (`--rocm-version rocm724`). A script without `${{ }}`
    does not depend on the job's scope: its answer is kept per (script, options, arch)."""
    if "${{" not in script:
        return _start_script_rule(script, path, tuple(sorted(args.items())), arch)
    return _start_script_rule_in(script, path, args, arch, scope)


@functools.lru_cache(maxsize=256)
def _start_script_rule(script: str, path: str, args: tuple, arch: str) -> ImageRule | None:
    return _start_script_rule_in(script, path, dict(args), arch, Scope())


def _start_script_rule_in(script: str, path: str, args: dict[str, str], arch: str, scope: Scope) -> ImageRule | None:
    shell = Shell(script, scope)
    preset = {}
    for option, variable in shell.option_variables().items():
        if option in args:
            preset[variable] = args[option]
    shell.preset = preset
    # The image the script pulls, as `<repository>:${<tag variable>}` inside its lookup.
    for m in re.finditer(r"\"([a-z0-9][a-z0-9._/-]*/[a-z0-9._-]+):\$\{([A-Za-z_]\w*)\}\"", script):
        tag = shell.variable(m.group(2), prefer=arch)
        if tag and DATE in tag:
            # the base tag of this arch (`base_tag="${MI35X_BASE_TAG}"` in the arch's case branch)
            return rule_from_image(f"{m.group(1)}:{tag}", shell.days, path)
    return None
