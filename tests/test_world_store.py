"""The test worlds' store (tests/service_support.migrated) against migrating afresh: a copied
template must be exactly the store the migrations make, or every in-process world tests another schema."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from bot.store.db import current_revision, upgrade
from tests.service_support import migrated


def _schema(path) -> list[tuple]:
    """Each table's and index's definition, its columns and constraints as a set: Alembic's batch
    migrations (SQLite rebuilds a table to alter it) write a table's constraints in an order that
    differs between processes (a set's, by hash seed), which is the same schema."""
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return sorted((kind, name, table, _definition(sql)) for kind, name, table, sql in rows)


def _definition(sql: str | None):
    if not sql or "(" not in sql:
        return sql
    head, body = sql.split("(", 1)
    return head.strip(), frozenset(part.strip().rstrip(",") for part in body.rsplit(")", 1)[0].split("\n") if part.strip())


def _rows(path, table: str) -> list[tuple]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(f'SELECT * FROM "{table}"').fetchall()


def test_a_world_store_is_the_store_the_migrations_make(tmp_path):
    fresh, first, copied = tmp_path / "fresh.db", tmp_path / "first.db", tmp_path / "copied.db"
    upgrade(f"sqlite:///{fresh}")
    migrated(f"sqlite:///{first}")  # this process's first world may have migrated already: either way
    migrated(f"sqlite:///{copied}")
    for path in (first, copied):
        assert _schema(path) == _schema(fresh), path
        assert current_revision(f"sqlite:///{path}") == current_revision(f"sqlite:///{fresh}")
        tables = [name for kind, name, _, _ in _schema(fresh) if kind == "table"]
        # Rows the migrations seed (alembic_version among them) and nothing a world wrote.
        assert {t: _rows(path, t) for t in tables} == {t: _rows(fresh, t) for t in tables}, path


def test_a_template_holds_nothing_its_first_world_wrote_later(tmp_path):
    from tests import service_support

    first = tmp_path / "first.db"
    saved = list(service_support._MIGRATED_SQLITE)
    service_support._MIGRATED_SQLITE.clear()  # as in a new process: this world makes the template
    try:
        migrated(f"sqlite:///{first}")
        with closing(sqlite3.connect(first)) as conn, conn:
            conn.execute("CREATE TABLE written_by_a_world (x)")
        later = tmp_path / "later.db"
        migrated(f"sqlite:///{later}")
        assert "written_by_a_world" not in [name for _, name, _, _ in _schema(later)]
    finally:
        service_support._MIGRATED_SQLITE[:] = saved
