"""The comment grammar on its own: each refusal class, what GitHub shows as a command and what it does not.

bot/ondemand/grammar.py decides what may reach a workflow input, so every class of refusal is
pinned here with its reason, and every accepted shape with the exact command it yields (bench/mutation.py
measures how much of the module these tests pin).
"""

from __future__ import annotations

import pytest

from bot.ondemand import grammar
from bot.ondemand.grammar import APPROVE, DENY, RUN, STATUS, Command, Refusal, check_path_token, check_suite_token, parse

SUITE = "nightly-stage-c-4-gpu-mi350"
ROOTS = ["tests/e2e", "tests/fast/"]
FILE = "tests/e2e/test_a.py"


def refused(body: str, **kw) -> str:
    answer = parse(body, **kw)
    assert isinstance(answer, Refusal), answer
    return answer.reason


# -- what is a command ------------------------------------------------------------------------------
@pytest.mark.parametrize("body, command", [
    (f"/run-rocm {SUITE}", Command(RUN, suite=SUITE, line=f"/run-rocm {SUITE}")),
    (f"/run-rocm {SUITE} {FILE} tests/fast/test_b.py",
     Command(RUN, suite=SUITE, files=(FILE, "tests/fast/test_b.py"), line=f"/run-rocm {SUITE} {FILE} tests/fast/test_b.py")),
    (f"  /run-rocm   {SUITE}  ", Command(RUN, suite=SUITE, line=f"/run-rocm   {SUITE}")),
    (f"/run-rocm\t{SUITE}", Command(RUN, suite=SUITE, line=f"/run-rocm\t{SUITE}")),
    ("/approve-rocm", Command(APPROVE, line="/approve-rocm")),
    ("/rocm-status", Command(STATUS, line="/rocm-status")),
    ("/deny-rocm", Command(DENY, line="/deny-rocm")),
    ("/deny-rocm   too costly today  ", Command(DENY, reason="too costly today", line="/deny-rocm   too costly today")),
    # prose before the command, and a paragraph after an empty line, leave it one command
    (f"Looks good.\n/run-rocm {SUITE}", Command(RUN, suite=SUITE, line=f"/run-rocm {SUITE}")),
    (f"/run-rocm {SUITE}\n\nThanks!", Command(RUN, suite=SUITE, line=f"/run-rocm {SUITE}")),
    (f"/run-rocm {SUITE}\r\n\r\nThanks!", Command(RUN, suite=SUITE, line=f"/run-rocm {SUITE}")),
    # quoted, fenced and listed commands around a real one do not count
    (f"> /run-rocm other\n\n/approve-rocm", Command(APPROVE, line="/approve-rocm")),
    (f"```\n/run-rocm other\n```\n\n/approve-rocm", Command(APPROVE, line="/approve-rocm")),
    ("<!-- /run-rocm other -->\n\n/approve-rocm", Command(APPROVE, line="/approve-rocm")),
    # markers that are part of a path, as typed (GitHub shows `__x__` in bold, the path is what was written)
    (f"/run-rocm {SUITE} tests/e2e/__x__/test_a.py",
     Command(RUN, suite=SUITE, files=("tests/e2e/__x__/test_a.py",), line=f"/run-rocm {SUITE} tests/e2e/__x__/test_a.py")),
])
def test_a_command(body, command):
    assert parse(body, roots=ROOTS) == command


def test_a_deny_reason_is_cut_to_its_limit():
    assert parse("/deny-rocm " + "x" * 500).reason == "x" * 300
    assert parse("/deny-rocm " + "x" * 300).reason == "x" * 300
    assert parse("/deny-rocm " + "x" * 299).reason == "x" * 299


