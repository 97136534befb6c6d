"""checks/calibration/job_log.py, checks/calibration/estimates.py and checks/target/hardware.py: the runner's log lines, statistics, calibration verdicts."""

from __future__ import annotations

import statistics
from datetime import date, datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.calibration.job_log import parse_job_log, parse_timestamp
from checks.calibration.estimates import (
    CalibrationParams,
    DurationStats,
    calibrate,
    duration_stats,
    estimate_from_other_backend,
    percentile,
    runner_timeout,
    suggest_est_time,
)
from checks.target.hardware import hardware_for_labels

TS = "2026-08-15T04:05:06.1234567Z "

LOG = "\r\n".join(
    [
        TS + "##[group]Run python3 tests/ci/run_suite.py --hw rocm --suite nightly-stage-c-4-gpu-mi350",
        TS + "Collecting 3 files",
        TS + "[rank0] step 12 elapsed=3.2s loss=0.1",  # noise that says elapsed=
        "2026-08-15T04:18:06.0000001Z [1/3] tests/e2e/megatron/test_qwen3_4B_ppo.py  PASS  elapsed=812s",
        "2026-08-15T04:18:06.0000002Z [INFO] End (0/2):",
        "2026-08-15T04:18:06.0000003Z filename='tests/e2e/megatron/test_qwen3_4B_ppo.py', elapsed=812, _estimated_time=800",
        TS + "##[endgroup]",
        TS + "::group::test_b",
        "2026-08-15T04:48:06.5Z [2/3] tests/e2e/test_b.py  TIMEOUT  elapsed=1800s exit=-9 timeout_after=1800s",
        "2026-08-15T05:00:00.5Z [2/3] tests/e2e/test_b.py  FAIL  elapsed=700s exit=1 retry_of=attempt=1",
        "2026-08-15T05:10:00.5Z [2/3] tests/e2e/test_b.py  PASS  elapsed=600s retry_of=attempt=2",
        TS + "End (1/2):",
        TS + "filename='tests/e2e/test_b.py', elapsed=600, _estimated_time=2400",
        TS + "::endgroup::",
        TS + "[3/3] tests/e2e/test_c.py  PASSED  elapsed=10s",
        TS + "[3/3] tests/e2e/test_c.py  PASS  elapsed=ten",
        TS + "[3/3] tests/e2e/test_c.py  PA",
    ]
)


def test_summary_lines_with_timestamps_groups_retries_and_crlf():
    parsed = parse_job_log(LOG)
    assert [(r.file, r.status, r.elapsed, r.attempt) for r in parsed.records] == [
        ("tests/e2e/megatron/test_qwen3_4B_ppo.py", "PASS", 812, 1),
        ("tests/e2e/test_b.py", "TIMEOUT", 1800, 1),
        ("tests/e2e/test_b.py", "FAIL", 700, 2),
        ("tests/e2e/test_b.py", "PASS", 600, 3),
    ]
    timeout = parsed.records[1]
    assert (timeout.exit_code, timeout.timeout_after, timeout.retry_of) == (-9, 1800, None)
    assert parsed.records[3].retry_of == 2
    assert parsed.records[0].timestamp == datetime(2026, 8, 15, 4, 18, 6, 0, tzinfo=timezone.utc)
    assert parsed.records[0].line == 4
    assert (parsed.records[0].index, parsed.records[0].total) == (1, 3)
    assert parsed.suite == "nightly-stage-c-4-gpu-mi350" and parsed.backend == "rocm"
    assert parsed.lines == 17


def test_end_lines_give_est_time_to_every_attempt_of_their_file():
    parsed = parse_job_log(LOG)
    assert parsed.est_times == {"tests/e2e/megatron/test_qwen3_4B_ppo.py": 800, "tests/e2e/test_b.py": 2400}
    assert [r.est_time for r in parsed.records] == [800, 2400, 2400, 2400]
    assert [(e.index, e.total) for e in parsed.ends] == [(0, 2), (1, 2)]


