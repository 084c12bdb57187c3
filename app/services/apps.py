"""Apps: registration by admins, visibility per user (``allowed_users``)."""

from __future__ import annotations

from sqlalchemy import select
from sqlmodel import Session, col

from app.errors import AppExists, AppForbidden, AppNotFound
from app.models import App, User
from app.schemas import AppIn, AppOut, AppOutput, BoincSpec, JobParams, LocalSpec
from app.services.common import now


def _values(data: AppIn) -> dict[str, object]:
    return {
        "name": data.name,
        "description": data.description,
        "inputs": list(data.inputs),
        "outputs": [o.model_dump() for o in data.output_specs()],
        "allowed_users": data.allowed_users,
        "local": data.local.model_dump(exclude_none=True) if data.local else None,
        "boinc": data.boinc.model_dump(exclude_none=True) if data.boinc else None,
        "params": data.params.model_dump(exclude_none=True),
    }


def transient_app(data: AppIn) -> App:
    """The app ``data`` describes, not (yet) in any session: what checks look at."""
    return App.model_validate({**_values(data), "created_at": now()})


def get_app(session: Session, *, name: str) -> App | None:
    """The enabled app called ``name``."""
    app: App | None = (
        session.execute(select(App).where(col(App.name) == name, col(App.disabled).is_(False)))
        .scalars()
        .first()
    )
    return app


def may_use(app: App, user: User) -> bool:
    """True when ``user`` may see and submit to ``app``."""
    return user.admin or app.allowed_users is None or user.name in app.allowed_users


def get_app_for_user_or_404(session: Session, *, name: str, user: User) -> App:
    """The app, or 404 if it does not exist, 403 ``app_forbidden`` if the user may not use it."""
    app = get_app(session, name=name)
    if app is None:
        raise AppNotFound(f"no app named {name}", app=name)
    if not may_use(app, user):
        raise AppForbidden(f"you may not use app {name}", app=name)
    return app


def list_apps(session: Session, *, user: User) -> list[App]:
    """Apps the user may use, by name."""
    apps = session.execute(
        select(App).where(col(App.disabled).is_(False)).order_by(col(App.name))
    ).scalars()
    return [a for a in apps if may_use(a, user)]


def create_app(session: Session, *, data: AppIn) -> App:
    """Register an app (409 ``app_exists`` when the name is taken)."""
    existing: App | None = (
        session.execute(select(App).where(col(App.name) == data.name)).scalars().first()
    )
    if existing is not None and not existing.disabled:
        raise AppExists(f"app {data.name} exists", app=data.name)
    if existing is not None:
        # A deleted app keeps its row (old batches refer to it); registering again revives it.
        return replace_app(session, app=existing, data=data)
    app = transient_app(data)
    session.add(app)
    session.flush()
    return app


def replace_app(session: Session, *, app: App, data: AppIn) -> App:
    """Overwrite an app's definition (PUT)."""
    for key, value in _values(data).items():
        setattr(app, key, value)
    app.disabled = False
    session.add(app)
    session.flush()
    return app


def put_app(session: Session, *, name: str, data: AppIn) -> tuple[App, bool]:
    """Create or replace ``name``; returns (app, created)."""
    if data.name != name:
        data = data.model_copy(update={"name": name})
    existing: App | None = (
        session.execute(select(App).where(col(App.name) == name)).scalars().first()
    )
    if existing is None:
        return create_app(session, data=data), True
    return replace_app(session, app=existing, data=data), False


def delete_app(session: Session, *, name: str) -> None:
    """Hide an app from new submissions; batches that use it keep working."""
    app = get_app(session, name=name)
    if app is None:
        raise AppNotFound(f"no app named {name}", app=name)
    app.disabled = True
    session.add(app)
    session.flush()


def app_out(app: App) -> AppOut:
    """The public view of an app."""
    return AppOut(
        name=app.name,
        description=app.description,
        inputs=list(app.inputs),
        outputs=[AppOutput.model_validate(o) for o in app.outputs],
        allowed_users=app.allowed_users,
        local=LocalSpec.model_validate(app.local) if app.local else None,
        boinc=BoincSpec.model_validate(app.boinc) if app.boinc else None,
        params=JobParams.model_validate(app.params),
        created_at=app.created_at,
    )
