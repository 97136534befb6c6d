"""Support for counting the store's transactions (no tests here).

`Transactions(url)` listens to every SQLAlchemy connection of the store at `url` and records each
transaction that ends in a commit: the tables it wrote (INSERT, UPDATE, DELETE) and the statuses
it set on rocm_requests. Reads commit too (bot.store.db.session_scope), they are kept apart. A
transaction begun and committed by hand (the budget reservation's `BEGIN IMMEDIATE` ... `COMMIT`
on SQLite) is seen through its statements.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from sqlalchemy import event
from sqlalchemy.engine import Engine

ONDEMAND_TABLES = frozenset({"rocm_requests", "audit_log", "ondemand_steps"})
_SETS_STATUS = re.compile(r"\bSET\b.*\bstatus\s*=", re.IGNORECASE | re.DOTALL)
_WRITE = re.compile(r"^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+\"?(\w+)\"?", re.IGNORECASE)


@dataclass
class Transaction:
    tables: set = field(default_factory=set)
    statuses: int = 0  # rows of rocm_requests inserted or given a status

    @property
    def changes_state(self) -> bool:
        """A request's status set (made, or changed) or an audit entry written."""
        return bool(self.statuses) or "audit_log" in self.tables


class Transactions:
    def __init__(self, url: str):
        self.url = url
        self.committed: list[Transaction] = []
        self._open: dict[int, Transaction] = {}
        self._lock = threading.Lock()

    # -- what was counted ------------------------------------------------------------------------
    def writes(self, tables=ONDEMAND_TABLES) -> list[Transaction]:
        """The committed transactions that wrote any of `tables`."""
        return [t for t in self.committed if t.tables & set(tables)]

    def state_changes(self) -> list[Transaction]:
        """The committed transactions that set a request's status or wrote an audit entry (not a
        step claim alone, nor the recording of a check run's id)."""
        return [t for t in self.committed if t.changes_state]

    def summary(self) -> list[str]:
        return ["+".join(sorted((t.tables & ONDEMAND_TABLES) | ({"status"} if t.statuses else set())))
                for t in self.writes()]

    # -- listening -------------------------------------------------------------------------------
    def _mine(self, conn) -> bool:
        return str(conn.engine.url) == str(self.url) or conn.engine.url.render_as_string(False) == self.url

    @staticmethod
    def _key(conn) -> int:
        return id(conn.connection.dbapi_connection)

    def _statement(self, conn, _cursor, statement, _params, _context, _many):
        if not self._mine(conn):
            return
        text = statement.strip().upper()
        with self._lock:
            if text in ("COMMIT", "END"):
                self._end(conn, True)
            elif text == "ROLLBACK":
                self._end(conn, False)
            else:
                m = _WRITE.match(statement)
                if m:
                    t = self._open.setdefault(self._key(conn), Transaction())
                    table = m.group(1).lower()
                    t.tables.add(table)
                    if table == "rocm_requests" and (text.startswith("INSERT") or _SETS_STATUS.search(statement)):
                        t.statuses += 1

    def _end(self, conn, committed: bool) -> None:
        t = self._open.pop(self._key(conn), None)
        self.committed.append(t or Transaction()) if committed else None

    def _commit(self, conn):
        if self._mine(conn):
            with self._lock:
                self._end(conn, True)

    def _rollback(self, conn):
        if self._mine(conn):
            with self._lock:
                self._end(conn, False)

    def __enter__(self):
        event.listen(Engine, "before_cursor_execute", self._statement)
        event.listen(Engine, "commit", self._commit)
        event.listen(Engine, "rollback", self._rollback)
        return self

    def __exit__(self, *exc):
        event.remove(Engine, "before_cursor_execute", self._statement)
        event.remove(Engine, "commit", self._commit)
        event.remove(Engine, "rollback", self._rollback)
        return False
