"""Each pull request's newest head (migration 0006), so a check of a push that is no longer the
PR's head stops spending GitHub calls and never writes a verdict nobody will look at.

Noted when a pull_request delivery is accepted (bot/webhooks.py: before any worker picks up an
older queued job) and again when its job starts. "Newer" is GitHub's own clock for the PR:
`pull_request.updated_at` moves with every push; two events of one second keep the one noted
last. A store that cannot answer means "not superseded": the check runs, as before.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from bot.store.db import Base, get_engine, session_scope
from bot.store.measurements import UTCDateTime

PUSH_ACTIONS = ("opened", "reopened", "synchronize")


class PullRequestHead(Base):
    __tablename__ = "pull_request_heads"

    repository: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    number: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    head_sha: Mapped[str] = mapped_column(sa.String(64))
    updated_at: Mapped[str] = mapped_column(sa.String(40))  # GitHub's ISO 8601 UTC: sorts as text
    noted_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)


def note(url: str, repository: str, number: int, head_sha: str, updated_at: str) -> None:
    """Record this head unless a newer one (a later updated_at) is recorded already."""
    if not (repository and isinstance(number, int) and head_sha and updated_at):
        return
    row = {"repository": repository[:200], "number": number, "head_sha": head_sha[:64], "updated_at": updated_at[:40],
           "noted_at": dt.datetime.now(dt.timezone.utc)}
    if get_engine(url).dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    statement = insert(PullRequestHead).values(row)
    with session_scope(url) as session:
        session.execute(statement.on_conflict_do_update(
            index_elements=[PullRequestHead.repository, PullRequestHead.number],
            set_={"head_sha": statement.excluded.head_sha, "updated_at": statement.excluded.updated_at,
                  "noted_at": statement.excluded.noted_at},
            where=PullRequestHead.updated_at <= statement.excluded.updated_at))


def note_delivery(url: str, event: str, data: dict) -> None:
    """From an accepted delivery's payload: a push to a PR (opened, reopened, synchronize)."""
    if event != "pull_request" or data.get("action") not in PUSH_ACTIONS:
        return
    pr = data.get("pull_request") or {}
    repo = (data.get("repository") or {}).get("full_name")
    sha = (pr.get("head") or {}).get("sha")
    if isinstance(repo, str) and isinstance(sha, str) and isinstance(pr.get("updated_at"), str):
        note(url, repo, pr.get("number"), sha, pr["updated_at"])


def newer_head(url: str, repository: str, number: int, head_sha: str, updated_at: str | None) -> str | None:
    """The PR's newer head when one was pushed after `head_sha` (at `updated_at`), else None."""
    if not updated_at:
        return None
    with session_scope(url) as session:
        row = session.get(PullRequestHead, (repository, number))
        if row is None or row.head_sha == head_sha or row.updated_at < updated_at:
            return None
        return row.head_sha
