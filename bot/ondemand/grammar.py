"""The comment commands' grammar: a PR comment's text -> one command, a refusal, or nothing.

Strict on purpose: whatever passes here may reach a workflow input. The comment is read as GitHub
renders it (CommonMark with GitHub's tables and strikethrough, by markdown-it-py), and only its
visible prose counts: a command is a line of a top-level paragraph that starts with one of the
command words (every command: `/run-rocm`, `/approve-rocm`, `/deny-rocm`, `/rocm-status`,
`/calibrate-est-time`). Text GitHub shows as code (fenced or indented blocks, `<pre>`), hides (HTML
comments, `<details>` blocks, an image's alt text) or quotes (`>` blockquotes, so quoting a maintainer's command never repeats it) is not
a command; neither is a list item, a heading or a table cell. One command per comment, every
token plain ASCII from a small character set. A line that only *looks* like a command (a Unicode
dash or letter standing in for an ASCII one, a full-width slash, an invisible character inside
or before the command word, an HTML entity such as `&#47;` or `&#x200B;`) is a refusal with a reason, never silently run and never silently
ignored; so is a command whose paragraph goes on below it (file paths on the next line), which
would otherwise run more than its author meant.
"""

from __future__ import annotations

import fnmatch
import html
import re
import unicodedata
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

RUN = "/run-rocm"
APPROVE = "/approve-rocm"
DENY = "/deny-rocm"
STATUS = "/rocm-status"
CALIBRATE = "/calibrate-est-time"  # bot/worker/handlers/calibration.py: one reader for every command
WORDS = (RUN, APPROVE, DENY, STATUS, CALIBRATE)

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
# Rendering is linear but slow on hostile Markdown (about 0.1 s per KiB of `*_*_...` on a busy
# worker): a comment that could hold a command is rendered only up to this size (GitHub allows 65,536).
MAX_COMMENT = 16_000

# GitHub's comment Markdown: CommonMark plus the GFM block and inline syntax that changes which
# text is prose (tables, strikethrough). Raw HTML is parsed as HTML, as GitHub does.
# `text_join` is off so that an HTML entity (`&#47;`) stays a token of its own: GitHub shows it as
# the character, but a command written with one is not plain text (a look-alike, refused).
_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).disable("text_join")
_HIDING = re.compile(r"<(/?)details\b", re.IGNORECASE)  # a <details> block: folded away, not prose
_BREAKS = ("softbreak", "hardbreak")  # GitHub shows a comment's newlines as line breaks

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


@dataclass(frozen=True)
class _CommandLine:
    word: str
    line: str
    html: str | None = None  # raw HTML inside the line: part of what it says is not shown as written
    next_line: str | None = None  # the paragraph's next line, which reads as part of the command


@dataclass
class _Lines:
    commands: list[_CommandLine] = field(default_factory=list)
    lookalikes: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)  # HTML entities in look-alike lines, as written


def _skeleton(text: str) -> str:
    """What a line looks like to a reader: invisible characters dropped, compatibility forms folded,
    dashes and look-alike letters mapped."""
    folded = unicodedata.normalize("NFKC", text)
    out = []
    for ch in folded:
        category = unicodedata.category(ch)
        if category == "Cf":  # zero-width spaces and joiners, BOM, direction overrides: not seen
            continue
        out.append("-" if category == "Pd" else ch)
    return "".join(out).translate(_CONFUSABLE).lower()


def _word_of(line: str) -> str | None:
    """The command word a line starts with (exactly, ASCII), if any."""
    head = line.split(None, 1)[0] if line.split() else ""
    return head if head in WORDS else None


def _shown(token) -> str:
    """A line's inline token as the line reads: code and emphasis keep their markers (they are
    not plain text), raw HTML is dropped (a tag or a comment is not shown)."""
    if token.type == "code_inline":
        return token.markup + token.content + token.markup
    if token.type in ("html_inline", "image"):  # an image's alt text is not shown as text
        return ""
    return token.content or token.markup


def _paragraph_lines(body: str):
    """Each top-level paragraph of the rendered comment as lines, each line its inline tokens."""
    tokens = _MARKDOWN.parse(body)
    folded = 0  # <details> blocks open around this point: their paragraphs are not top-level prose
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "html_block":
            for closing in _HIDING.findall(opening.content):
                folded = max(0, folded - 1) if closing else folded + 1
            continue
        if folded or opening.type != "paragraph_open" or opening.level != 0 or inline.type != "inline":
            continue
        lines: list[list] = [[]]
        for child in inline.children or ():
            if child.type in _BREAKS:
                lines.append([])
            else:
                lines[-1].append(child)
        yield lines


