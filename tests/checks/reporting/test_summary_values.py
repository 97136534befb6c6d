"""What the App writes in Markdown shows what is there (issue 37 item 3): an amount no one can use
(not finite, or past 2**53) is shown as refused, never printed; an invisible or bidirectional
character in a path or a name is shown escaped (`<U+202E>`) in the summary, the annotations, the
suggestions, the replies and the calibration pull request. One function each, in checks/wording.py."""

from __future__ import annotations

import math

import pytest

from checks.engine import check_tree
from checks.reporting.render import check_run_annotations, check_run_summary, md_text, suggestion_comment
from checks.scanning.tree import MemoryTree
from checks.wording import LARGEST_AMOUNT, REFUSED, amount, has_invisible, usable, visible
from tests.fixtures.miles import miles_tree, test_file

RLO = "\u202e"
# every character the issue names, and other invisible format characters (category Cf)
INVISIBLE = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e",
             "\u200f", "\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u061c", "\u2028", "\u2029", "\x1b", "\x00"]


@pytest.mark.parametrize("ch", INVISIBLE)
def test_every_invisible_or_reordering_character_is_shown_escaped(ch):
    shown = visible(f"tests/e2e/test_{ch}yp.py")
    assert shown == f"tests/e2e/test_<U+{ord(ch):04X}>yp.py" and has_invisible(f"a{ch}b")
    assert visible(shown) == shown  # the escape is plain ASCII: escaping again changes nothing


def test_what_a_reader_sees_is_left_alone():
    for text in ("tests/e2e/test_a.py", "naïve/測試/тест.py", "a b", "x\ny\tz", "", "U+202E"):
        assert visible(text) == text and not has_invisible(text)


@pytest.mark.parametrize("value, spec, unit, shown", [
    (300, "g", "s", "300 s"), (0.5, "g", "", "0.5"), (1.234, ".2f", "", "1.23"), (-2, "g", "", "-2"),
    (LARGEST_AMOUNT, "g", "", f"{LARGEST_AMOUNT:g}"),
    (1e308, "g", "s", REFUSED), (math.inf, ".2f", "", REFUSED), (-math.inf, "g", "", REFUSED),
    (math.nan, "g", "s", REFUSED), (LARGEST_AMOUNT * 2, "g", "", REFUSED), (10**400, "g", "", REFUSED),
])
def test_an_amount_is_printed_only_when_a_reader_can_use_it(value, spec, unit, shown):
    assert amount(value, spec, unit) == shown
    assert usable(value) == (shown != REFUSED)


def _diff(head_files: dict[str, str]):
    base = miles_tree(**{".github/ci-registrar.yml": "consumers: []\n"})
    head = dict(base, **head_files)
    changed = {p: (p if p in base else None) for p in head_files}
    return check_tree(MemoryTree(head), MemoryTree(base), changed, fixes=True)


def test_the_summary_shows_an_unusable_est_time_and_its_gpu_hours_as_refused():
    report = _diff({"tests/e2e/test_huge.py": test_file(
        'register_rocm_ci(est_time=1e308, suite="stage-c-4-gpu-mi350", labels=["amd"])')})
    assert report.pr_summary is not None and report.pr_summary.rows
    summary = check_run_summary(report)
    row = next(line for line in summary.splitlines() if line.startswith("| `stage-c-4-gpu-mi350` |"))
    assert REFUSED in row and "1e+308" not in row and "inf" not in row.lower().replace("info", "")
    registrations = summary.split("<summary>Registrations</summary>")[1]
    assert "1e+308" not in registrations and REFUSED in registrations
    assert "inf GPU-hours" not in summary and "1e+308 s" not in summary
    # the suggestion shows the run plan's charge, which bounds the file by the job's timeout (180 min
    # x 4 GPUs), never the est_time's; an unusable charge itself would read refused
    assert "one run as `/run-rocm` plans it is charged 12.00 GPU-hours against the budget" in summary
    from checks.reporting.render import _run_cost

    assert _run_cost(float("inf")) == f"has no usable charge: its GPU-hours are {REFUSED}"


