"""Engines and sessions: SQLite pragmas (WAL, busy timeout, foreign keys), write vs read."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import psycopg
from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlmodel import Session

if TYPE_CHECKING:
    from app.config import Settings


def db_unavailable(exc: BaseException) -> bool:
    """The database cannot be reached now (down, connection lost, locked past the busy
    timeout, pool exhausted): a condition to wait out, not a bug."""
    if isinstance(exc, OperationalError | PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


class _DeadlineConnection(psycopg.Connection[Any]):
    """A psycopg connection on which no wait for the server lasts longer than ``deadline``.

    A server that accepts bytes but never answers (hung, or behind a network that drops
    packets) would otherwise block a request forever: TCP keepalives are answered by the
    kernel of whatever sits in between. Past the deadline the connection is closed (the pool
    discards it) and the call fails as unavailable, which the routes turn into a 503.
    """

    deadline: float = 30.0

    @classmethod
    def open(cls, deadline: float, *args: Any, **kwargs: Any) -> _DeadlineConnection:
        """Connect (the attempt itself bounded by ``connect_timeout``, whole seconds, at
        least 2) and keep ``deadline`` for every later wait."""
        kwargs.setdefault("connect_timeout", max(2, math.ceil(deadline)))
        conn = cls.connect(*args, **kwargs)
        conn.deadline = deadline
        return conn

    def wait(self, gen: Any, interval: float | None = None, timeout: float | None = None) -> Any:
        # psycopg's default interval unless one is given
        kw: dict[str, float] = {} if interval is None else {"interval": interval}
        if timeout is not None:
            # psycopg's own bounded waits (notifies, cancellation) expect its timeout error.
            return super().wait(gen, timeout=timeout, **kw)
        try:
            return super().wait(gen, timeout=self.deadline, **kw)
        except psycopg.errors._WaitTimeout as exc:  # psycopg's own deadline error
            self.close()
            raise psycopg.OperationalError(
                f"the database did not answer within {self.deadline:g} s"
            ) from exc


# PostgreSQL channel on which dispatchers hear that there is work (see Database.notify).
DISPATCH_CHANNEL = "bgw_dispatch"


def driver_url(url: str) -> str:
    """``url`` with the driver this package installs: a bare ``postgresql://`` (or
    ``postgres://``) would make SQLAlchemy load psycopg2; it gets psycopg (3)."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    return url


def _postgres_engine(url: str, deadline: float) -> Engine:
    parsed = make_url(driver_url(url))
    engine = create_engine(
        parsed,
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=20,
        # A request waits for a pooled connection no longer than for the database itself.
        pool_timeout=deadline,
    )
    if parsed.get_driver_name() != "psycopg":
        return engine

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        return _DeadlineConnection.open(deadline, *cargs, **cparams)

    return engine


def _sqlite_engine(url: str, *, immediate: bool) -> Engine:
    # How long a writer waits for the lock before "database is locked" (a 503): 30 s, or
    # the URL's ``?timeout=`` (seconds), which the driver would otherwise be overridden on.
    raw = make_url(url).query.get("timeout", "30")
    timeout = float(raw[-1] if isinstance(raw, tuple) else raw)
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": timeout},
        # Pooled: the pragmas below run once per connection, not once per request.
        pool_size=10,
        max_overflow=20,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # The driver must not issue its own BEGIN: we emit ours in "begin" below.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # Write transactions take the write lock up front: no upgrade deadlocks (SQLITE_BUSY).
        conn.exec_driver_sql(begin)

    return engine


class Database:
    """The write engine and, for SQLite, a separate engine whose transactions only read."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        """``timeout``: how long any one wait for PostgreSQL may last before the call fails
        as unavailable (SQLite: its busy timeout, from the URL's ``?timeout=``, applies)."""
        self.url = url
        self.timeout = timeout
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            self.engine = _sqlite_engine(url, immediate=True)
            self.read_engine = _sqlite_engine(url, immediate=False)
        else:
            self.engine = _postgres_engine(url, timeout)
            self.read_engine = self.engine

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A write session: committed on success, rolled back on error."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    @contextmanager
    def read_session(self) -> Iterator[Session]:
        """A session for reads only (SQLite: no write lock is taken)."""
        with Session(self.read_engine, expire_on_commit=False) as session:
            try:
                yield session
            finally:
                # Detach before ending the transaction so returned rows stay readable.
                session.expunge_all()
                session.rollback()

    @classmethod
    def for_settings(cls, settings: Settings) -> Database:
        """The database the settings name, with their deadline."""
        return cls(settings.resolved_database_url, timeout=settings.db_timeout_seconds)

    def notify(self) -> None:
        """Tell every dispatcher on this PostgreSQL database to look for work now, instead
        of after its idle pause (SQLite: nothing; its dispatchers share the process)."""
        if self.is_sqlite:
            return
        with self.engine.connect() as conn:
            conn.exec_driver_sql(f"NOTIFY {DISPATCH_CHANNEL}")
            conn.commit()

    def listener(self) -> psycopg.Connection[Any] | None:
        """A connection of its own (autocommit, same deadline) that LISTENs on the
        dispatch channel; None for SQLite or a driver other than psycopg."""
        if self.is_sqlite:
            return None
        parsed = make_url(driver_url(self.url))
        if parsed.get_driver_name() != "psycopg":
            return None
        conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        conn = _DeadlineConnection.open(self.timeout, conninfo, autocommit=True)
        conn.execute(f"LISTEN {DISPATCH_CHANNEL}")
        return conn

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()
        if self.read_engine is not self.engine:
            self.read_engine.dispose()
