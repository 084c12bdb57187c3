"""Routes: apps (listing for users, registration for admins)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.deps import AdminDep, ReadSessionDep, SessionDep, UserDep
from app.errors import AppExists, AppForbidden, AppNotFound, Forbidden, responses
from app.schemas import AppIn, AppName, AppOut
from app.services import apps as svc

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
    responses=responses(Forbidden, AppExists),
)
def create_app(body: AppIn, session: SessionDep, _admin: AdminDep) -> AppOut:
    """Register an app (admin)."""
    return svc.app_out(svc.create_app(session, data=body))


@router.put(
    "/{name}",
    operation_id="put_app",
    responses={**responses(Forbidden), 201: {"description": "Created", "model": AppOut}},
)
def put_app(
    name: AppName, body: AppIn, session: SessionDep, _admin: AdminDep, response: Response
) -> AppOut:
    """Create or replace an app (admin)."""
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