@pytest.mark.parametrize("body", [
    None, "", "   ", "LGTM", "please run the ROCm suite", "run-rocm " + SUITE, "/run", "/rocm", "a /run-rocm x",
    # code GitHub shows as code
    f"```\n/run-rocm {SUITE}\n```",
    f"~~~\n/run-rocm {SUITE}\n~~~",
    f"````\n```\n/run-rocm {SUITE}\n```\n````",
    f"```\n/run-rocm {SUITE}",  # an unclosed fence runs to the end of the comment
    f"Try:\n\n    /run-rocm {SUITE}",  # indented code block
    f"    /run-rocm {SUITE}",
    f"<pre>\n/run-rocm {SUITE}\n</pre>",
    f"<pre>/run-rocm {SUITE}</pre>",
    # HTML comments: invisible on the page
    f"<!-- /run-rocm {SUITE} -->",
    f"<!--\n/run-rocm {SUITE}\n-->",
    f"Nothing to see.\n\n<!--\n/run-rocm {SUITE}\n-->",
    # quoted: quoting a maintainer's command must not repeat it
    f"> /run-rocm {SUITE}",
    f"> > /run-rocm {SUITE}\n\nwhy did this fail?",
    f">/run-rocm {SUITE}",
    # lists, headings, tables, code spans
    f"- /run-rocm {SUITE}",
    f"1. /run-rocm {SUITE}",
    f"# /run-rocm {SUITE}",
    f"| a | b |\n| --- | --- |\n| /run-rocm {SUITE} | x |",
    f"`/run-rocm {SUITE}` runs the suite",
    f"**/run-rocm {SUITE}**",
])
def test_not_a_command(body):
    assert parse(body, roots=ROOTS) is None


