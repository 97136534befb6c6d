"""The measurements table (migration 0002): one row per attempt of one test file in one job, and
the SQL that reads and writes it: idempotent inserts, the window and its statistics, lookups.

bot/durations/ (ingest, query, export) turns logs and files into rows and rows into exports; it never writes SQL itself.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Mapped, Session, mapped_column
from sqlalchemy.types import TypeDecorator

from bot.store.db import Base, session_scope, upgrade
from checks.calibration.policy import UNMERGED_EVENTS
from checks.calibration.estimates import CalibrationParams, DurationStats, duration_stats, elapsed_problem

UNKNOWN_HARDWARE = "unknown"
NATURAL_KEY = ("repository", "run_id", "job_id", "file", "attempt")


class UTCDateTime(TypeDecorator):
    """Aware UTC datetimes in and out, on SQLite (which keeps no zone) and PostgreSQL alike."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        value = value.astimezone(timezone.utc)
        if dialect.name == "sqlite":
            value = value.replace(tzinfo=None)  # stored as UTC text, so comparisons stay lexical
        return value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class Measurement(Base):
    __tablename__ = "measurements"

    id: Mapped[int] = mapped_column(_ID, primary_key=True, autoincrement=True)
    repository: Mapped[str] = mapped_column(sa.String(200))
    file: Mapped[str] = mapped_column(sa.String(500))
    backend: Mapped[str] = mapped_column(sa.String(16))
    suite: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    hardware: Mapped[str] = mapped_column(sa.String(64))  # "unknown" when the labels do not say
    elapsed_s: Mapped[float] = mapped_column(sa.Float)
    outcome: Mapped[str] = mapped_column(sa.String(8))  # PASS | FAIL | TIMEOUT
    attempt: Mapped[int] = mapped_column(sa.Integer)
    exit_code: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    timeout_after_s: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    est_time: Mapped[float | None] = mapped_column(sa.Float, nullable=True)  # the runner's _estimated_time
    run_id: Mapped[int] = mapped_column(sa.BigInteger)
    job_id: Mapped[int] = mapped_column(sa.BigInteger)
    head_sha: Mapped[str | None] = mapped_column(sa.String(40), nullable=True)
    workflow: Mapped[str | None] = mapped_column(sa.String(300), nullable=True)
    runner_labels: Mapped[str | None] = mapped_column(sa.String(500), nullable=True)  # comma-separated
    measured_at: Mapped[datetime] = mapped_column(UTCDateTime())
    source: Mapped[str] = mapped_column(sa.String(255))  # job-log | json | csv | workflow_run:<owner>/<name> (migration 0010)
    # the workflow run's GitHub event (pull_request, push, schedule, ...): a PR head's run is not merged code
    event: Mapped[str | None] = mapped_column(sa.String(32), nullable=True)
    # the run's head branch and head repository (migration 0012): only the default branch's runs, never a fork's, calibrate
    head_branch: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    head_repository: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    ingested_at: Mapped[datetime] = mapped_column(UTCDateTime(), server_default=sa.func.now())

    __table_args__ = (
        sa.CheckConstraint("outcome IN ('PASS', 'FAIL', 'TIMEOUT')", name="ck_measurements_outcome"),
        sa.UniqueConstraint(*NATURAL_KEY, name="uq_measurements_natural"),
        sa.Index("ix_measurements_file_time", "repository", "file", "measured_at"),
    )


# Declared after the class for the DESC column (migration 0002 creates it).
sa.Index(
    "ix_measurements_pass_window",
    Measurement.repository, Measurement.hardware, Measurement.backend, Measurement.file,
    Measurement.measured_at.desc(), Measurement.elapsed_s, Measurement.suite, Measurement.est_time,
    sqlite_where=sa.text("outcome = 'PASS'"),
    postgresql_where=sa.text("outcome = 'PASS'"),
)


measurements = Measurement.__table__

_ready: set[str] = set()
_ready_lock = threading.Lock()


NO_STORE = ("no store at {path} yet: nothing has been recorded (the data directory is $CI_REGISTRAR_DATA_DIR, "
            "default ./data of the directory the command runs in; DATABASE_URL names another store)")


def sqlite_path(url: str) -> Path | None:
    """The file of an SQLite store URL (None: not SQLite, or in memory)."""
    if not url.startswith("sqlite"):
        return None
    path = url.split("///", 1)[-1] if "///" in url else ""
    return None if path in ("", ":memory:") or path.startswith("file:") else Path(path)


def open_for_reading(url: str) -> str | None:
    """The store for a read-only command, or None when the embedded SQLite file does not exist:
    reading never creates a store (an existing one is brought up to date first)."""
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return None
    ensure_store(url)
    return url


