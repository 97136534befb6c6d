"""The runner's per-file summary lines in a job log, parsed: the durations' source.

Pure: no database, no network, no bot/ imports (the App stores what is parsed here through
bot/durations/ingest.py; the statistics and the verdicts are checks/calibration/estimates.py's).

What the target's runner (tests/ci/run_suite.py) prints, each line of a downloaded job
log prefixed with an ISO-8601 timestamp and a space:

    [3/12] tests/e2e/megatron/test_qwen3_4B_ppo.py  PASS  elapsed=812s
    [3/12] tests/e2e/test_x.py  TIMEOUT  elapsed=1800s exit=-9 timeout_after=1800s retry_of=attempt=1
    End (2/11):
    filename='tests/e2e/test_x.py', elapsed=812, _estimated_time=800
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from checks.calibration.estimates import MAX_ELAPSED_S, elapsed_problem

OUTCOMES = ("PASS", "FAIL", "TIMEOUT")

UNDER_A_SECOND = "elapsed=0s: the file ran for under the log's one-second resolution; its verdict counts, no duration is stored"

# Actions' prefix: 2026-08-15T04:05:06.1234567Z (7 fractional digits; any number accepted).
_TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z ")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# A line that claims to be a summary line: "[i/n] " first. Anything that fails the strict shape
# after this is reported as malformed rather than silently dropped.
_SUMMARY_HEAD = re.compile(r"\s*\[\s*\d+\s*/\s*\d+\s*\]\s")
_SUMMARY = re.compile(
    r"\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]\s+(\S+?)\s{1,}(PASS|FAIL|TIMEOUT)\s+elapsed=(\d+(?:\.\d+)?)s"
    r"((?:\s+[A-Za-z_]+=\S*)*)\s*$"
)
_STATUS_WORD = re.compile(r"\s*\[[^\]]*\]\s+\S+\s+(\S+)")
_TRAILING = re.compile(r"([A-Za-z_]+)=(\S*)")
_EXIT = re.compile(r"-?\d+")
_SECONDS = re.compile(r"(\d+(?:\.\d+)?)s?")
_RETRY_OF = re.compile(r"attempt=(\d+)")
_END = re.compile(r"End \((\d+)/(\d+)\):\s*$")
# miles' runner logs `_estimated_time=`, sglang's `estimated_time=`.
_END_DETAIL = re.compile(
    r"filename='([^']+)',\s*elapsed=(\d+(?:\.\d+)?),\s*_?estimated_time=(\d+(?:\.\d+)?)"
)
_SUITE_ARG = re.compile(r"--suite[ =]([A-Za-z0-9_.\-]+)")
_HW_ARG = re.compile(r"--hw[ =](cpu|cuda|rocm|amd)\b")
# sglang's `--hw amd` is the ROCm backend: the same MI300/MI350 hardware family.
_HW_BACKEND = {"amd": "rocm"}


@dataclass(slots=True)
class FileRecord:
    """One attempt of one test file, from one summary line."""

    file: str
    status: str  # PASS | FAIL | TIMEOUT
    elapsed: float  # seconds
    attempt: int  # 1 for the first run, k + 1 for a line with retry_of=attempt=k
    line: int  # 1-based line number in the log
    index: int | None = None  # the [i/n] of the summary line
    total: int | None = None
    exit_code: int | None = None
    timeout_after: int | None = None  # seconds
    retry_of: int | None = None
    timestamp: datetime | None = None  # the Actions timestamp of the line, UTC
    est_time: float | None = None  # from the runner's End (...) logger lines for the same file


@dataclass(slots=True)
class EndRecord:
    """The runner's logger pair `End (i/n):` + `filename='...', elapsed=N, _estimated_time=E`."""

    file: str
    elapsed: float
    est_time: float
    index: int
    total: int
    line: int


@dataclass
class ParsedLog:
    records: list[FileRecord] = field(default_factory=list)
    ends: list[EndRecord] = field(default_factory=list)
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)
    lines: int = 0
    suite: str | None = None  # from the runner's `--suite <name>` command line, if logged
    backend: str | None = None  # from `--hw <backend>`

    @property
    def est_times(self) -> dict[str, float]:
        return {end.file: end.est_time for end in self.ends}


def parse_timestamp(text: str) -> datetime | None:
    """An Actions timestamp (`2026-08-15T04:05:06.1234567Z`) as an aware UTC datetime."""
    m = _TIMESTAMP.match(text + " " if not text.endswith(" ") else text)
    if not m:
        return None
    return _to_datetime(m.group(1), m.group(2))


def _to_datetime(whole: str, fraction: str | None) -> datetime:
    # By hand: strptime costs ~30 us a call, this ~1 us (the parser's budget is ~5 us a line).
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    return datetime(
        int(whole[0:4]), int(whole[5:7]), int(whole[8:10]), int(whole[11:13]), int(whole[14:16]), int(whole[17:19]),
        micro, tzinfo=timezone.utc,
    )


def _stamp_datetime(stamp: str | None) -> datetime | None:
    """`2026-08-15T04:05:06.1234567Z` (the prefix _strip_prefix split off) as a datetime."""
    if not stamp:
        return None
    if len(stamp) == 28:  # Actions' usual 7 digits: fromisoformat (C) on the first 6
        return datetime.fromisoformat(stamp[:26]).replace(tzinfo=timezone.utc)
    whole, _, fraction = stamp[:-1].partition(".")
    return _to_datetime(whole, fraction or None)


