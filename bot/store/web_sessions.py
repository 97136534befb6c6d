"""Signed-in sessions (migration 0005): the browser holds only a random id in a signed cookie; what
the person may see (installations and repositories, as GitHub listed them at sign-in) stays here."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from bot.store.db import Base, session_scope
from bot.store.measurements import UTCDateTime

TTL = dt.timedelta(hours=8)  # as long as GitHub's user access tokens live


class WebSession(Base):
    __tablename__ = "web_sessions"

    id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)  # sha256 of the cookie's secret
    login: Mapped[str] = mapped_column(sa.String(100))
    installations_json: Mapped[str] = mapped_column("installations", sa.Text)
    repositories_json: Mapped[str] = mapped_column("repositories", sa.Text)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)

    @property
    def installations(self) -> set[int]:
        return set(json.loads(self.installations_json))

    @property
    def repositories(self) -> set[str]:
        return set(json.loads(self.repositories_json))


def _key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create(url: str, login: str, installations, repositories) -> str:
    """A new session; returns the secret for the cookie (the store keeps only its hash)."""
    secret = secrets.token_urlsafe(32)
    now = dt.datetime.now(dt.timezone.utc)
    with session_scope(url) as session:
        session.execute(sa.delete(WebSession).where(WebSession.expires_at < now))
        session.add(WebSession(id=_key(secret), login=login, installations_json=json.dumps(sorted(installations)),
                               repositories_json=json.dumps(sorted(repositories)), created_at=now,
                               expires_at=now + TTL))
    return secret


def get(url: str, secret: str | None) -> WebSession | None:
    if not secret:
        return None
    with session_scope(url) as session:
        row = session.get(WebSession, _key(secret))
        if row is None or row.expires_at < dt.datetime.now(dt.timezone.utc):
            return None
        return row


def delete(url: str, secret: str | None) -> None:
    if secret:
        with session_scope(url) as session:
            session.execute(sa.delete(WebSession).where(WebSession.id == _key(secret)))