def ensure_store(url: str) -> None:
    """Create or upgrade the store on first use in this process (SQLite file or PostgreSQL)."""
    if url in _ready:
        return
    with _ready_lock:
        if url in _ready:
            return
        if url.startswith("postgresql"):
            upgrade(url)  # under the migration lock (bot.store.db.upgrade)
        else:
            with _file_lock(url):
                upgrade(url)
        _ready.add(url)


@contextmanager
def _file_lock(url: str):
    """Two commands starting at once on a fresh SQLite file must not both create its tables."""
    path = url.split("///", 1)[-1] if "///" in url else ""
    if not path or path == ":memory:":
        yield
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    lock_path = Path(path).with_name(Path(path).name + ".migrate-lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# -- the measurement SQL: inserts, windows and statistics, lookups -----------------------------
@contextmanager
def session_for(target: Session | str) -> Iterator[Session]:
    """The caller's session (its transaction), or one transaction on a store URL."""
    if isinstance(target, Session):
        yield target
        return
    ensure_store(target)
    with session_scope(target) as session:
        yield session




def _is_retryable(exc: DBAPIError) -> bool:
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return code in ("40P01", "40001")  # deadlock detected, serialization failure




def insert_rows(target: Session | str, rows: list[dict]) -> int:
    """Insert rows, skipping those already stored; returns how many were new. One transaction."""
    if not rows:
        return 0
    for row in rows:  # the readers refuse them with their line or item first; this is the last guard
        if elapsed_problem(row["elapsed_s"]):
            raise ValueError(f"{row['file']}: {elapsed_problem(row['elapsed_s'])}: not stored")
    # A global order on the natural key: concurrent writers take row locks in the same order and
    # cannot deadlock each other.
    rows.sort(key=lambda r: tuple(r[k] for k in NATURAL_KEY))
    attempts = 1 if isinstance(target, Session) else 3
    for attempt in range(attempts):
        try:
            with session_for(target) as session:
                return _insert(session, rows)
        except DBAPIError as exc:
            if attempt + 1 == attempts or not _is_retryable(exc):
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")




_INSERT_COLUMNS = [c.name for c in measurements.c if c.name not in ("id", "ingested_at")]


def _insert(session: Session, rows: list[dict]) -> int:
    """INSERT ... ON CONFLICT (natural key) DO NOTHING; returns the number of new rows."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        return _insert_postgresql(session, rows)
    if dialect != "sqlite":  # pragma: no cover - the store supports SQLite and PostgreSQL only
        raise RuntimeError(f"unsupported database dialect {dialect}")
    from sqlalchemy.dialects.sqlite import insert

    # executemany: sqlite3 sums the rows really inserted into rowcount (ignored conflicts add 0).
    stmt = insert(measurements).on_conflict_do_nothing(index_elements=list(NATURAL_KEY))
    return int(session.execute(stmt, rows).rowcount)


def _insert_postgresql(session: Session, rows: list[dict]) -> int:
    # One statement per 5,000 rows, its columns sent as arrays and unnested server-side:
    # several times faster than a multi-row VALUES list (which PostgreSQL must parse and plan),
    # and RETURNING counts exactly the rows this transaction inserted.
    from sqlalchemy.dialects.postgresql import ARRAY, insert

    inserted = 0
    for start in range(0, len(rows), 5000):
        chunk = rows[start:start + 5000]
        columns = []
        for name in _INSERT_COLUMNS:
            if name == "measured_at":
                values, item_type = [utc(r[name]) for r in chunk], sa.DateTime(timezone=True)
            else:
                values, item_type = [r.get(name) for r in chunk], measurements.c[name].type
            columns.append(sa.func.unnest(sa.bindparam(f"v_{name}", value=values, type_=ARRAY(item_type))).label(name))
        stmt = (
            insert(measurements)
            .from_select(_INSERT_COLUMNS, sa.select(*columns))
            .on_conflict_do_nothing(index_elements=list(NATURAL_KEY))
            .returning(measurements.c.id)
        )
        inserted += len(session.execute(stmt).all())
    return inserted




@dataclass
class StatRow:
    repository: str
    file: str
    backend: str
    suite: str | None
    hardware: str
    n: int
    median: float | None
    p90: float | None
    max: float | None
    since: datetime | None  # the oldest measurement in the window
    latest: datetime | None
    est_time: float | None  # the latest est_time the runner logged for the file
    values: list[float] | None = None  # the window's passing durations (a lowered est_time's cut, REG020)

    @property
    def stats(self) -> DurationStats:
        return DurationStats(self.n, self.median, self.p90, self.max)

    def as_json(self, details: bool = False) -> dict:
        """`durations show --format json`'s object; details adds repository, since, latest, est_time."""
        out = {"file": self.file, "backend": self.backend, "suite": self.suite, "hardware": self.hardware,
               "n": self.n, "median": self.median, "p90": self.p90, "max": self.max}
        if details:
            out.update(repository=self.repository, since=iso(self.since), latest=iso(self.latest),
                       est_time=self.est_time)
        return out




def stats_select(
    *,
    repository: str | None = None,
    file: str | None = None,
    suite: str | None = None,
    backend: str | None = None,
    hardware: str | None = None,
    window_runs: int = 10,
    window_days: float = 30,
    now: datetime | None = None,
    dialect: str = "sqlite",
    merged_only: bool = False,
) -> sa.Select:
    """The window and its aggregates in one query.

    Passing attempts ranked newest first per (repository, hardware, backend, file), the first
    window_runs of them within window_days days, grouped: n, max, oldest and newest time, the
    newest row's suite and est_time, and the percentiles (PostgreSQL's percentile_cont is numpy's
    linear interpolation; SQLite has none, so it hands back the window's values to compute them).
    """
    since = utc(now) - timedelta(days=window_days)
    m = measurements.c
    rank = sa.func.row_number().over(
        partition_by=(m.repository, m.hardware, m.backend, m.file), order_by=m.measured_at.desc()
    )
    # A literal, not a bound parameter: SQLite uses a partial index only for a literal match.
    where = [sa.text("measurements.outcome = 'PASS'"), m.measured_at >= since]
    for column, value in ((m.repository, repository), (m.file, file), (m.suite, suite), (m.backend, backend),
                          (m.hardware, hardware)):
        if value is not None:
            where.append(column == value)
    if merged_only:
        where.append(_merged_code(m))
    w = (
        sa.select(m.repository, m.hardware, m.backend, m.file, m.elapsed_s, m.measured_at, m.suite,
                  m.est_time, rank.label("rn"))
        .where(*where)
        .subquery("w")
    )
    if dialect == "postgresql":
        values = (
            sa.func.percentile_cont(0.5).within_group(w.c.elapsed_s).label("median"),
            sa.func.percentile_cont(0.9).within_group(w.c.elapsed_s).label("p90"),
            sa.func.array_agg(w.c.elapsed_s).label("values"),
        )
    else:
        values = (sa.func.group_concat(w.c.elapsed_s).label("values"),)
    return (
        sa.select(
            w.c.repository, w.c.hardware, w.c.backend, w.c.file,
            sa.func.count().label("n"),
            sa.func.max(w.c.elapsed_s).label("max"),
            sa.func.min(w.c.measured_at).label("since"),
            sa.func.max(w.c.measured_at).label("latest"),
            sa.func.max(sa.case((w.c.rn == 1, w.c.suite))).label("suite"),
            sa.func.max(sa.case((w.c.rn == 1, w.c.est_time))).label("est_time"),
            *values,
        )
        .where(w.c.rn <= int(window_runs))
        .group_by(w.c.repository, w.c.hardware, w.c.backend, w.c.file)
    )






def _merged_code(m):
    """Rows of merged code: neither an on-demand run nor a pull request head's (docs/calibration.md)."""
    return sa.and_(sa.not_(m.source.like("on-demand%")),
                   sa.or_(m.event.is_(None), m.event.not_in(UNMERGED_EVENTS)))


def floor_stats(
    target: Session | str,
    *,
    repository: str | None = None,
    hardware: str | None = None,
    params: Any = None,
    now: datetime | None = None,
) -> dict[tuple[str, str, str, str], dict]:
    """Per (repository, hardware, backend, file): what the calibration policy reads beside the window.

    slowest: the slowest passing run within floor_days; timeouts and timed_out_at: the TIMEOUT
    attempts within window_days and the longest of them (the limit they hit). Runs of unmerged
    code count only with include_unmerged, as in the window.
    """
    params = params or CalibrationParams()
    now = utc(now)
    window_start = now - timedelta(days=float(params.window_days))
    floor_start = now - timedelta(days=float(max(params.floor_days, params.window_days)))
    m = measurements.c
    timed_out = sa.and_(m.outcome == "TIMEOUT", m.measured_at >= window_start)
    where = [m.measured_at >= floor_start, m.outcome.in_(("PASS", "TIMEOUT"))]
    for column, value in ((m.repository, repository), (m.hardware, hardware)):
        if value is not None:
            where.append(column == value)
    if not params.include_unmerged:
        where.append(_merged_code(m))
    query = (
        sa.select(
            m.repository, m.hardware, m.backend, m.file,
            sa.func.max(sa.case((m.outcome == "PASS", m.elapsed_s))).label("slowest"),
            sa.func.count(sa.case((timed_out, 1))).label("timeouts"),
            sa.func.max(sa.case((timed_out, sa.func.coalesce(m.timeout_after_s, m.elapsed_s)))).label("timed_out_at"),
        )
        .where(*where)
        .group_by(m.repository, m.hardware, m.backend, m.file)
    )
    with session_for(target) as session:
        return {(r.repository, r.hardware, r.backend, r.file): {"slowest": r.slowest, "timeouts": int(r.timeouts or 0),
                                                                "timed_out_at": r.timed_out_at}
                for r in session.execute(query)}


def query_stats(
    target: Session | str,
    *,
    repository: str | None = None,
    file: str | None = None,
    suite: str | None = None,
    backend: str | None = None,
    hardware: str | None = None,
    window_runs: int | None = None,
    window_days: float | None = None,
    params: Any = None,
    now: datetime | None = None,
    merged_only: bool = False,
) -> list[StatRow]:
    """n, median, p90, max per (repository, file, backend, hardware) over the last window_runs
    passing runs within window_days days (defaults from params, else the `calibration:` defaults
    of checks/config/schema.py: 10 runs, 30 days).

    The database filters, ranks (ROW_NUMBER over the partial PASS index) and aggregates; rows
    come sorted by repository, file, backend, hardware.
    """
    params = params or CalibrationParams()
    runs = int(window_runs if window_runs is not None else getattr(params, "window_runs", 10))
    days = float(window_days if window_days is not None else getattr(params, "window_days", 30))
    out = []
    with session_for(target) as session:
        dialect = session.get_bind().dialect.name
        query = stats_select(repository=repository, file=file, suite=suite, backend=backend, hardware=hardware,
                             window_runs=runs, window_days=days, now=now, dialect=dialect, merged_only=merged_only)
        for row in session.execute(query):
            if dialect == "postgresql":
                median, p90, values = row.median, row.p90, [float(v) for v in row.values]
            else:
                values = [float(v) for v in row.values.split(",")]
                st = duration_stats(values)
                median, p90 = st.median, st.p90
            out.append(StatRow(row.repository, row.file, row.backend, row.suite, row.hardware, row.n,
                               median, p90, row.max, utc(row.since), utc(row.latest), row.est_time, values))
    out.sort(key=lambda r: (r.repository, r.file, r.backend, r.hardware))
    return out




def latest_est_times(target: Session | str, repository: str) -> dict[tuple[str, str], float]:
    """The latest est_time the runner logged per (file, backend) in one repository."""
    m = measurements.c
    rank = sa.func.row_number().over(partition_by=(m.file, m.backend), order_by=(m.measured_at.desc(), m.id.desc()))
    inner = (sa.select(m.file, m.backend, m.est_time, rank.label("rn"))
             .where(m.repository == repository, m.est_time.is_not(None)).subquery())
    with session_for(target) as session:
        rows = session.execute(sa.select(inner.c.file, inner.c.backend, inner.c.est_time).where(inner.c.rn == 1))
        return {(f, b): e for f, b, e in rows}




def repositories(target: Session | str) -> list[str]:
    with session_for(target) as session:
        return list(session.scalars(sa.select(measurements.c.repository).distinct().order_by(measurements.c.repository)))




def iso(value: datetime | None) -> str | None:
    return None if value is None else utc(value).isoformat().replace("+00:00", "Z")


def utc(value: datetime | None) -> datetime:
    if value is None:
        return datetime.now(timezone.utc)
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)




def select_measurements(target: Session | str, *, repository: str | None = None, file: str | None = None,
                        backend: str | None = None, hardware: str | None = None,
                        by_repository: bool = False, since: datetime | None = None,
                        outcomes: tuple[str, ...] | None = None) -> list[Measurement]:
    """Stored attempts, oldest first (by repository first, for an export), filtered as asked."""
    stmt = sa.select(Measurement)
    if since is not None:
        stmt = stmt.where(Measurement.measured_at >= utc(since))
    if outcomes:
        stmt = stmt.where(Measurement.outcome.in_(outcomes))
    for column, value in ((Measurement.repository, repository), (Measurement.file, file),
                          (Measurement.backend, backend), (Measurement.hardware, hardware)):
        if value:
            stmt = stmt.where(column == value)
    order = (Measurement.repository,) if by_repository else ()
    stmt = stmt.order_by(*order, Measurement.measured_at, Measurement.id)
    with session_for(target) as session:
        return list(session.scalars(stmt))
