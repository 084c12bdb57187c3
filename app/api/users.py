"""Routes: the caller's identity and the admin's user management."""

from __future__ import annotations

from fastapi import APIRouter, status

from app.deps import AdminDep, ReadSessionDep, SessionDep, SettingsDep, UserDep
from app.errors import Forbidden, InvalidRequest, UserExists, UserNotFound, responses
from app.schemas import Me, Quotas, UserCreate, UserOut, UserPatch, UserToken
from app.services import users as svc

router = APIRouter(prefix="/v1", tags=["users"])


@router.get("/me", operation_id="get_me", responses=responses())
def get_me(session: ReadSessionDep, user: UserDep) -> Me:
    """Who you are, your quotas and your usage."""
    return svc.me(session, user=user)


@router.post(
    "/users",
    operation_id="create_user",
    status_code=status.HTTP_201_CREATED,
    responses=responses(Forbidden, UserExists, InvalidRequest),
)
def create_user(
    body: UserCreate, session: SessionDep, _admin: AdminDep, settings: SettingsDep
) -> UserToken:
    """Create a user (admin); the token is shown once, here."""
    defaults = Quotas(
        max_active_jobs=settings.default_max_active_jobs,
        max_storage_bytes=settings.default_max_storage_bytes,
    )
    user, token = svc.create_user(session, data=body, default_quotas=defaults)
    return UserToken(name=user.name, token=token)


@router.get("/users", operation_id="list_users", responses=responses(Forbidden))
def list_users(session: ReadSessionDep, _admin: AdminDep) -> list[UserOut]:
    """Every user (admin)."""
    return [svc.user_out(u) for u in svc.list_users(session)]


@router.patch(
    "/users/{name}", operation_id="patch_user", responses=responses(Forbidden, UserNotFound)
)
def patch_user(name: str, body: UserPatch, session: SessionDep, _admin: AdminDep) -> UserOut:
    """Change a user's rights, quotas, BOINC authenticator, or disable them (admin)."""
    return svc.user_out(svc.patch_user(session, name=name, data=body))


@router.post(
    "/users/{name}/token",
    operation_id="rotate_user_token",
    responses=responses(Forbidden, UserNotFound),
)
def rotate_token(name: str, session: SessionDep, _admin: AdminDep) -> UserToken:
    """Issue a new token for a user; the old one stops working (admin)."""
    return UserToken(name=name, token=svc.rotate_token(session, name=name))


@router.delete(
    "/users/{name}",
    operation_id="disable_user",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=responses(Forbidden, UserNotFound),
)
def disable_user(name: str, session: SessionDep, _admin: AdminDep) -> None:
    """Disable a user: their token stops working; their data stays (admin)."""
    svc.patch_user(session, name=name, data=UserPatch(disabled=True))