# -- look-alikes and invisible characters -------------------------------------------------------------
@pytest.mark.parametrize("body, says", [
    (f"/run\u2011rocm {SUITE}", "U+2011 NON-BREAKING HYPHEN"),
    (f"/run\u2010rocm {SUITE}", "U+2010 HYPHEN"),
    (f"/run\u2212rocm {SUITE}", "U+2212 MINUS SIGN"),
    (f"\uff0frun-rocm {SUITE}", "U+FF0F FULLWIDTH SOLIDUS"),
    (f"\u2215run-rocm {SUITE}", "U+2215 DIVISION SLASH"),
    (f"\u2044run-rocm {SUITE}", "U+2044 FRACTION SLASH"),
    (f"/run-r\u043ecm {SUITE}", "U+043E CYRILLIC SMALL LETTER O"),
    (f"/run\u200b-rocm {SUITE}", "U+200B ZERO WIDTH SPACE"),
    (f"\u200b/run-rocm {SUITE}", "U+200B ZERO WIDTH SPACE"),
    (f"\ufeff/run-rocm {SUITE}", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    (f"/run-rocm\u202e {SUITE}", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    (f"/appr\u200dove-rocm", "U+200D ZERO WIDTH JOINER"),
    ("/ROCM-STATUS", "`/ROCM-STATUS` is not a command word"),
    (f"/run-rocmm {SUITE}", "`/run-rocmm` is not a command word"),
    (f"/run-rocm: {SUITE}", "`/run-rocm:` is not a command word"),
])
def test_a_look_alike_is_refused_with_the_character(body, says):
    assert says in refused(body)
    assert parse(body).word is None  # no command word was written


def test_a_look_alike_in_a_quote_or_code_is_text():
    assert parse(f"> /run\u2011rocm {SUITE}") is None
    assert parse(f"```\n\u200b/run-rocm {SUITE}\n```") is None


def test_a_command_plus_a_look_alike_line_is_not_run():
    assert refused(f"/run-rocm {SUITE}\n/run\u2011rocm {SUITE}") == "one command per comment: this comment holds 2 command lines"
    assert refused(f"/run-rocm {SUITE}\n\n\u2215approve-rocm").startswith("one command per comment")
    assert parse(f"/run-rocm {SUITE}\n\n/approve-rocm").word == RUN


@pytest.mark.parametrize("body", [f"/run-rocm {SUITE}\n/approve-rocm", f"/approve-rocm\n\n/rocm-status",
                                  f"/run-rocm a\n\n/run-rocm b\n\n/run-rocm c"])
def test_one_command_per_comment(body):
    answer = parse(body)
    assert isinstance(answer, Refusal) and answer.reason.startswith("one command per comment")
    assert answer.word == body.split()[0]


# -- a command followed by a stray line ---------------------------------------------------------------
@pytest.mark.parametrize("body, stray", [
    (f"/run-rocm {SUITE}\n{FILE}", FILE),
    (f"/run-rocm {SUITE}\ntests/e2e/test_a.py tests/e2e/test_b.py", "tests/e2e/test_a.py tests/e2e/test_b.py"),
    (f"/run-rocm {SUITE}  \n{FILE}", FILE),  # a hard line break
    ("/approve-rocm\nthanks", "thanks"),
])
def test_a_command_followed_by_a_stray_line_shows_the_grammar(body, stray):
    answer = parse(body, roots=ROOTS)
    assert isinstance(answer, Refusal) and answer.word == body.split()[0]
    assert f"`{stray}` on the next line" in answer.reason and "a command is one line" in answer.reason


def test_html_inside_a_command_line_is_refused():
    # an empty tag before the word: the page shows the command, the comment holds HTML
    assert "holds HTML (`<span>`)" in refused(f"<span></span>/run-rocm {SUITE}")
    answer = parse(f"/run-rocm {SUITE} <!-- {FILE} -->")
    assert isinstance(answer, Refusal) and answer.word == RUN
    assert f"holds HTML (`<!-- {FILE} -->`)" in answer.reason
    assert "holds HTML (`<b>`)" in refused(f"/run-rocm <b>{SUITE}</b>")


# -- control characters ----------------------------------------------------------------------------------
@pytest.mark.parametrize("char, name", [("\x1b", "U+001B CONTROL CHARACTER"), ("\x7f", "U+007F CONTROL CHARACTER"),
                                        ("\x1f", "U+001F CONTROL CHARACTER"), ("\x0b", "U+000B CONTROL CHARACTER"),
                                        ("\u200b", "U+200B ZERO WIDTH SPACE"), ("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE")])
def test_control_and_invisible_characters_in_arguments(char, name):
    # in the suite, in a path, and between two tokens (Python's str.split() would split at U+001F)
    for body in (f"/run-rocm {SUITE[:5]}{char}{SUITE[5:]}", f"/run-rocm {SUITE} tests/e2e/te{char}st_a.py",
                 f"/run-rocm {SUITE}{char}{FILE}"):
        answer = parse(body, roots=ROOTS)
        assert isinstance(answer, Refusal) and answer.word == RUN, body
        assert f"the command holds {name}, a control, invisible or non-ASCII space character" in answer.reason
    assert name in refused(f"/approve-rocm{char} now")  # glued to the word


@pytest.mark.parametrize("token, name", [(f"{SUITE}\x1b[31m", "U+001B CONTROL CHARACTER"), (f"a\x7f", "U+007F CONTROL CHARACTER"),
                                         ("mi\u0456350", "U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I")])
def test_a_suite_token_with_a_control_or_non_ascii_character(token, name):
    reason = check_suite_token(token)
    assert reason is not None and f"is {name}: commands take plain ASCII only" in reason
    assert "\x1b" not in reason and "\x7f" not in reason  # shown escaped


@pytest.mark.parametrize("token, name", [("tests/e2e/test_\x1b.py", "U+001B CONTROL CHARACTER"),
                                         ("tests/e2e/test_\x7f.py", "U+007F CONTROL CHARACTER"),
                                         ("tests/e2e/t\u0435st_a.py", "U+0435 CYRILLIC SMALL LETTER IE")])
def test_a_path_token_with_a_control_or_non_ascii_character(token, name):
    reason = check_path_token(token, ROOTS)
    assert reason is not None and f"is {name}: commands take plain ASCII only" in reason
    assert "\x1b" not in reason and "\x7f" not in reason


@pytest.mark.parametrize("char, name", [("\x1b", "U+001B CONTROL CHARACTER"), ("\x7f", "U+007F CONTROL CHARACTER"),
                                        ("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"), ("\u200f", "U+200F RIGHT-TO-LEFT MARK"),
                                        ("\u2066", "U+2066 LEFT-TO-RIGHT ISOLATE")])
def test_a_deny_reason_with_a_control_or_direction_character_is_refused(char, name):
    answer = parse(f"/deny-rocm too costly{char}[31m today")
    assert answer == Refusal(f"the reason holds {name}, a control or invisible character", DENY)


def test_a_deny_reason_in_plain_text_is_kept_as_written():
    assert parse("/deny-rocm `rm -rf` is not a test; see #12 @team").reason == "`rm -rf` is not a test; see #12 @team"
    assert parse("/deny-rocm\u00a0é accents are fine").reason == "é accents are fine"


# -- suite tokens -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("token", [SUITE, "a", "A9", "9", "stage_b.fast-1", "a" * 128, "Nightly-Stage-C", "aB"])
def test_a_suite_token_of_the_safe_shape(token):
    assert check_suite_token(token) is None


@pytest.mark.parametrize("token, says", [
    ("-rf", "`-rf` is not a suite name (it must start with a letter or digit"),
    ("--help", "`--help` is not a suite name"),
    ("-", "`-` is not a suite name"),
    (".hidden", "`.hidden` is not a suite name"),
    ("_x", "`_x` is not a suite name"),
    ("a" * 129, "is not a suite name (it must start with a letter or digit, at most 128 characters)"),
    ("a;b", "`;` is not allowed in a suite name"),
    ("a/b", "`/` is not allowed in a suite name"),
    ("$(id)", "`$` is not allowed in a suite name"),
    ("a`b", "`\\u0060` is not allowed in a suite name"),
    ("a b", "` ` is not allowed in a suite name"),
])
def test_a_suite_token_refused(token, says):
    reason = check_suite_token(token)
    assert reason is not None and says in reason, reason


def test_a_suite_name_starting_with_a_dash_never_reaches_a_command():
    answer = parse("/run-rocm -rf")
    assert isinstance(answer, Refusal) and "`-rf` is not a suite name" in answer.reason and answer.word == RUN
    assert "needs a suite name" in refused("/run-rocm")
    assert "needs a suite name" in refused("/run-rocm   ")


# -- path tokens ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("token", [FILE, "tests/e2e/sub/dir/test_x_y.py", "tests/fast/test_1.py", "tests/e2e/_x/test_a.py",
                                   "tests/e2e/a-b.c/test_a.py", "tests/e2e/Models/test_a.py", "tests/e2e/2024/test_a.py",
                                   "tests/e2e/test_Qwen3.py"])
