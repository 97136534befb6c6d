"""The registration index (migration 0006): what the engine learnt from each file, by content.

A scan of one file (its registrations, parse outcome and the facts the rules need) depends only on
the file's bytes and the contract it is read against (checks/scanning/scan_facts.py), so every worker keeps
it here under (repository, scan key): the key digests the git blob SHA, the contract fingerprint
and the engine's facts version. A check then reads from GitHub only the blobs the index lacks,
and an App upgrade that changes what a scan holds (ENGINE_FACTS_VERSION) simply misses every old
row, which ages out. Rows are kept per repository: one tenant's facts never answer another's.

Bounded by age (rows unused for CI_REGISTRAR_INDEX_MAX_AGE_DAYS, default 30) and by size
(CI_REGISTRAR_INDEX_MAX_MB of facts, default 256, oldest use first), enforced as rows are added.
Two workers filling the same key at once both insert; the second insert is a no-op (the facts
are equal by construction). The index is a cache: a store error here is logged by the caller and
the check goes on reading from GitHub.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from bot.store.db import Base, dialect_insert, session_scope
from checks.scanning.scan_facts import decode
from bot.store.measurements import UTCDateTime

MAX_FACTS_BYTES = 256 * 1024  # one file's facts are a few hundred bytes; larger is not kept
TOUCH_AFTER = dt.timedelta(hours=6)  # a hit refreshes used_at at most this often (fewer writes)
_BATCH = 500  # keys per SELECT (IN lists stay small for both databases)


class IndexRow(Base):
    __tablename__ = "registration_index"

    repository: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    key: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    facts: Mapped[str] = mapped_column(sa.Text)
    size: Mapped[int] = mapped_column(sa.Integer)
    used_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def limits_from_env(environ=None) -> tuple[int, int]:
    """(max age in days, max bytes) from CI_REGISTRAR_INDEX_MAX_AGE_DAYS / CI_REGISTRAR_INDEX_MAX_MB."""
    env = os.environ if environ is None else environ
    out = []
    for name, default in (("CI_REGISTRAR_INDEX_MAX_AGE_DAYS", 30), ("CI_REGISTRAR_INDEX_MAX_MB", 256)):
        raw = env.get(name, "")
        if raw.strip() and (not raw.strip().isdigit() or int(raw) < 1):
            raise ValueError(f"{name}={raw!r}: expected a whole number of at least 1")
        out.append(int(raw) if raw.strip() else default)
    return out[0], out[1] * 1024 * 1024


class RegistrationIndex:
    """checks.engine's scan-cache hook (get_many/put_many) over the store, for one repository."""

    _prune_lock = threading.Lock()
    _added_since_prune = 0
    PRUNE_EVERY = 2000  # rows added (per process) between two size checks

    def __init__(self, url: str, repository: str, *, max_age_days: int | None = None, max_bytes: int | None = None):
        env_age, env_bytes = limits_from_env()
        self.url, self.repository = url, repository
        self.max_age = dt.timedelta(days=max_age_days or env_age)
        self.max_bytes = max_bytes or env_bytes
        self.hits = self.misses = self.writes = 0

    def get_many(self, keys) -> dict[str, dict]:
        texts = self.get_texts(keys)
        # an unreadable row is a miss, overwritten when its file is scanned again
        out = {key: value for key, text in texts.items() if (value := decode(text)) is not None}
        self.hits -= len(texts) - len(out)
        self.misses += len(texts) - len(out)
        return out

    def get_texts(self, keys) -> dict[str, str]:
        """The stored facts of `keys` as their JSON text, undecoded: the PR check's analysis child
        decodes them (checks.scanning.scan_facts.decode), so the worker neither decodes nor pickles
        them (issue 38: the decode was a fifth of the worker's CPU for a warm check). A row found
        counts as a hit."""
        keys = [k for k in dict.fromkeys(keys) if isinstance(k, str) and len(k) <= 64]
        out: dict[str, str] = {}
        stale: list[str] = []
        now = _now()
        with session_scope(self.url) as session:
            for at in range(0, len(keys), _BATCH):
                rows = session.execute(sa.select(IndexRow.key, IndexRow.facts, IndexRow.used_at).where(
                    IndexRow.repository == self.repository, IndexRow.key.in_(keys[at:at + _BATCH]))).all()
                for key, facts, used_at in rows:
                    out[key] = facts
                    if now - used_at > TOUCH_AFTER:
                        stale.append(key)
            for at in range(0, len(stale), _BATCH):
                session.execute(sa.update(IndexRow).where(IndexRow.repository == self.repository,
                                                          IndexRow.key.in_(stale[at:at + _BATCH])).values(used_at=now))
        self.hits += len(out)
        self.misses += len(keys) - len(out)
        return out

    def put_many(self, entries: dict[str, dict]) -> None:
        rows = []
        now = _now()
        for key, facts in entries.items():
            text = json.dumps(facts, separators=(",", ":"), sort_keys=True)
            if len(text) <= MAX_FACTS_BYTES and len(key) <= 64:
                rows.append({"repository": self.repository, "key": key, "facts": text, "size": len(text), "used_at": now})
        if not rows:
            return
        with session_scope(self.url) as session:
            insert = dialect_insert(session)
            for at in range(0, len(rows), _BATCH):
                batch = rows[at:at + _BATCH]
                # A row under the same key was unreadable (get_many skipped it): replace it. A
                # concurrent writer's row holds equal facts: replacing it changes nothing.
                statement = insert(IndexRow).values(batch)
                session.execute(statement.on_conflict_do_update(
                    index_elements=[IndexRow.repository, IndexRow.key],
                    set_={"facts": statement.excluded.facts, "size": statement.excluded.size,
                          "used_at": statement.excluded.used_at}))
        self.writes += len(rows)
        with RegistrationIndex._prune_lock:
            RegistrationIndex._added_since_prune += len(rows)
            due = RegistrationIndex._added_since_prune >= self.PRUNE_EVERY
            if due:
                RegistrationIndex._added_since_prune = 0
        if due:
            prune(self.url, self.max_age, self.max_bytes)


def prune(url: str, max_age: dt.timedelta, max_bytes: int) -> int:
    """Drop rows unused for `max_age`, then the least recently used until the facts fit `max_bytes`."""
    removed = 0
    with session_scope(url) as session:
        removed += session.execute(sa.delete(IndexRow).where(IndexRow.used_at < _now() - max_age)).rowcount or 0
        total = session.scalar(sa.select(sa.func.coalesce(sa.func.sum(IndexRow.size), 0))) or 0
        while total > max_bytes:
            oldest = session.execute(sa.select(IndexRow.repository, IndexRow.key, IndexRow.size)
                                     .order_by(IndexRow.used_at).limit(1000)).all()
            if not oldest:
                break
            for repository, key, size in oldest:
                if total <= max_bytes * 9 // 10:
                    break
                session.execute(sa.delete(IndexRow).where(IndexRow.repository == repository, IndexRow.key == key))
                total -= size
                removed += 1
            else:
                continue
            break
    return removed