def test_malformed_lines_are_reported_with_line_numbers_and_skipped():
    parsed = parse_job_log(LOG)
    numbers = [n for n, _ in parsed.malformed]
    assert numbers == [15, 16, 17]
    reasons = dict(parsed.malformed)
    assert "PASSED" in reasons[15]
    assert "elapsed" in reasons[16]
    assert "truncated" in reasons[17]


def test_truncated_last_line_without_newline_is_malformed_but_a_complete_one_is_not():
    good = TS + "[1/1] tests/e2e/test_a.py  PASS  elapsed=5s"
    assert len(parse_job_log(good).records) == 1
    assert parse_job_log(good).malformed == []
    cut = TS + "[1/1] tests/e2e/test_a.py  PASS  elapsed=5"
    parsed = parse_job_log(cut)
    assert parsed.records == [] and parsed.malformed[0][0] == 1


def test_log_without_summary_lines_yields_nothing():
    parsed = parse_job_log(TS + "hello\n" + TS + "world\n")
    assert parsed.records == [] and parsed.malformed == [] and parsed.lines == 2


def test_lines_without_timestamp_bom_and_ansi_colours():
    text = "\ufeff[1/2] tests/a/test_x.py  PASS  elapsed=1.5s\n\x1b[32m[2/2] tests/a/test_y.py  FAIL  elapsed=2s exit=3\x1b[0m\n"
    parsed = parse_job_log(text)
    assert [(r.file, r.status, r.elapsed, r.exit_code, r.timestamp) for r in parsed.records] == [
        ("tests/a/test_x.py", "PASS", 1.5, None, None),
        ("tests/a/test_y.py", "FAIL", 2, 3, None),
    ]


def test_repeated_file_without_retry_of_is_a_new_attempt():
    text = "[1/1] tests/a/test_x.py  FAIL  elapsed=1s\n[1/1] tests/a/test_x.py  PASS  elapsed=2s\n"
    assert [r.attempt for r in parse_job_log(text).records] == [1, 2]


def test_bad_trailing_field_is_malformed():
    parsed = parse_job_log("[1/1] tests/a/test_x.py  FAIL  elapsed=1s exit=abc\n")
    assert parsed.records == [] and parsed.malformed == [(1, "exit='abc' is not an integer")]


def test_parse_timestamp_takes_seven_fraction_digits():
    assert parse_timestamp("2026-08-15T04:05:06.1234567Z") == datetime(2026, 8, 15, 4, 5, 6, 123456, tzinfo=timezone.utc)


# Every way a timestamp is read (parse_timestamp; a summary line's prefix through the 29-character
# fast path or the regular expression; 7 fraction digits through fromisoformat, others by hand),
# with months and days of one and two significant digits: an August-only test cannot tell a month
# read from one digit from one read from two.
STAMPS = [
    ("2026-01-02T03:04:05.1234567Z", datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)),
    ("2025-09-30T23:59:59.9999999Z", datetime(2025, 9, 30, 23, 59, 59, 999999, tzinfo=timezone.utc)),
    ("2026-10-01T00:00:00.0000001Z", datetime(2026, 10, 1, 0, 0, 0, 0, tzinfo=timezone.utc)),
    ("2026-11-19T12:34:56.5Z", datetime(2026, 11, 19, 12, 34, 56, 500000, tzinfo=timezone.utc)),
    ("2026-12-31T21:09:08.123Z", datetime(2026, 12, 31, 21, 9, 8, 123000, tzinfo=timezone.utc)),
    ("2027-02-28T10:20:30Z", datetime(2027, 2, 28, 10, 20, 30, tzinfo=timezone.utc)),
    ("2028-03-04T05:06:07.12345678Z", datetime(2028, 3, 4, 5, 6, 7, 123456, tzinfo=timezone.utc)),
    ("1999-12-09T19:18:17.000002Z", datetime(1999, 12, 9, 19, 18, 17, 2, tzinfo=timezone.utc)),
]