def test_a_path_of_the_safe_shape_under_a_root(token):
    assert check_path_token(token, ROOTS) is None


@pytest.mark.parametrize("token, says", [
    ("tests/e2e/helper.py", "`tests/e2e/helper.py` is not a test file (`test_*.py`)"),
    ("tests/e2e/conftest.py", "is not a test file"),
    ("tests/e2e/test_a.pyc", "is not a test file"),
    ("tests/e2e/test_a.txt", "is not a test file"),
    ("tests/e2e/test_a", "is not a test file"),
    ("tests/e2e/atest_a.py", "is not a test file"),
    ("tests/e2e/test_a.py/x", "is not a test file"),
    ("bench/test_a.py", "`bench/test_a.py` is not under a test root (`tests/e2e`, `tests/fast/`)"),
    ("tests/e2e", "is not under a test root"),
    ("tests/e2ex/test_a.py", "is not under a test root"),  # a root is a directory, not a prefix
    ("tests/test_a.py", "is not under a test root"),
    ("/etc/test_a.py", "empty, `.` and `..` path segments are not allowed"),
    ("tests//e2e/test_a.py", "empty, `.` and `..` path segments are not allowed"),
    ("tests/e2e/", "empty, `.` and `..` path segments are not allowed"),
    ("tests/e2e/../test_a.py", "empty, `.` and `..` path segments are not allowed"),
    ("tests/e2e/./test_a.py", "empty, `.` and `..` path segments are not allowed"),
    ("tests/e2e/.git/test_a.py", "a path segment may not start with `.` or `-`"),
    ("tests/e2e/-rf/test_a.py", "a path segment may not start with `.` or `-`"),
    ("tests/e2e/$(id)/test_a.py", "`$` is not allowed in a path"),
    ("tests/e2e/a b/test_a.py", "` ` is not allowed in a path"),
    ("tests/e2e/a\\b/test_a.py", "`\\` is not allowed in a path"),
    ("tests/e2e/" + "a" * 129 + "/test_a.py", "a path segment may not start"),
    ("tests/e2e/" + "a/" * 150 + "test_a.py", "is too long for a test file path"),
])
def test_a_path_token_refused(token, says):
    reason = check_path_token(token, ROOTS)
    assert reason is not None and says in reason, reason


