"""Routes: liveness, readiness, Prometheus metrics (no auth)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from app.deps import DbDep
from app.metrics import JOBS, QUEUE, REGISTRY
from app.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/healthz", operation_id="healthz")
def healthz() -> Health:
    """Liveness: the process answers."""
    return Health(status="ok")


@router.get(
    "/readyz",
    operation_id="readyz",
    responses={503: {"description": "Database or backend unreachable", "model": Health}},
)
def readyz(request: Request, db: DbDep) -> Response:
    """Readiness: the database (and the backend) answer."""
    checks: dict[str, str] = {}
    try:
        with db.read_session() as session:
            session.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:  # any driver error means "not ready"
        checks["database"] = f"error: {type(exc).__name__}"
    dispatcher = getattr(request.app.state, "dispatcher", None)
    if dispatcher is not None:
        checks["backend"] = dispatcher.backend.health()
    ok = all(v == "ok" for v in checks.values())
    body = Health(status="ok" if ok else "unavailable", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)


@router.get(
    "/metrics",
    operation_id="metrics",
    response_class=Response,
    responses={
        200: {
            "content": {"text/plain": {"schema": {"type": "string"}}},
            "description": "Prometheus text format",
        }
    },
)
def metrics(db: DbDep) -> Response:
    """Prometheus metrics: requests by route template, jobs by state, queue depth."""
    try:
        with db.read_session() as session:
            rows = session.execute(text("SELECT state, count(*) FROM jobs GROUP BY state")).all()
            queued = session.execute(
                text(
                    "SELECT count(*) FROM jobs j JOIN batches b ON b.id = j.batch_id "
                    "WHERE j.state = 'queued' AND b.state = 'in_progress'"
                )
            ).scalar_one()
        for state in ("queued", "in_progress", "done", "error", "aborted"):
            JOBS.labels(state).set(0)
        for state, n in rows:
            JOBS.labels(state).set(n)
        QUEUE.set(queued)
    except Exception:  # metrics must render even when the database is down
        pass
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
