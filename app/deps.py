"""Typed dependency aliases: settings, sessions, the caller, the file store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session

from app.config import Settings
from app.db import Database
from app.errors import Forbidden, Unauthorized
from app.models import User
from app.services import users as users_svc
from app.services.store import FileStore

_bearer = HTTPBearer(auto_error=False, description="A user token (`Authorization: Bearer ...`)")


def get_db(request: Request) -> Database:
    """The database owned by the app's lifespan."""
    db: Database = request.app.state.db
    return db


def get_settings_dep(request: Request) -> Settings:
    """The app's settings."""
    settings: Settings = request.app.state.settings
    return settings


def get_store(request: Request) -> FileStore:
    """The content store."""
    store: FileStore = request.app.state.store
    return store


DbDep = Annotated[Database, Depends(get_db)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
StoreDep = Annotated[FileStore, Depends(get_store)]


def get_session(db: DbDep) -> Iterator[Session]:
    """A write session; it commits before the response is sent (dependency scope ``function``)."""
    with db.session() as session:
        yield session


def get_read_session(db: DbDep) -> Iterator[Session]:
    """A read-only session."""
    with db.read_session() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session, scope="function")]
ReadSessionDep = Annotated[Session, Depends(get_read_session, scope="function")]


def get_user(
    request: Request,
    db: DbDep,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> User:
    """The caller, from the bearer token (401 otherwise)."""
    if creds is None or creds.scheme.lower() != "bearer":
        raise Unauthorized("send Authorization: Bearer <token>")
    with db.read_session() as session:
        user = users_svc.authenticate(session, token=creds.credentials)
    if user is None:
        raise Unauthorized("the token is not valid")
    request.state.user = user.name
    return user


UserDep = Annotated[User, Depends(get_user)]


def get_admin(user: UserDep) -> User:
    """The caller, who must be an admin (403 otherwise)."""
    if not user.admin:
        raise Forbidden("this route is for admins")
    return user


AdminDep = Annotated[User, Depends(get_admin)]
