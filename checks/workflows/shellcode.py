"""What a step's shell runs: its script with the comments taken out.

A `run:` block often keeps a command commented out (`# python3 tests/ci/run_suite.py --suite x`)
or names a script in a note (`# the real pull happens in amd_ci_start_container.sh`). Neither
runs: a reader that counted them would call a suite consumed that no job runs (REG013 silent),
find a suite in a note (`--suite x` in a trailing comment: REG015 on a suite nobody wrote), or
take a job's image from a script the step never starts. Every reader of a step's commands reads
`shell_code(run)`.

A comment, as the shell has it: an unquoted `#` at the start of a word (the line's start, or after
a blank or one of `;&|()`) up to the end of the line. `${#x}`, `$#`, `a#b` and a `#` inside quotes
are not comments. Heredocs are not told apart (their `#` lines are dropped too: they are text or
another language, never a command of this shell).
"""

from __future__ import annotations

import functools
import re

# Left to right: a quoted string or an escaped character is kept as it is (a `#` in it is text);
# a `#` that begins a word starts a comment, dropped to the end of its line.
_TOKEN = re.compile(r"""'[^']*'|"(?:\\.|[^"\\])*"|\\.|(?<![^\s;&|()])#[^\n]*""", re.S)


def _keep(match: re.Match) -> str:
    text = match.group(0)
    return "" if text.startswith("#") else text


def shell_code(script: str) -> str:
    """`script` without its comments; lines keep their numbers (a comment line becomes empty)."""
    if "#" not in script:
        return script
    if "\n" not in script:  # one line (where a name is written): not worth a place in the cache
        return _TOKEN.sub(_keep, script)
    return _code(script)


@functools.lru_cache(maxsize=1024)
def _code(script: str) -> str:
    # a job's matrix rows read the same steps: each step's text is cut once
    return _TOKEN.sub(_keep, script)
