"""create_app(): the FastAPI application; its lifespan owns the database, store and dispatcher."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import structlog
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import __version__
from app.api import apps, batches, files, health, jobs, users
from app.config import Settings, get_settings
from app.db import Database
from app.errors import (
    InvalidRequest,
    Problem,
    ServiceError,
    Unavailable,
    from_status,
    responses,
)
from app.metrics import RequestMiddleware
from app.services.store import FileStore
from app.setup import prepare

log = structlog.get_logger(__name__)
STATIC = Path(__file__).parent / "static"


def _problem(err: ServiceError) -> JSONResponse:
    headers = dict(err.headers or {})
    if err.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(
        err.to_problem(),
        status_code=err.status,
        media_type="application/problem+json",
        headers=headers,
    )


class WakeDispatcher:
    """After a successful change to batches or jobs (submit, abort, lease, ...), wake this
    process's dispatcher: it acts at once instead of after its idle pause. The response
    starts only after the request's transaction committed, so the dispatcher sees it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in ("POST", "PUT", "DELETE")
            or not scope["path"].startswith(("/v1/batches", "/v1/jobs"))
            or scope["path"].endswith("/query")  # a read, however many there are
        ):
            await self.app(scope, receive, send)
            return

        changed = False

        async def send_wrapper(message: Message) -> None:
            nonlocal changed
            if message["type"] == "http.response.start" and message["status"] < 400:
                changed = True
                dispatcher = getattr(scope["app"].state, "dispatcher", None)
                if dispatcher is not None:
                    dispatcher.wake()
            await send(message)

        await self.app(scope, receive, send_wrapper)
        db: Database | None = getattr(scope["app"].state, "db", None)
        if changed and db is not None and not db.is_sqlite:
            # Dispatchers of other processes (workers) hear of it too; the response is out.
            try:
                await anyio.to_thread.run_sync(db.notify)
            except Exception as exc:
                log.warning("dispatch.notify_failed", error=str(exc)[:200])


def create_app(settings: Settings | None = None, *, run_dispatcher: bool = True) -> FastAPI:
    """Build the application (the dispatcher runs in-process unless told otherwise)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = Database.for_settings(settings)
        store = FileStore(settings.store_dir)
        prepare(db, settings)
        app.state.db, app.state.store, app.state.settings = db, store, settings
        dispatcher = None
        if run_dispatcher:
            from app.dispatcher import Dispatcher

            dispatcher = Dispatcher(db, store, settings)
            dispatcher.start()
            app.state.dispatcher = dispatcher
        log.info("service.started", backend=settings.backend, database=db.url.split("://")[0])
        try:
            yield
        finally:
            if dispatcher is not None:
                dispatcher.stop()
            db.dispose()

    app = FastAPI(
        title="boinc-gateway",
        version=__version__,
        summary="REST gateway to BOINC: content-addressed files, batches and jobs.",
        description=(
            "Upload input files by MD5, submit batches of jobs of a registered app, follow "
            "them by change cursor, download outputs. Every error the service raises is "
            "application/problem+json with a stable `code`; malformed requests get FastAPI's "
            "422 validation error."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.add_middleware(WakeDispatcher)
    app.add_middleware(RequestMiddleware)

    @app.exception_handler(ServiceError)
    async def _service_error(_req: Request, exc: ServiceError) -> JSONResponse:
        return _problem(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_req: Request, exc: StarletteHTTPException) -> JSONResponse:
        err = from_status(exc.status_code, str(exc.detail))
        err.headers = dict(exc.headers or {})
        return _problem(err)

    @app.exception_handler(OperationalError)
    async def _db_down(_req: Request, exc: OperationalError) -> JSONResponse:
        log.warning("database.unavailable", error=type(exc.orig).__name__)
        return _problem(Unavailable("the database is unavailable; retry later"))

    @app.exception_handler(DBAPIError)
    async def _db_error(_req: Request, exc: DBAPIError) -> JSONResponse:
        if exc.connection_invalidated:
            return _problem(Unavailable("the database connection was lost; retry later"))
        raise exc

    for module in (health, users, apps, files, batches, jobs):
        app.include_router(module.router)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="boinc-gateway",
            swagger_js_url="/static/swagger-ui-bundle.js",
            swagger_css_url="/static/swagger-ui.css",
            swagger_favicon_url="/static/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json",
            title="boinc-gateway",
            redoc_js_url="/static/redoc.standalone.js",
            redoc_favicon_url="/static/favicon.png",
            with_google_fonts=False,
        )

    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        schema.setdefault("components", {}).setdefault("schemas", {})["Problem"] = (
            Problem.model_json_schema()
        )
        bad_body = responses(InvalidRequest)[400]
        for item in schema.get("paths", {}).values():
            # A HEAD answer never has a body; declaring one breaks generated clients.
            for resp in item.get("head", {}).get("responses", {}).values():
                resp.pop("content", None)
            # A body that is not even parseable is refused (400) before validation runs.
            for op in item.values():
                if "application/json" not in op.get("requestBody", {}).get("content", {}):
                    continue
                if "400" not in op["responses"]:
                    op["responses"]["400"] = dict(bad_body)
                elif "invalid_request" not in op["responses"]["400"]["description"]:
                    codes = op["responses"]["400"]["description"].split("(code: ", 1)[1]
                    op["responses"]["400"]["description"] = f"Error (code: invalid_request, {codes}"
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
