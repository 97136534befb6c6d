"""When each repository's calibration pull request was last refreshed (migration 0009), what that
refresh decided per file, and a refresh a durations ingest asked for (migration 0011)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, Float, Integer, String, Text, select
from sqlalchemy.orm import Mapped, mapped_column

from bot.store.db import Base, dialect_insert, session_scope


class CalibrationRun(Base):
    __tablename__ = "calibration_runs"

    repository: Mapped[str] = mapped_column(String(200), primary_key=True)
    last_run_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    outcome: Mapped[str] = mapped_column(String(32))
    pull_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    every_days: Mapped[float] = mapped_column(Float)  # the repository's calibration.pull_request_every_days then
    # JSON: the REG020 verdict of each calibrated file at that refresh (bot.worker.calibration_pr.verdicts)
    verdicts: Mapped[str | None] = mapped_column(Text, nullable=True)
    requested_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)  # due now
    ingest_request_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


def _utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value


def due(url: str, repositories: list[str], now: dt.datetime, default_days: float = 7) -> list[str]:
    """The repositories whose last refresh is older than their interval (or that never had one),
    or for which an ingest asked for one."""
    with session_scope(url) as session:
        last = {r: (_utc(t), days, asked) for r, t, days, asked in session.execute(
            select(CalibrationRun.repository, CalibrationRun.last_run_at, CalibrationRun.every_days,
                   CalibrationRun.requested_at)
            .where(CalibrationRun.repository.in_(repositories)))}
    return [r for r in repositories
            if r not in last or last[r][2] is not None or now - last[r][0] >= dt.timedelta(days=last[r][1] or default_days)]


def record(url: str, repository: str, outcome: str, pull_number: int | None, now: dt.datetime,
           every_days: float = 7, verdicts: str | None = None) -> None:
    """A refresh done: its outcome and verdicts (kept from before when it decided none), and no
    request left pending."""
    with session_scope(url) as session:
        values = dict(repository=repository, last_run_at=now, outcome=outcome, pull_number=pull_number,
                      every_days=every_days, requested_at=None)
        if verdicts is not None:
            values["verdicts"] = verdicts
        stmt = dialect_insert(session)(CalibrationRun).values(**values)
        session.execute(stmt.on_conflict_do_update(
            index_elements=["repository"], set_={c: stmt.excluded[c] for c in values if c != "repository"}))


def last_verdicts(url: str, repository: str) -> tuple[str | None, dt.datetime | None]:
    """(verdicts JSON of the last refresh, when an ingest last asked for a refresh)."""
    with session_scope(url) as session:
        row = session.execute(select(CalibrationRun.verdicts, CalibrationRun.ingest_request_at)
                              .where(CalibrationRun.repository == repository)).first()
    if row is None:
        return None, None
    return row[0], _utc(row[1]) if row[1] is not None else None


def request(url: str, repository: str, seen_verdicts: str, now: dt.datetime, every: dt.timedelta) -> bool:
    """Ask for a refresh now, in one transaction on the repository's row (locked): only if its
    verdicts are still the ones the caller judged against and no ingest asked within `every`.
    True: asked, by this call and no other."""
    with session_scope(url) as session:
        row = session.execute(select(CalibrationRun).where(CalibrationRun.repository == repository)
                              .with_for_update()).scalar_one_or_none()
        if row is None or row.verdicts != seen_verdicts:
            return False
        if row.ingest_request_at is not None and now - _utc(row.ingest_request_at) < every:
            return False
        row.requested_at, row.ingest_request_at = now, now
        return True