@pytest.mark.parametrize("stamp, expected", STAMPS)
def test_timestamps_of_every_month_and_day_width(stamp, expected):
    assert parse_timestamp(stamp) == expected
    assert parse_timestamp(stamp + " the rest of the line") == expected
    line = f"{stamp} [1/1] tests/a/test_x.py  PASS  elapsed=5s\n"
    [record] = parse_job_log(line).records
    assert record.timestamp == expected and record.file == "tests/a/test_x.py" and record.elapsed == 5
    [coloured] = parse_job_log(f"\x1b[36m{stamp}\x1b[0m [1/1] tests/a/test_x.py  PASS  elapsed=5s\n").records
    assert coloured.timestamp == expected
    [bold] = parse_job_log(f"\x1b[1;36m{stamp}\x1b[0;0m [1/1] tests/a/test_x.py  PASS  elapsed=5s\n").records
    assert bold.timestamp == expected


@pytest.mark.parametrize("text", ["2026-8-15T04:05:06Z", "2026-08-15 04:05:06Z", "2026-08-15T04:05:06", "26-08-15T04:05:06Z",
                                  "2026-08-15T04:05:6Z", "2026-08-15T04:05:06.Z", "x2026-08-15T04:05:06Z", ""])
def test_what_is_not_a_timestamp(text):
    assert parse_timestamp(text) is None


@pytest.mark.parametrize("length", [27, 28, 29])
def test_short_lines_near_the_stamps_length_are_not_misread(length):
    line = ("x" * length)[: length - 8] + "elapsed="  # reaches the prefix check, as long as a stamp
    assert len(line) == length
    parsed = parse_job_log(line + "\n")
    assert parsed.records == [] and parsed.malformed == []


def test_a_line_without_a_timestamp_keeps_its_text():
    parsed = parse_job_log("[1/1] tests/a/test_x.py  PASS  elapsed=5s\n")
    assert parsed.records[0].timestamp is None
    # a prefix one character short of the fast path's shape goes through the regular expression
    [r] = parse_job_log("2026-03-04T05:06:07.123456Z [1/1] tests/a/test_x.py  PASS  elapsed=5s\n").records
    assert r.timestamp == datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=timezone.utc)


# statistics -------------------------------------------------------------------------------------


def test_duration_stats_matches_numpy_linear_percentiles():
    # numpy.percentile([1, 2, 3, 4, 10], 90) == 7.6; median 3
    stats = duration_stats([10, 1, 3, 2, 4])
    assert stats.n == 5 and stats.median == 3 and stats.max == 10
    assert stats.p90 == pytest.approx(7.6)
    assert duration_stats([]) == DurationStats(0, None, None, None)
    assert duration_stats([5]) == DurationStats(1, 5, 5, 5)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e5, allow_nan=False), min_size=2, max_size=50))
def test_percentiles_agree_with_the_inclusive_method(values):
    # statistics.quantiles(method="inclusive") is numpy's default linear interpolation.
    stats = duration_stats(values)
    assert stats.median == pytest.approx(statistics.median(values), abs=1e-6)
    assert stats.p90 == pytest.approx(statistics.quantiles(values, n=10, method="inclusive")[8], abs=1e-6)
    assert min(values) <= stats.median <= stats.p90 <= stats.max == max(values)


def test_percentile_edges():
    assert percentile([1, 2], 0.0) == 1 and percentile([1, 2], 1.0) == 2
    with pytest.raises(ValueError):
        percentile([], 0.5)


@pytest.mark.parametrize(
    ("p90", "margin", "round_to", "expected"),
    [(912, 1.15, 10, 1050), (1000, 1.15, 10, 1150), (800, 1.15, 10, 920), (10, 1.0, 10, 10), (11, 1.0, 60, 60)],
)
def test_suggest_est_time_rounds_up(p90, margin, round_to, expected):
    assert suggest_est_time(p90, margin, round_to) == expected


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0.1, max_value=1e5), st.floats(min_value=1.0, max_value=2.0), st.sampled_from([1, 5, 10, 30]))
def test_suggestion_covers_the_margin_and_is_a_multiple(p90, margin, round_to):
    value = suggest_est_time(p90, margin, round_to)
    assert value % round_to == 0
    assert value >= p90 * margin - 1e-6
    assert value - round_to < p90 * margin + 1e-6


