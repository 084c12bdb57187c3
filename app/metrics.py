"""Prometheus metrics and the pure-ASGI middleware that records requests by route template."""

from __future__ import annotations

import time
import uuid

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REGISTRY = CollectorRegistry()
REQUESTS = Counter(
    "bgw_http_requests_total", "HTTP requests", ["method", "route", "status"], registry=REGISTRY
)
LATENCY = Histogram(
    "bgw_http_request_seconds", "HTTP request latency", ["method", "route"], registry=REGISTRY
)
JOBS = Gauge("bgw_jobs", "Jobs by state", ["state"], registry=REGISTRY)
QUEUE = Gauge("bgw_queue_depth", "Queued jobs of submitted batches", registry=REGISTRY)
BACKEND_ERRORS = Counter(
    "bgw_backend_errors_total",
    "Errors talking to or running on the backend",
    ["backend"],
    registry=REGISTRY,
)
JOBS_FINISHED = Counter(
    "bgw_jobs_finished_total",
    "Jobs that reached a terminal state through a backend",
    ["backend", "state"],
    registry=REGISTRY,
)

log = structlog.get_logger("app.access")


def _route_template(scope: Scope) -> str:
    # The router stores the matched route in the scope; its path is the template.
    route = scope.get("route")
    return str(getattr(route, "path", None) or "unmatched")


class RequestMiddleware:
    """Binds a request id, logs one line per request, records metrics by route template."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        rid = headers.get(b"x-request-id", b"").decode("latin-1")[:64] or uuid.uuid4().hex
        status = 500
        start = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode())]
            await send(message)

        structlog.contextvars.bind_contextvars(request_id=rid)
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            elapsed = time.perf_counter() - start
            route = _route_template(scope)
            method = scope["method"]
            REQUESTS.labels(method, route, str(status)).inc()
            LATENCY.labels(method, route).observe(elapsed)
            state = scope.get("state") or {}
            log.info(
                "request",
                method=method,
                route=route,
                status=status,
                ms=round(elapsed * 1000, 1),
                user=state.get("user"),
            )
            structlog.contextvars.unbind_contextvars("request_id")