def test_only_test_files_under_a_registered_root_are_accepted():
    assert check_path_token("tests/e2e/helper.py", None) is not None  # no roots: the pattern still holds
    assert check_path_token("anywhere/test_a.py", None) is None  # a first look, before the configuration
    assert check_path_token("tests/e2e/check_a.py", ROOTS, pattern="check_*.py") is None
    assert check_path_token(FILE, ROOTS, pattern="check_*.py") is not None
    assert check_path_token("tests/e2e/Test_a.py", ROOTS) is not None  # the pattern is case-sensitive
    assert check_path_token("tests/e2e/test_a.py", ["tests/e2e/"]) is None
    assert "tests/e2e/helper.py" in refused(f"/run-rocm {SUITE} tests/e2e/helper.py", roots=ROOTS)
    assert "is not under a test root" in refused(f"/run-rocm {SUITE} bench/test_a.py", roots=ROOTS)
    assert parse(f"/run-rocm {SUITE} bench/test_a.py").files == ("bench/test_a.py",)


def test_a_path_at_the_length_limits():
    assert check_path_token("tests/e2e/test_" + "a" * 120 + ".py", ROOTS) is None  # a 128-character segment
    assert check_path_token("tests/e2e/test_" + "a" * 121 + ".py", ROOTS) is not None
    long_ok = "tests/e2e/" + "a/" * 140 + "test_ab.py"
    assert len(long_ok) == 300 and check_path_token(long_ok, ROOTS) is None
    assert "too long" in check_path_token("tests/e2e/" + "a/" * 140 + "test_abc.py", ROOTS)  # 301


# -- arguments --------------------------------------------------------------------------------------
def test_the_argument_count():
    files = [f"tests/e2e/test_{i}.py" for i in range(63)]  # 64 tokens with the suite
    assert parse(f"/run-rocm {SUITE} " + " ".join(files), roots=ROOTS).files == tuple(files)
    many = files + ["tests/e2e/test_last.py"]
    assert refused(f"/run-rocm {SUITE} " + " ".join(many)) == "too many arguments (65)"


def test_a_file_listed_twice():
    assert refused(f"/run-rocm {SUITE} {FILE} {FILE}", roots=ROOTS) == "a test file is listed twice"


@pytest.mark.parametrize("word", [APPROVE, STATUS])
def test_commands_without_arguments(word):
    answer = parse(f"{word} now")
    assert answer == Refusal(f"`{word}` takes no arguments", word)


def test_non_ascii_spacing():
    answer = parse(f"/run-rocm\u00a0{SUITE}")
    assert answer == Refusal("the command holds U+00A0 NO-BREAK SPACE, a control, invisible or non-ASCII space "
                             "character: commands take plain ASCII only", RUN)
    assert "U+2003 EM SPACE" in refused(f"/run-rocm {SUITE}\u2003{FILE}")
    assert "U+0456" in refused("/run-rocm mi\u0456350")


def test_a_reply_cannot_be_broken_out_of():
    reason = refused("/run-rocm a`b" + "c" * 200)
    assert "\\u0060" in reason and "`" * 2 not in reason.replace("`\\u0060`", "")
    shown = grammar._printable("x" * 100)
    assert shown == "x" * 80 + "…"
    assert grammar._printable("x" * 81) == "x" * 80 + "…"
    assert grammar._printable("x" * 80) == "x" * 80


def test_a_refusal_names_the_position_of_the_character():
    assert refused(f"/run\u200b-rocm {SUITE}") == ("character 5 of `/run\\u200b-rocm` is U+200B ZERO WIDTH SPACE: "
                                                   "commands take plain ASCII only")
    assert check_suite_token("\u0456x").startswith("character 1 of `\\u0456x` is U+0456")


