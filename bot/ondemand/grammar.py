"""The comment commands' grammar: a PR comment's text -> one command, a refusal, or nothing.

Strict on purpose: whatever passes here may reach a workflow input. A command is a line of its own
that starts with one of the command words; one command per comment; every token is plain ASCII
from a small character set. A line that only *looks* like a command (a Unicode dash or letter
standing in for an ASCII one, a full-width slash) is a refusal with a reason, never silently run
and never silently ignored. Lines quoted with `>` and lines inside fenced code blocks are text,
not commands: quoting a maintainer's command must not repeat it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

RUN = "/run-rocm"
APPROVE = "/approve-rocm"
DENY = "/deny-rocm"
STATUS = "/rocm-status"
WORDS = (RUN, APPROVE, DENY, STATUS)

GRAMMAR = (
    "`/run-rocm <suite> [<test-file> ...]` runs a ROCm suite (or only the listed test files of it) "
    "on this PR's head commit; `/approve-rocm` approves every pending request on the current head; "
    "`/deny-rocm [reason]` refuses them; `/rocm-status` shows requests and runs. "
    "The command stands alone on its own line, one command per comment."
)

SUITE_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# A path segment: starts with a letter, digit or underscore (never '.', never '-').
SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
MAX_REASON = 300
MAX_TOKENS = 64  # a command line with more words than this is not a command anyone means

# Letters that render like ASCII ones (a sample of Unicode's confusables for the command words).
_CONFUSABLE = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "ԁ": "d", "ո": "n", "ս": "u", "м": "m", "т": "t", "к": "k", "в": "b", "н": "h", "ӏ": "l",
    "ο": "o", "α": "a", "ε": "e", "ρ": "p", "ν": "v", "υ": "u", "τ": "t", "κ": "k", "ι": "i",
    "г": "r", "ⅼ": "l", "ⅿ": "m", "ℓ": "l", "∕": "/", "⁄": "/", "／": "/", "⧸": "/", "−": "-",
})


@dataclass(frozen=True)
class Command:
    word: str  # one of WORDS
    suite: str | None = None  # /run-rocm
    files: tuple[str, ...] = ()  # /run-rocm
    reason: str | None = None  # /deny-rocm
    line: str = ""


@dataclass(frozen=True)
class Refusal:
    """A comment meant as a command that does not parse: answered with the reason and the grammar."""

    reason: str
    word: str | None = None


@dataclass
class _Lines:
    commands: list[tuple[str, str]] = field(default_factory=list)  # (word, line)
    lookalikes: list[str] = field(default_factory=list)


def _skeleton(text: str) -> str:
    """What a line looks like to a reader: compatibility forms folded, dashes and look-alikes mapped."""
    folded = unicodedata.normalize("NFKC", text)
    out = []
    for ch in folded:
        if unicodedata.category(ch) == "Pd":
            out.append("-")
        else:
            out.append(ch)
    return "".join(out).translate(_CONFUSABLE).lower()


def _word_of(line: str) -> str | None:
    """The command word a line starts with (exactly, ASCII), if any."""
    head = line.split(None, 1)[0] if line.split() else ""
    return head if head in WORDS else None


def _command_lines(body: str) -> _Lines:
    found = _Lines()
    fence: str | None = None
    for raw in body.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = raw.strip()
        marker = re.match(r"(`{3,}|~{3,})", line)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
            elif line.startswith(fence) and not line[len(fence):].strip(fence[0]).strip():
                fence = None
            continue
        if fence is not None or not line or line.startswith(">"):
            continue
        word = _word_of(line)
        if word is not None:
            found.commands.append((word, line))
            continue
        if any(line.startswith(w) for w in WORDS):  # `/run-rocmx`, `/run-rocm:`: meant, malformed
            found.lookalikes.append(line)
            continue
        if line[:1] in "/／∕⁄⧸" or unicodedata.normalize("NFKC", line[:1]) == "/":
            first = _skeleton(line.split(None, 1)[0])
            if any(first == w or first.startswith(w + " ") for w in WORDS) or first in WORDS:
                found.lookalikes.append(line)
    return found


def _non_ascii(token: str) -> str | None:
    for i, ch in enumerate(token):
        if not ch.isascii() or not ch.isprintable():
            name = unicodedata.name(ch, "UNNAMED CHARACTER")
            return f"character {i + 1} of `{_printable(token)}` is U+{ord(ch):04X} {name}: commands take plain ASCII only"
    return None


def _printable(text: str) -> str:
    """A token shown back in a reply: escaped, never able to break out of its code span."""
    shown = "".join(ch if ch.isascii() and ch.isprintable() and ch != "`" else f"\\u{ord(ch):04x}" for ch in text)
    return shown[:80] + ("…" if len(shown) > 80 else "")


def check_suite_token(token: str) -> str | None:
    """None when `token` has a suite's shape, else why not."""
    bad = _non_ascii(token)
    if bad:
        return bad
    if not SUITE_SHAPE.fullmatch(token):
        odd = next((ch for ch in token if not (ch.isalnum() or ch in "._-")), None)
        if odd is not None:
            return f"`{_printable(odd)}` is not allowed in a suite name (letters, digits, `.`, `_` and `-` only)"
        return f"`{_printable(token)}` is not a suite name (it must start with a letter or digit, at most 128 characters)"
    return None