def test_a_bidi_override_in_a_file_name_is_escaped_in_the_summary_and_the_annotations():
    name = f"tests/e2e/test_{RLO}yp.txt.py"  # renders as "tests/e2e/test_yp.txt.py" reversed after the override
    report = _diff({name: test_file('register_rocm_ci(est_time=60, suite="nightly-stage-c-4-gpu-mi350x", labels=["amd"])')})
    summary = check_run_summary(report)
    assert RLO not in summary and "test_<U+202E>yp.txt.py" in summary
    annotations = [a for a in check_run_annotations(report) if a["path"] == name]
    assert annotations, "the unknown suite is flagged on the file itself"
    for a in annotations:
        assert a["path"] == name  # the real path: GitHub places the annotation on that file
        assert not any(RLO in a.get(k, "") for k in ("message", "title", "raw_details"))


def test_plain_markdown_text_escapes_before_it_neutralises_mentions():
    shown = md_text(f"@alice {RLO}moc.live")
    assert RLO not in shown and "\\<U\\+202E\\>" in shown  # the escape, itself escaped as Markdown text
    assert "@\u200balice" in shown  # the App's own zero-width space stays: it stops the mention


def test_a_fix_on_a_line_with_a_bidi_override_is_shown_escaped_not_offered_as_a_suggestion():
    from checks.model import Finding, Fix, Severity, Span

    fix = Fix("tests/e2e/test_a.py", 3, 3, f'register_rocm_ci(est_time=60, suite="a{RLO}b", labels=["amd"])\n')
    finding = Finding("REG010", Severity.FAILURE, "tests/e2e/test_a.py", Span(3, 1, 3, 10), "unknown suite", fix=fix)
    body = suggestion_comment(finding)
    assert RLO not in body and "```suggestion" not in body and "a<U+202E>b" in body
    clean = Finding("REG010", Severity.FAILURE, "tests/e2e/test_a.py", Span(3, 1, 3, 10), "unknown suite",
                    fix=Fix("tests/e2e/test_a.py", 3, 3, 'register_rocm_ci(est_time=60, suite="ab", labels=["amd"])\n'))
    assert "```suggestion" in suggestion_comment(clean)


def test_replies_and_their_tables_show_names_escaped_and_amounts_refused():
    from bot.ondemand import texts

    table = texts._selected_table([(f"tests/e2e/test_{RLO}a.py", 1e308), ("tests/e2e/test_b.py", 60.0)])
    assert RLO not in table and "<U+202E>" in table and REFUSED in table and "| `tests/e2e/test_b.py` | 60 s |" in table
    assert texts.hours(math.inf) == REFUSED and texts.hours(1.5) == "1.50"
    assert texts.code(f"x{RLO}y") == "`x<U+202E>y`"
    out = texts.run_finished_output("s", "success", None, [
        {"file": f"t{RLO}.py", "status": "PASS", "elapsed": math.inf, "est_time": 60, "verdict": "ok"}])
    assert RLO not in out["summary"] and REFUSED in out["summary"]


def test_a_reply_is_escaped_whatever_text_interpolated_the_name(monkeypatch):
    from bot.ondemand import pull as steps

    sent = []

    class Client:
        def comment(self, repo, number, body):
            sent.append(body)

    class Pull:
        client, repo, number, store_url = Client(), "o/r", 1, None

    monkeypatch.setattr(steps, "once", lambda pull, key, step, action: action() or True)
    steps.reply(Pull(), "k", f"@bob `tests/{RLO}x.py` is not selected")
    assert sent == ["@bob `tests/<U+202E>x.py` is not selected"]


def test_the_calibration_pull_request_shows_names_escaped_and_amounts_refused():
    from bot.worker.calibration_pr import _fmt, _who

    assert _fmt(1e308) == REFUSED and _fmt(math.inf) == REFUSED and _fmt(570) == "570" and _fmt(None) == "-"
    who = _who([{"sha": "a" * 40, "author": None, "commit": {"author": {"name": f"mallory{RLO}toor"}}}])
    assert RLO not in who and "mallory<U+202E>toor" in who
