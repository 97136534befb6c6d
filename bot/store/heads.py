"""Each pull request's newest head (migration 0006), so a check of a push that is no longer the
PR's head stops spending GitHub calls and never writes a verdict nobody will look at.

Noted when any push's job starts, and, for a `synchronize` delivery, already when the intake
accepts it (bot/web/webhooks.py), so a job of an older push still queued for that PR learns of it
before it starts. The intake never writes to the store itself: a store write per delivery cut the
intake to a third of its rate (bench/ingress.py --action synchronize). It hands the note to an
in-process buffer (NoteBuffer), which a background thread writes in one transaction every
FLUSH_S, the newest head per PR only. "Newer" is GitHub's own clock for the PR:
`pull_request.updated_at` moves with every push; two events of one second keep the one noted
last. A store that cannot answer means "not superseded": the check runs, as before, and a note
the buffer could not write only loses that saving.
"""

from __future__ import annotations

import datetime as dt
import threading

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from bot.store.db import Base, dialect_insert, session_scope
from bot.store.measurements import UTCDateTime

PUSH_ACTIONS = ("opened", "reopened", "synchronize")
FLUSH_S = 0.2


class PullRequestHead(Base):
    __tablename__ = "pull_request_heads"

    repository: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    number: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    head_sha: Mapped[str] = mapped_column(sa.String(64))
    updated_at: Mapped[str] = mapped_column(sa.String(40))  # GitHub's ISO 8601 UTC: sorts as text
    noted_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)


def note(url: str, repository: str, number: int, head_sha: str, updated_at: str) -> None:
    """Record this head unless a newer one (a later updated_at) is recorded already."""
    note_many(url, [(repository, number, head_sha, updated_at)])


_MAX_NUMBER = 2**31 - 1  # the column is an Integer: PostgreSQL refuses more, and the whole batch with it


def _storable(repo, number, sha, updated_at) -> bool:
    """A row both stores hold: the column types and sizes, ASCII text (GitHub's names, SHAs and
    timestamps are; no NUL, which PostgreSQL refuses, no lone surrogate, which no driver encodes).
    The intake's schema bounds these already; a caller that skipped it loses only its own row."""
    return (isinstance(repo, str) and 0 < len(repo) <= 200 and repo.isascii() and repo.isprintable()
            and type(number) is int and 1 <= number <= _MAX_NUMBER
            and isinstance(sha, str) and 0 < len(sha) <= 64 and sha.isascii() and sha.isalnum()
            and isinstance(updated_at, str) and 0 < len(updated_at) <= 40 and updated_at.isascii()
            and updated_at.isprintable())


def note_many(url: str, heads: list[tuple[str, int, str, str]]) -> None:
    """Record each (repository, number, head_sha, updated_at), in one transaction. A row the store
    cannot hold is left out before the write: one bad row never drops the others."""
    now = dt.datetime.now(dt.timezone.utc)
    rows = [{"repository": repo, "number": number, "head_sha": sha, "updated_at": updated_at, "noted_at": now}
            for repo, number, sha, updated_at in heads if _storable(repo, number, sha, updated_at)]
    if rows:
        _upsert(url, rows)


def _upsert(url: str, rows: list[dict]) -> None:
    with session_scope(url) as session:
        insert = dialect_insert(session)
        for row in rows:
            statement = insert(PullRequestHead).values(row)
            session.execute(statement.on_conflict_do_update(
                index_elements=[PullRequestHead.repository, PullRequestHead.number],
                set_={"head_sha": statement.excluded.head_sha, "updated_at": statement.excluded.updated_at,
                      "noted_at": statement.excluded.noted_at},
                where=PullRequestHead.updated_at <= statement.excluded.updated_at))


class NoteBuffer:
    """Heads noted by the intake, written by a background thread of this process every FLUSH_S."""

    def __init__(self, flush_s: float = FLUSH_S):
        self.flush_s = flush_s
        self._pending: dict[tuple[str, str, int], tuple[str, str]] = {}  # (url, repo, number) -> (sha, updated_at)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = None

    def add(self, url: str, repository: str, number: int, head_sha: str, updated_at: str) -> None:
        key = (url, repository, number)
        with self._lock:
            known = self._pending.get(key)
            if known is None or known[1] <= updated_at:
                self._pending[key] = (head_sha, updated_at)
            self._ensure_thread()
        self._wake.set()

    def _ensure_thread(self) -> None:
        import os

        if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
            self._pid = os.getpid()  # a forked web worker starts its own
            self._thread = threading.Thread(target=self._run, name="pr-head-notes", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            self.flush()
            threading.Event().wait(self.flush_s)  # notes arriving meanwhile go in the next batch

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        by_url: dict[str, list[tuple[str, int, str, str]]] = {}
        for (url, repo, number), (sha, updated_at) in pending.items():
            by_url.setdefault(url, []).append((repo, number, sha, updated_at))
        for url, heads in by_url.items():
            try:
                note_many(url, heads)
            except Exception as exc:  # noqa: BLE001 - only the saving is lost
                from bot.infra.logging import get_logger

                get_logger("ci_registrar.web").warning("could not note PR heads", error=type(exc).__name__,
                                                       notes=len(heads))


BUFFER = NoteBuffer()


def note_delivery(url: str, event: str, data: dict) -> None:
    """From an accepted delivery's payload: a push to an open PR's branch (`synchronize`), the only
    event that can put a newer head behind a job already queued for the same PR, handed to BUFFER.
    Opened and reopened are noted by their own job (bot/worker/handlers/pull_requests.py)."""
    if event != "pull_request" or data.get("action") != "synchronize":
        return
    pr, repository = _mapping(data.get("pull_request")), _mapping(data.get("repository"))
    repo, sha = repository.get("full_name"), _mapping(pr.get("head")).get("sha")
    if _storable(repo, pr.get("number"), sha, pr.get("updated_at")):
        BUFFER.add(url, repo, pr["number"], sha, pr["updated_at"])


def _mapping(value) -> dict:
    """A payload's object, or {} for anything else (the intake's schema checked the fields a
    handler needs, not the ones only this note reads)."""
    return value if isinstance(value, dict) else {}


def newer_head(url: str, repository: str, number: int, head_sha: str, updated_at: str | None) -> str | None:
    """The PR's newer head when one was pushed after `head_sha` (at `updated_at`), else None."""
    if not updated_at or not _storable(repository, number, head_sha, updated_at):
        return None  # no such row can exist (PostgreSQL would refuse even the lookup)
    with session_scope(url) as session:
        row = session.get(PullRequestHead, (repository, number))
        if row is None or row.head_sha == head_sha or row.updated_at < updated_at:
            return None
        return row.head_sha


def noted_head(url: str, repository: str, number: int) -> tuple[str, str] | None:
    """(head SHA, GitHub's `updated_at` when it was pushed) as noted for the PR, or None."""
    with session_scope(url) as session:
        row = session.get(PullRequestHead, (repository, number))
        return None if row is None else (row.head_sha, row.updated_at)
