"""Routes: apps (listing for users, registration for admins)."""

from __future__ import annotations

import structlog
from fastapi import APIRouter, Response, status

from app.backends.boinc.check import AppRefused, check_new_app
from app.backends.boinc.context import describe
from app.backends.boinc.errors import BoincError
from app.config import Settings
from app.deps import AdminDep, ReadSessionDep, SessionDep, SettingsDep, UserDep
from app.errors import (
    AppExists,
    AppForbidden,
    AppNotFound,
    BoincAppMismatch,
    Forbidden,
    Unavailable,
    responses,
)
from app.schemas import AppIn, AppName, AppOut
from app.services import apps as svc

log = structlog.get_logger(__name__)

router = APIRouter(prefix="/v1/apps", tags=["apps"])


@router.get("", operation_id="list_apps", responses=responses())
def list_apps(session: ReadSessionDep, user: UserDep) -> list[AppOut]:
    """The apps you may use."""
    return [svc.app_out(a) for a in svc.list_apps(session, user=user)]


@router.get("/{name}", operation_id="get_app", responses=responses(AppNotFound, AppForbidden))
def get_app(name: str, session: ReadSessionDep, user: UserDep) -> AppOut:
    """One app: its inputs, outputs and limits."""
    return svc.app_out(svc.get_app_for_user_or_404(session, name=name, user=user))


@router.post(
    "",
    operation_id="create_app",
    status_code=status.HTTP_201_CREATED,
    responses=responses(Forbidden, AppExists, BoincAppMismatch),
)
def create_app(body: AppIn, session: SessionDep, settings: SettingsDep, _admin: AdminDep) -> AppOut:
    """Register an app (admin). With the boinc backend, the BOINC app must exist and its
    templates must agree with the app's inputs and outputs."""
    _check_backend(settings, body)
    return svc.app_out(svc.create_app(session, data=body))


@router.put(
    "/{name}",
    operation_id="put_app",
    responses={
        **responses(Forbidden, BoincAppMismatch),
        201: {"description": "Created", "model": AppOut},
    },
)
def put_app(
    name: AppName,
    body: AppIn,
    session: SessionDep,
    settings: SettingsDep,
    _admin: AdminDep,
    response: Response,
) -> AppOut:
    """Create or replace an app (admin); checked against BOINC as for registration."""
    _check_backend(settings, body.model_copy(update={"name": name}))
    app, created = svc.put_app(session, name=name, data=body)
    if created:
        response.status_code = status.HTTP_201_CREATED
    return svc.app_out(app)


@router.delete(
    "/{name}",
    operation_id="delete_app",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=responses(Forbidden, AppNotFound),
)
def delete_app(name: str, session: SessionDep, _admin: AdminDep) -> None:
    """Withdraw an app from new submissions; existing batches keep running (admin)."""
    svc.delete_app(session, name=name)


def _check_backend(settings: Settings, body: AppIn) -> None:
    """With the boinc backend, ask the project about the app before anything is written
    (no transaction is open during the round trip)."""
    if settings.backend != "boinc":
        return
    try:
        if not check_new_app(settings, svc.transient_app(body)):
            log.info("app.not_checked", app=body.name, reason="no BGW_BOINC_AUTHENTICATOR")
    except AppRefused as exc:
        raise BoincAppMismatch(str(exc), app=body.name) from exc
    except BoincError as exc:
        raise Unavailable(
            f"BOINC could not be asked about app {body.name} ({describe(exc)}); "
            "nothing was registered, retry later"
        ) from exc
