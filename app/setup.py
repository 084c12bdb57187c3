"""Start-up preparation: migrate, bootstrap the first admin, register the example apps."""

from __future__ import annotations

import structlog
from sqlalchemy import func, select

from app.config import Settings
from app.db import Database
from app.migrate import upgrade
from app.models import App, User
from app.schemas import UserCreate
from app.services import apps as apps_svc
from app.services import users as users_svc

log = structlog.get_logger(__name__)


def prepare(db: Database, settings: Settings) -> None:
    """Bring the schema up to date; on an empty database create the admin and example apps."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(db.url)
    with db.session() as session:
        if (
            settings.bootstrap_token
            and not session.execute(select(func.count()).select_from(User)).scalar_one()
        ):
            users_svc.create_user(
                session, data=UserCreate(name="admin", admin=True), token=settings.bootstrap_token
            )
            log.info("bootstrap.admin_created", user="admin")
        if (
            settings.backend == "local"
            and settings.register_examples
            and not session.execute(select(func.count()).select_from(App)).scalar_one()
        ):
            from app.examples import example_apps

            for spec in example_apps():
                apps_svc.create_app(session, data=spec)
            log.info("examples.registered", apps=[a.name for a in example_apps()])