def test_runner_timeout():
    assert runner_timeout(800) == 1800
    assert runner_timeout(2400) == 3000
    assert runner_timeout(1441) == 1801


# calibration ------------------------------------------------------------------------------------

SEVEN = [880, 900, 912, 850, 870, 860, 890]


def test_under_estimated_message_and_suggestion():
    stats = DurationStats(7, 880, 912, 912)
    result = calibrate(300, stats, since=date(2026, 11, 2))
    assert (result.kind, result.rule, result.severity, result.suggested) == ("under-estimated", "REG020", "warning", 1050)
    assert result.message == (
        "p90 912 s over 7 passing runs on MI355X since 2026-11-02; est_time 300 s is under-estimated; suggest 1050"
    )


def test_over_estimated_uses_the_larger_of_factor_and_slack():
    stats = duration_stats(SEVEN)
    ceiling = max(1.5 * stats.p90, stats.p90 + 120)
    assert calibrate(ceiling, stats).kind == "ok"
    over = calibrate(ceiling + 1, stats)
    assert over.kind == "over-estimated" and over.severity == "warning" and over.suggested == suggest_est_time(stats.p90)
    # small durations: the slack dominates (p90 20 -> ceiling 140)
    small = DurationStats(5, 18, 20, 21)
    assert calibrate(140, small).kind == "ok" and calibrate(141, small).kind == "over-estimated"


def test_within_bounds_is_ok_without_rule():
    result = calibrate(1000, duration_stats(SEVEN))
    assert result.kind == "ok" and result.rule is None and result.severity is None and result.suggested is None


def test_observed_max_beyond_the_runner_timeout_is_a_failure():
    stats = DurationStats(5, 1500, 1700, 2500)
    result = calibrate(1000, stats)
    assert (result.kind, result.severity, result.timeout_s) == ("exceeds-timeout", "failure", 1800)
    assert int(1.25 * result.suggested) >= 2500 and result.suggested % 10 == 0
    assert "exceeds the runner's timeout of 1800 s" in result.message
    # with est_time 2400 the timeout is 3000: no longer a failure, only fine or under/over
    assert calibrate(2400, stats).kind != "exceeds-timeout"


def test_insufficient_data_says_single_run():
    single = calibrate(300, duration_stats([800]), since="2026-11-02")
    assert (single.kind, single.rule, single.severity) == ("insufficient-data", "REG021", "notice")
    assert "rests on a single run" in single.message and "2026-11-02" in single.message
    none = calibrate(300, duration_stats([]))
    assert none.n == 0 and "no stored passing durations" in none.message
    two = calibrate(300, duration_stats([800, 810]))
    assert "only 2 passing runs" in two.message


def test_insufficient_data_carries_the_other_backend_estimate():
    estimate = estimate_from_other_backend(2200, [(1200, 1000), (2600, 2000), (330, 300), (50, 20)])
    assert estimate is not None and estimate.pairs == 4
    result = calibrate(300, duration_stats([]), other_estimate=estimate)
    assert result.suggested == estimate.est_time and "other backend" in result.message


def test_params_from_a_mapping_or_object():
    stats = DurationStats(2, 800, 810, 820)
    assert calibrate(900, stats, {"min_samples": 2}).kind == "ok"
    assert calibrate(900, stats, CalibrationParams(min_samples=2, hardware="MI300X")).hardware == "MI300X"
    assert calibrate(900, {"n": 2, "median": 800, "p90": 810, "max": 820}, {"min_samples": 2}).kind == "ok"


def test_estimate_from_other_backend():
    assert estimate_from_other_backend(1000, [(1100, 1000), (2400, 2000)]) is None
    est = estimate_from_other_backend(1000, [(1100, 1000), (2400, 2000), (390, 300)])
    assert est.ratio == pytest.approx(1.2) and est.est_time == 1200 and est.pairs == 3
    assert estimate_from_other_backend(1000, [(1, 0), (None, 5), (1, 1)]) is None