def _strip_prefix(line: str) -> tuple[str, str | None]:
    """The line without its Actions timestamp (and ANSI colours), and the timestamp's text."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    # Fast path: Actions writes exactly 7 fractional digits, so the prefix is 29 characters.
    if len(line) > 28 and line[28] == " " and line[27] == "Z" and line[10] == "T" and line[4] == "-":
        return line[29:], line[:28]
    m = _TIMESTAMP.match(line)
    if m:
        return line[m.end():], line[: m.end() - 1]
    return line, None


def _number(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() else value


def _malformed_reason(body: str) -> str:
    status = _STATUS_WORD.match(body)
    if status and status.group(1) not in OUTCOMES:
        return f"unknown status {status.group(1)!r} (expected PASS, FAIL or TIMEOUT)"
    if "elapsed=" not in body:
        return "summary line without elapsed=<N>s (truncated?)"
    if not re.search(r"elapsed=\d+(?:\.\d+)?s(\s|$)", body):
        return "elapsed is not a number of seconds like elapsed=812s"
    return "summary line does not match '[i/n] <file>  <PASS|FAIL|TIMEOUT>  elapsed=<N>s [exit=<code>] [timeout_after=<N>s] [retry_of=attempt=<k>]'"


def parse_job_log(text: str) -> ParsedLog:
    """Parse a downloaded Actions job log: the runner's per-file summary lines and End lines.

    CRLF line ends, `##[group]`/`::group::` blocks, ANSI colours, interleaved noise and a
    truncated last line are all tolerated; a line that looks like a summary line but is not one is
    reported with its line number in `malformed` and skipped.
    """
    result = ParsedLog()
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    truncated = bool(lines) and lines[-1] != ""  # no line end after the last line
    if not truncated and lines:
        lines.pop()
    result.lines = len(lines)
    records = result.records
    malformed = result.malformed
    attempts: dict[str, int] = {}
    pending_end: tuple[int, int, int] | None = None  # (line, i, n) of an End line awaiting its detail

    for number, raw in enumerate(lines, 1):
        # Cheap pre-filter: every line this parser reads holds one of these three substrings.
        if "elapsed=" in raw:
            body, stamp = _strip_prefix(raw.rstrip("\r"))
            if "filename='" in body:
                m = _END_DETAIL.search(body)
                if m is None:
                    malformed.append((number, "End detail line without filename='...', elapsed=N, _estimated_time=E"))
                elif not float(m.group(3)) <= MAX_ELAPSED_S:  # est_time is stored with the measurements
                    malformed.append((number, "estimated_time is not a finite number of seconds up to 7 days"))
                else:
                    idx, tot = (pending_end[1], pending_end[2]) if pending_end else (0, 0)
                    result.ends.append(
                        EndRecord(m.group(1), _number(m.group(2)), _number(m.group(3)), idx, tot, number)
                    )
                pending_end = None
                continue
            if not body or body[0] not in "[ \t" or not _SUMMARY_HEAD.match(body):
                continue  # noise that happens to say elapsed=
            m = _SUMMARY.match(body)
            if m is None:
                malformed.append((number, _malformed_reason(body)))
                continue
            bad = elapsed_problem(_number(m.group(5)), allow_zero=True)
            if bad:
                malformed.append((number, bad))
                continue
            record = FileRecord(
                file=m.group(3),
                status=m.group(4),
                elapsed=_number(m.group(5)),
                attempt=1,
                line=number,
                index=int(m.group(1)),
                total=int(m.group(2)),
                timestamp=_stamp_datetime(stamp),
            )
            if m.group(6):
                for key, value in _TRAILING.findall(m.group(6)):
                    if key == "exit":
                        if not _EXIT.fullmatch(value) or len(value) > 11 or abs(int(value)) >= 2**31:
                            bad = f"exit={value!r} is not an integer"
                            break
                        record.exit_code = int(value)
                    elif key == "timeout_after":
                        sm = _SECONDS.fullmatch(value)
                        if not sm or elapsed_problem(sm.group(1), "timeout_after"):
                            bad = (elapsed_problem(sm.group(1), "timeout_after") if sm else None) \
                                or f"timeout_after={value!r} is not a number of seconds"
                            break
                        record.timeout_after = int(float(sm.group(1)))
                    elif key == "retry_of":
                        rm = _RETRY_OF.fullmatch(value)
                        if not rm or len(rm.group(1)) > 6:  # the store's integer column
                            bad = f"retry_of={value!r} is not attempt=<k>"
                            break
                        record.retry_of = int(rm.group(1))
                    # unknown key=value fields: a newer runner's addition, ignored
            if bad:
                malformed.append((number, bad))
                continue
            previous = attempts.get(record.file, 0)
            attempt = record.retry_of + 1 if record.retry_of is not None else 1
            if attempt <= previous:
                attempt = previous + 1  # the same file run again without retry_of: still a new attempt
            record.attempt = attempt
            attempts[record.file] = attempt
            records.append(record)
        elif "End (" in raw:
            body, _stamp = _strip_prefix(raw.rstrip("\r"))
            m = _END.search(body)
            if m:
                pending_end = (number, int(m.group(1)), int(m.group(2)))
        elif "--suite" in raw:
            if result.suite is None:
                m = _SUITE_ARG.search(raw)
                if m:
                    result.suite = m.group(1)
                hw = _HW_ARG.search(raw)
                if hw:
                    result.backend = _HW_BACKEND.get(hw.group(1), hw.group(1))

    if truncated and "elapsed=" not in lines[-1]:
        body, _stamp = _strip_prefix(lines[-1].rstrip("\r"))
        if _SUMMARY_HEAD.match(body):
            malformed.append((len(lines), "truncated summary line at the end of the log"))

    if result.ends:
        est = result.est_times
        for record in records:
            record.est_time = est.get(record.file)
    return result
