"""Helpers every service shares: time, dialect-aware inserts, the global change number."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import Table, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from app.errors import InvalidCursor

T = TypeVar("T")

# Keeps every statement under SQLite's bound-parameter limit and PostgreSQL's 65535.
CHUNK = 1000


def now() -> float:
    """Unix seconds."""
    return time.time()


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most ``size`` items."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def is_postgres(session: Session) -> bool:
    """True when the session talks to PostgreSQL."""
    return session.get_bind().dialect.name == "postgresql"


def table_of(model: type[Any]) -> Table:
    """The SQLAlchemy table behind a SQLModel table class."""
    table: Table = model.__table__
    return table


def insert_ignore(session: Session, model: type[Any], rows: list[dict[str, Any]]) -> None:
    """Bulk INSERT that skips rows whose key already exists."""
    if not rows:
        return
    ins = postgresql.insert if is_postgres(session) else sqlite.insert
    for part in chunks(rows, 500):
        session.execute(ins(table_of(model)).on_conflict_do_nothing(), list(part))


def lock_files(session: Session, md5s: Sequence[str]) -> dict[str, int]:
    """Which of ``md5s`` have a files row (md5 -> size), holding FOR SHARE locks until commit.

    Garbage collection locks rows FOR UPDATE before deleting, so a file this returns cannot
    vanish before the caller's transaction commits its reference (SQLite: writes are serial).
    """
    found: dict[str, int] = {}
    pg = is_postgres(session)
    for part in chunks(sorted(set(md5s))):
        if pg:
            sql = "SELECT md5, size FROM files WHERE md5 = ANY(:keys) FOR SHARE"
            rows = session.execute(text(sql), {"keys": list(part)})
        else:
            marks = ",".join(f":k{i}" for i in range(len(part)))
            rows = session.execute(
                text(f"SELECT md5, size FROM files WHERE md5 IN ({marks})"),
                {f"k{i}": k for i, k in enumerate(part)},
            )
        found.update((r[0], int(r[1])) for r in rows)
    return found


def bump_change(session: Session) -> int:
    """Take the next global change number; the row lock orders concurrent writers' commits."""
    return int(
        session.execute(
            text("UPDATE change_counter SET value = value + 1 WHERE id = 1 RETURNING value")
        ).scalar_one()
    )


def current_change(session: Session) -> int:
    """The last change number handed out (read it before the rows it will cursor over)."""
    return int(session.execute(text("SELECT value FROM change_counter WHERE id = 1")).scalar_one())


def encode_cursor(value: Any) -> str:
    """An opaque pagination cursor."""
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> Any:
    """Inverse of :func:`encode_cursor`; bad input is a 400 ``invalid_cursor``."""
    if not cursor:
        return None
    try:
        return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError as exc:
        raise InvalidCursor("cursor is not one this service issued", cursor=cursor[:100]) from exc


def decode_id_cursor(cursor: str | None) -> int | None:
    """An integer-id cursor from :func:`encode_cursor` (``invalid_cursor`` otherwise)."""
    value = decode_cursor(cursor)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidCursor(
            "cursor is not one this service issued", cursor=cursor[:100] if cursor else ""
        )
    return value


def parse_change_cursor(since: str | None) -> int:
    """A change cursor: the decimal string of a change number (``0``: everything)."""
    if since is None or since == "":
        return 0
    try:
        # GAHP clients may echo floats such as "1234.000000".
        value = int(float(since)) if "." in since else int(since)
    except ValueError as exc:
        raise InvalidCursor(f"since must be a change number, got {since[:50]!r}") from exc
    if value < 0:
        raise InvalidCursor("since must not be negative")
    return value
