"""bot/ondemand/seen.py on its own: whether the PR's head now was its head when a command was
written, from GitHub's clocks (the head repository's pushed_at, the noted push's updated_at) and the
store of noted heads (bot/store/heads.py), every boundary of whole seconds pinned. The flows that use
it are in tests/bot/ondemand/test_ondemand_security.py; these pin each branch fast enough for bench/mutation.py."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.ondemand.seen import Unseen, parse_time, unseen_head
from bot.store import heads

REPO, NUMBER = "radixark/miles", 7
A, B = "a" * 40, "b" * 40
T0 = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.timezone.utc)


def iso(at: dt.datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def later(seconds: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    from bot.store.db import upgrade

    from bot.store.db import get_engine

    path = tmp_path_factory.mktemp("seen") / "template.db"
    upgrade(f"sqlite:///{path}")
    get_engine(f"sqlite:///{path}").dispose()  # the last connection closed: the WAL is in the file
    return path


@pytest.fixture()
def url(tmp_path, migrated):
    """A fresh store per test: a copy of one migrated database (migrating each time takes a second)."""
    import shutil

    shutil.copy(migrated, tmp_path / "seen.db")
    return f"sqlite:///{tmp_path / 'seen.db'}"


def pull(head: str, pushed_at: str | None = None, updated_at: str | None = None) -> dict:
    data = {"head": {"sha": head, "repo": {"pushed_at": pushed_at}}}
    if updated_at is not None:
        data["updated_at"] = updated_at
    return data


# -- parse_time -------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, expected", [
    ("2026-12-01T12:00:00Z", T0),
    ("2026-12-01T12:00:00+00:00", T0),
    ("2026-12-01T13:00:00+01:00", T0),
    ("2026-12-01T12:00:00", T0),  # no zone: GitHub's UTC
    ("", None), (None, None), (12, None), ("yesterday", None),
])
def test_parse_time(value, expected):
    parsed = parse_time(value)
    assert parsed == expected
    if parsed is not None:
        assert parsed.tzinfo is not None


# -- the head repository's pushed_at ----------------------------------------------------------------
def test_no_comment_time_is_never_seen(url):
    assert unseen_head(url, REPO, NUMBER, pull(A, iso(later(-600))), None) == Unseen(A, False)
    assert heads.noted_head(url, REPO, NUMBER) is None  # nothing noted on no evidence


def test_a_push_before_the_comment_is_seen(url):
    assert unseen_head(url, REPO, NUMBER, pull(A, iso(later(-1))), T0) is None


def test_a_push_in_the_comments_own_second_is_not_seen(url):
    # whole seconds: GitHub cannot tell which came first
    assert unseen_head(url, REPO, NUMBER, pull(A, iso(T0)), T0) == Unseen(A, False)


def test_a_push_after_the_comment_is_not_seen(url):
    assert unseen_head(url, REPO, NUMBER, pull(A, iso(later(5))), T0) == Unseen(A, False)


# -- the noted head ---------------------------------------------------------------------------------
def test_the_noted_head_pushed_before_the_comment_is_seen(url):
    heads.note(url, REPO, NUMBER, A, iso(later(-1)))
    assert unseen_head(url, REPO, NUMBER, pull(A, iso(later(5))), T0) is None


def test_the_noted_head_pushed_in_the_comments_second_moved(url):
    heads.note(url, REPO, NUMBER, A, iso(T0))
    assert unseen_head(url, REPO, NUMBER, pull(A, iso(later(5))), T0) == Unseen(A, True)


def test_the_noted_head_pushed_after_the_comment_moved(url):
    heads.note(url, REPO, NUMBER, A, iso(later(3)))
    assert unseen_head(url, REPO, NUMBER, pull(A, iso(later(5))), T0) == Unseen(A, True)


def test_the_noted_head_with_no_readable_time_is_not_known(url):
    heads.note(url, REPO, NUMBER, A, "not a time")
    assert unseen_head(url, REPO, NUMBER, pull(A), T0) == Unseen(A, False)


def test_an_older_noted_head_never_makes_a_new_head_seen(url):
    """B was noted before the comment; the head now is A, whose push was never noted: A is not
    seen, and it is noted now with the PR's updated_at, so the next command is bound to it."""
    heads.note(url, REPO, NUMBER, B, iso(later(-60)))
    assert unseen_head(url, REPO, NUMBER, pull(A, iso(later(5)), updated_at=iso(later(4))), T0) == Unseen(A, False)
    assert heads.noted_head(url, REPO, NUMBER) == (A, iso(later(4)))


def test_another_noted_head_pushed_at_or_after_the_comment_means_moved(url):
    for at in (T0, later(2)):
        heads.note(url, REPO, NUMBER + 1, B, iso(at))
    heads.note(url, REPO, NUMBER, B, iso(T0))
    assert unseen_head(url, REPO, NUMBER, pull(A, updated_at=iso(later(9))), T0) == Unseen(A, True)
    assert heads.noted_head(url, REPO, NUMBER) == (B, iso(T0))  # nothing noted on a head that moved
    assert unseen_head(url, REPO, NUMBER + 1, pull(A), T0) == Unseen(A, True)


def test_another_noted_head_with_no_readable_time_notes_this_one(url):
    heads.note(url, REPO, NUMBER, B, "")  # not storable: nothing noted
    heads.note(url, REPO, NUMBER, B, "zzz")
    assert unseen_head(url, REPO, NUMBER, pull(A, updated_at="zzzz"), T0) == Unseen(A, False)
    assert heads.noted_head(url, REPO, NUMBER) == (A, "zzzz")


def test_an_unnoted_head_is_noted_with_the_prs_updated_at(url):
    assert unseen_head(url, REPO, NUMBER, pull(A, None, updated_at=iso(later(1))), T0) == Unseen(A, False)
    assert heads.noted_head(url, REPO, NUMBER) == (A, iso(later(1)))
    # the next command, written after that, is bound to it
    assert unseen_head(url, REPO, NUMBER, pull(A, None), later(2)) is None


@pytest.mark.parametrize("data", [pull(A), pull(A, updated_at=""), {"head": {"sha": A}, "updated_at": 5},
                                  {"head": {}, "updated_at": iso(T0)}, {"updated_at": iso(T0)}])
def test_nothing_to_note_notes_nothing(url, data):
    assert unseen_head(url, REPO, NUMBER, data, T0) == Unseen(str((data.get("head") or {}).get("sha") or ""), False)
    assert heads.noted_head(url, REPO, NUMBER) is None


def test_a_store_that_cannot_answer_is_not_seen(tmp_path):
    broken = f"sqlite:///{tmp_path / 'missing' / 'none.db'}"  # no such directory: every call fails
    assert unseen_head(broken, REPO, NUMBER, pull(A, updated_at=iso(later(-5))), T0) == Unseen(A, False)


def test_pushed_at_before_the_comment_wins_over_a_later_noted_head(url):
    heads.note(url, REPO, NUMBER, A, iso(later(9)))
    assert unseen_head(url, REPO, NUMBER, pull(A, iso(later(-1))), T0) is None


def test_the_noted_head_with_no_readable_time_is_left_as_noted(url):
    """Not seen, and not noted again from the PR's updated_at: the noted push is this head's."""
    heads.note(url, REPO, NUMBER, A, "0-unreadable")
    assert unseen_head(url, REPO, NUMBER, pull(A, updated_at=iso(later(4))), T0) == Unseen(A, False)
    assert heads.noted_head(url, REPO, NUMBER) == (A, "0-unreadable")