def check_path_token(token: str, roots: list[str] | None, pattern: str = "test_*.py") -> str | None:
    """None when `token` is a test file path of the safe shape under one of `roots`, else why not."""
    import fnmatch

    bad = _non_ascii(token)
    if bad:
        return bad
    shown = _printable(token)
    if len(token) > 300:
        return f"`{shown}` is too long for a test file path"
    segments = token.split("/")
    if any(s in ("", ".", "..") for s in segments):
        return f"`{shown}`: empty, `.` and `..` path segments are not allowed"
    for s in segments:
        if not SEGMENT.fullmatch(s):
            odd = next((ch for ch in s if not (ch.isalnum() or ch in "._-")), None)
            if odd is not None:
                return f"`{shown}`: `{_printable(odd)}` is not allowed in a path (letters, digits, `.`, `_`, `-` and `/` only)"
            return f"`{shown}`: a path segment may not start with `.` or `-`"
    if roots is not None and not any(token.startswith(r.rstrip("/") + "/") for r in roots):
        return f"`{shown}` is not under a test root ({', '.join(f'`{r}`' for r in roots)})"
    if not (token.endswith(".py") and fnmatch.fnmatchcase(segments[-1], pattern)):
        return f"`{shown}` is not a test file (`{pattern}`)"
    return None


def parse(body: str | None, *, roots: list[str] | None = None, pattern: str = "test_*.py") -> Command | Refusal | None:
    """A comment's command, a refusal (meant as a command, does not parse), or None (not a command).

    `roots`: the discovery roots test file paths must lie under (from the trusted configuration);
    None skips that one check (a first look, before the configuration is read).
    """
    if not body:
        return None
    lines = _command_lines(body)
    if not lines.commands and not lines.lookalikes:
        return None
    if lines.lookalikes and not lines.commands:
        line = lines.lookalikes[0]
        first = line.split(None, 1)[0]
        return Refusal(_non_ascii(first) or f"`{_printable(first)}` is not a command word")
    if len(lines.commands) + len(lines.lookalikes) > 1:
        return Refusal("one command per comment: this comment holds "
                       f"{len(lines.commands) + len(lines.lookalikes)} command lines", lines.commands[0][0])
    word, line = lines.commands[0]
    rest = line[len(word):]
    if word == DENY:
        reason = rest.strip()
        if reason and any(not ch.isprintable() for ch in reason):
            return Refusal("the reason holds control characters", word)
        return Command(DENY, reason=reason[:MAX_REASON] or None, line=line)
    if rest and not rest[0].isspace():
        return Refusal(f"`{_printable(line.split()[0])}` is not a command word", word)
    tokens = rest.split()
    if not rest.isascii():
        for token in tokens:
            bad = _non_ascii(token)
            if bad:
                return Refusal(bad, word)
        return Refusal("the command holds non-ASCII spacing: commands take plain ASCII only", word)
    if len(tokens) > MAX_TOKENS:
        return Refusal(f"too many arguments ({len(tokens)})", word)
    if word in (APPROVE, STATUS):
        if tokens:
            return Refusal(f"`{word}` takes no arguments", word)
        return Command(word, line=line)
    # /run-rocm <suite> [<test-file> ...]
    if not tokens:
        return Refusal("`/run-rocm` needs a suite name", word)
    suite, files = tokens[0], tokens[1:]
    bad = check_suite_token(suite)
    if bad:
        return Refusal(bad, word)
    for path in files:
        bad = check_path_token(path, roots, pattern)
        if bad:
            return Refusal(bad, word)
    if len(set(files)) != len(files):
        return Refusal("a test file is listed twice", word)
    return Command(RUN, suite=suite, files=tuple(files), line=line)