def test_the_skeleton_of_a_line():
    assert grammar._skeleton("\u200b/RUN\u2013ROCM") == "/run-rocm"
    assert grammar._skeleton("\uff0frun-rocm") == "/run-rocm"
    assert grammar._skeleton("/run-r\u03bfcm") == "/run-rocm"


def test_a_long_comment_is_rendered_only_when_it_could_hold_a_command():
    hostile = "*_" * 32_000  # slow Markdown: never rendered when no command word is in it
    assert parse(hostile) is None
    assert parse("x" * 65_536) is None
    answer = parse(f"/run-rocm {SUITE}\n\n" + "x" * 16_000)
    assert answer == Refusal(f"this comment is {16_000 + len(SUITE) + 12:,} characters long, and commands are read "
                             "from comments of at most 16,000: write the command in a comment of its own")
    assert parse(f"/run-rocm {SUITE}\n\n" + "x" * (16_000 - len(SUITE) - 12)).suite == SUITE  # exactly at the limit
    assert isinstance(parse("/run\u2011rocm x " + "y" * 16_000), Refusal)  # a disguised word counts too


# -- issue 25 item 5: one reader for every command, as GitHub renders the comment -------------------
@pytest.mark.parametrize("command", [f"/run-rocm {SUITE}", "/approve-rocm", "/rocm-status", "/calibrate-est-time"])
@pytest.mark.parametrize("wrap", [
    "![{c}](https://example.com/x.png)",  # an image's alt text: not shown as text
    "before ![{c}](x.png) after",
    "<details>\n\n{c}\n\n</details>",  # folded away
    "<details><summary>more</summary>\n\n{c}\n\n</details>",
    "<DETAILS>\n<summary>s</summary>\n\n{c}\n\n</DETAILS>",
    "<pre>\n{c}\n</pre>",
    "<pre>\n\n{c}\n\n</pre>",
    "<!--\n{c}\n-->",
    "<!-- {c} -->",
    "    {c}",  # indented code
    "```\n{c}\n```",
    "~~~\n{c}\n~~~",
    "> {c}",
    "> quoted\n>\n> {c}",
    "- {c}",
    "# {c}",
])
def test_text_github_does_not_show_as_prose_is_never_a_command(command, wrap):
    assert parse(wrap.format(c=command), roots=ROOTS) is None


def test_prose_after_a_closed_details_block_counts():
    body = "<details>\n\n/run-rocm hidden\n\n</details>\n\n/calibrate-est-time"
    assert parse(body) == Command(grammar.CALIBRATE, line="/calibrate-est-time")


@pytest.mark.parametrize("body, entity", [
    (f"&#47;run-rocm {SUITE}", "&#47;"), (f"&#x2F;run-rocm {SUITE}", "&#x2F;"), ("&sol;approve-rocm", "&sol;"),
    (f"&#x200B;/run-rocm {SUITE}", "&#x200B;"), ("/approve&#45;rocm", "&#45;"), ("&#47;calibrate-est-time", "&#47;"),
])
def test_an_html_entity_gets_the_look_alike_reply(body, entity):
    assert refused(body) == (f"the command is written with the HTML entity `{entity}`, which GitHub shows as a "
                             "character: commands are plain text")
    assert parse(body).word is None


def test_an_entity_in_the_arguments_is_refused_too():
    assert parse(f"/run-rocm {SUITE}&#47;x") != Command(RUN, suite=f"{SUITE}/x", line=f"/run-rocm {SUITE}/x")


def test_the_calibration_command_is_one_of_the_words():
    assert parse("/calibrate-est-time") == Command(grammar.CALIBRATE, line="/calibrate-est-time")
    assert "takes no arguments" in refused("/calibrate-est-time now")
    assert parse("`/calibrate-est-time`") is None
    from bot.worker.handlers.calibration import is_calibrate_command

    assert is_calibrate_command("please\n\n/calibrate-est-time")
    for hidden in ("<!-- /calibrate-est-time -->", "    /calibrate-est-time", "<pre>/calibrate-est-time</pre>",
                   "<details>\n\n/calibrate-est-time\n\n</details>", "![/calibrate-est-time](x.png)", "/run-rocm x"):
        assert not is_calibrate_command(hidden), hidden