# hardware ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["self-hosted", "amd", "mi350", "4gpu"], "MI355X"),
        (["linux-mi35x-gpu-8"], "MI355X"),
        (["LINUX-MI35X-GPU-2"], "MI355X"),
        (["self-hosted", "h200"], None),
        ([], None),
        (None, None),
    ],
)
def test_hardware_from_labels(labels, expected):
    assert hardware_for_labels(labels) == expected


def test_hardware_is_never_guessed_between_two_models():
    mapping = {"mi350": "MI355X", "mi300*": "MI300X"}
    assert hardware_for_labels(["mi350", "mi300x"], mapping) is None
    assert hardware_for_labels(["mi300x"], mapping) == "MI300X"
    assert hardware_for_labels(["mi350"], {}) is None


def test_parser_module_is_pure():
    import checks.calibration.estimates as estimates
    import checks.calibration.job_log as job_log
    import checks.target.hardware as hw

    for module in (job_log, estimates, hw):
        source = open(module.__file__).read()
        assert "import bot" not in source and "sqlalchemy" not in source and "requests" not in source


# property: whatever the noise, line ends and grouping, every summary line comes back ------------

_path = st.from_regex(r"tests/(e2e|fast|ci)/[a-z0-9_]{1,12}/test_[a-z0-9_]{1,16}\.py", fullmatch=True)
_noise = st.sampled_from([
    "[rank0] step 3 elapsed=1.5s", "##[group]Run tests", "##[endgroup]", "::group::x", "::endgroup::",
    "loss=0.25 elapsed=9", "End of epoch", "Warning: [1/2] shards done", "", "\x1b[31mred\x1b[0m",
])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_path, st.sampled_from(["PASS", "FAIL", "TIMEOUT"]), st.integers(1, 10_000),
                       st.booleans(), st.lists(_noise, max_size=3)), min_size=1, max_size=30),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
    st.booleans(),
)
def test_every_summary_line_is_recovered(entries, newline, stamped, final_newline):
    lines, expected = [], []
    seen: dict[str, int] = {}
    for i, (path, status, elapsed, with_exit, noise) in enumerate(entries, 1):
        lines.extend(noise)
        attempt = seen.get(path, 0) + 1
        seen[path] = attempt
        retry = f" retry_of=attempt={attempt - 1}" if attempt > 1 else ""
        exit_ = f" exit={-9 if status == 'TIMEOUT' else 1}" if with_exit else ""
        lines.append(f"[{i}/{len(entries)}] {path}  {status}  elapsed={elapsed}s{exit_}{retry}")
        expected.append((path, status, elapsed, attempt, len(lines)))
    if stamped:
        lines = [f"2026-08-15T04:05:{n % 60:02d}.1234567Z {line}" for n, line in enumerate(lines)]
    text = newline.join(lines) + (newline if final_newline else "")
    parsed = parse_job_log(text)
    assert parsed.malformed == []
    assert [(r.file, r.status, r.elapsed, r.attempt, r.line) for r in parsed.records] == expected
    assert all((r.timestamp is not None) == stamped for r in parsed.records)


def test_sglangs_job_log_reads_like_miles():
    """sglang's runner logs `--hw amd` and `estimated_time=` (miles: `--hw rocm`, `_estimated_time=`)."""
    log = "\n".join([
        TS + "Run python3 test/run_suite.py --hw amd --suite stage-b-test-small-1-gpu-amd --auto-partition-id 0",
        "2026-08-22T01:00:00.0000001Z [1/1] test/registered/amd/test_eval_amd.py  PASS  elapsed=410s",
        "2026-08-22T01:00:00.0000002Z [INFO] End (0/0):",
        "2026-08-22T01:00:00.0000003Z filename='test/registered/amd/test_eval_amd.py', elapsed=410, estimated_time=400",
    ])
    parsed = parse_job_log(log)
    assert parsed.backend == "rocm" and parsed.suite == "stage-b-test-small-1-gpu-amd"
    [record] = parsed.records
    assert record.file == "test/registered/amd/test_eval_amd.py" and record.est_time == 400 and record.elapsed == 410