def _command_lines(body: str) -> _Lines:
    found = _Lines()
    for lines in _paragraph_lines(body):
        # Only spaces and tabs are trimmed: a control character at either end is refused, not hidden.
        texts = ["".join(_shown(t) for t in parts).strip(" \t") for parts in lines]
        for n, (parts, line) in enumerate(zip(lines, texts)):
            word = _word_of(line)
            entities = [t.markup for t in parts if t.type == "text_special" and t.info == "entity"]
            if (word is not None or _word_of(_skeleton(line)) is not None) and entities:
                found.lookalikes.append(line)  # `&#47;run-rocm`: shown as a command, not written as one
                found.entities.extend(entities)
            elif word is not None:
                html = next((t.content for t in parts if t.type == "html_inline"), None)
                follows = next((t for t in texts[n + 1:] if t), None)
                found.commands.append(_CommandLine(word, line, html, follows))
            elif any(line.startswith(w) for w in WORDS):  # `/run-rocmx`, `/run-rocm:`: meant, malformed
                found.lookalikes.append(line)
            elif _word_of(_skeleton(line)) is not None:  # a command word in disguise
                found.lookalikes.append(line)
    return found


def _character(ch: str) -> str:
    """U+XXXX and the character's Unicode name (control characters have none)."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'CONTROL CHARACTER' if unicodedata.category(ch) == 'Cc' else 'UNNAMED CHARACTER')}"


def _non_ascii(token: str) -> str | None:
    for i, ch in enumerate(token):
        if not ch.isascii() or not ch.isprintable():
            return f"character {i + 1} of `{_printable(token)}` is {_character(ch)}: commands take plain ASCII only"
    return None


def _quoted(text: str) -> str:
    """`text` shown back in a reply as an inline code span that it cannot break out of."""
    return f"`{_printable(text)}`"


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
    folded = _skeleton(html.unescape(body))  # entities decoded first: `/approve&#45;rocm` is looked at
    if not any(w[1:] in folded for w in WORDS):
        return None  # no command word, not even a disguised one: nothing to render
    if len(body) > MAX_COMMENT:
        return Refusal(f"this comment is {len(body):,} characters long, and commands are read from comments of "
                       f"at most {MAX_COMMENT:,}: write the command in a comment of its own")
    lines = _command_lines(body)
    if not lines.commands and not lines.lookalikes:
        return None
    if lines.lookalikes and not lines.commands and lines.entities:
        return Refusal(f"the command is written with the HTML entity {_quoted(lines.entities[0])}, which GitHub "
                       "shows as a character: commands are plain text")
    if lines.lookalikes and not lines.commands:
        line = lines.lookalikes[0]
        first = line.split(None, 1)[0]
        return Refusal(_non_ascii(first) or f"`{_printable(first)}` is not a command word")
    if len(lines.commands) + len(lines.lookalikes) > 1:
        return Refusal("one command per comment: this comment holds "
                       f"{len(lines.commands) + len(lines.lookalikes)} command lines", lines.commands[0].word)
    found = lines.commands[0]
    word, line = found.word, found.line
    if found.html is not None:
        return Refusal(f"the command line holds HTML ({_quoted(found.html)}), which GitHub does not show as "
                       "written: commands are plain text", word)
    if found.next_line is not None:
        return Refusal(f"the command's paragraph goes on with {_quoted(found.next_line)} on the next line, "
                       "and a command is one line: list test files on the command's own line, and leave an "
                       "empty line between the command and any other text", word)
    rest = line[len(word):]
    if word == DENY:
        reason = rest.strip()
        odd = next((ch for ch in reason if not ch.isprintable()), None)
        if odd is not None:  # echoed back in replies and check runs: no terminal escapes, no reordering
            return Refusal(f"the reason holds {_character(odd)}, a control or invisible character", word)
        return Command(DENY, reason=reason[:MAX_REASON] or None, line=line)
    # Before splitting: str.split() also splits at control characters (U+001C..U+001F are
    # "whitespace" to Python), which no reader sees as a gap between two words.
    odd = next((ch for ch in rest if not ch.isprintable() and ch not in " \t"), None)
    if odd is not None:
        return Refusal(f"the command holds {_character(odd)}, a control, invisible or non-ASCII space character: "
                       "commands take plain ASCII only", word)
    tokens = rest.split()  # non-ASCII letters are refused by the suite and path checks below
    if len(tokens) > MAX_TOKENS:
        return Refusal(f"too many arguments ({len(tokens)})", word)
    if word in (APPROVE, STATUS, CALIBRATE):
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
