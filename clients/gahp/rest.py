"""The gateway's REST API as the shim uses it (api.md section 4), over one httpx client.

Every call takes the `Project` (base URL + token) bound to the GAHP request, so several
projects can be served by one process. Failures of any kind become `GatewayError`, whose
text is safe to show to users (never the token).
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

USER_AGENT = "boinc-gahp/0.1"
CHUNK = 1024 * 1024
# Statuses where the request demonstrably did nothing and may simply be sent again.
_RETRY_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True)
class Project:
    """A gateway base URL and the bearer token of one user."""

    url: str
    token: str

    @property
    def base(self) -> str:
        """The base URL without its trailing slash."""
        return self.url.rstrip("/")


class GatewayError(Exception):
    """A failed call: transport error, problem+json reply or a malformed reply."""

    def __init__(
        self, message: str, *, status: int = 0, code: str = "", extra: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.extra: dict[str, Any] = extra or {}


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class AppOutput(_Model):
    """One output of an app."""

    name: str
    required: bool = True


class AppInfo(_Model):
    """GET /v1/apps/{app}."""

    name: str
    inputs: list[str]
    outputs: list[AppOutput] = []

    @field_validator("outputs", mode="before")
    @classmethod
    def _plain_names(cls, value: Any) -> Any:
        # The admin body allows bare names; accept them in replies too.
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value


class BatchSummary(_Model):
    """The summary of a batch."""

    name: str
    app: str
    state: str


class JobState(_Model):
    """A job name and state in a batch query."""

    name: str
    state: str


class BatchJobs(_Model):
    """One group of a batch query reply."""

    name: str
    jobs: list[JobState] = []


class JobPage(_Model):
    """One page of GET /v1/batches/{name}/jobs."""

    items: list[JobState]
    next_cursor: str | None = None


class QueryReply(_Model):
    """POST /v1/batches/query."""

    cursor: str
    batches: list[BatchJobs]

    @field_validator("cursor", mode="before")
    @classmethod
    def _cursor_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class FileInfo(_Model):
    """A named file of a job."""

    name: str
    md5: str | None = None
    size: int | None = None


class JobInfo(_Model):
    """GET /v1/jobs/{name}."""

    name: str
    state: str
    batch: str | None = None
    app: str | None = None
    outputs: list[FileInfo] = []
    exit_code: int | None = None
    wall_seconds: float | None = None
    cpu_seconds: float | None = None
    error: str | None = None


def _path(*parts: str) -> str:
    return "/".join(quote(part, safe="") for part in parts)


def _ssl_context() -> ssl.SSLContext | bool:
    # The gridmanager passes its CA settings in these variables (gahp.md 1.1).
    cafile = os.environ.get("GAHP_SSL_CAFILE") or os.environ.get("SOAP_SSL_CA_FILE")
    cadir = os.environ.get("GAHP_SSL_CADIR") or os.environ.get("SOAP_SSL_CA_DIR")
    if not cafile and not cadir:
        return True
    return ssl.create_default_context(cafile=cafile or None, capath=cadir or None)


class GatewayClient:
    """Thin async wrapper over the gateway routes the GAHP commands need."""

    def __init__(
        self, *, retries: int = 2, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._retries = retries
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(60.0, connect=10.0, pool=None),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=32),
            headers={"User-Agent": USER_AGENT},
            verify=_ssl_context(),
            transport=transport,
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def request(
        self,
        project: Project,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, str] | None = None,
    ) -> httpx.Response:
        """Send one request with a fully read body; raise GatewayError unless 2xx."""
        url = project.base + "/v1/" + path
        headers = {"Authorization": f"Bearer {project.token}"}
        for attempt in range(self._retries + 1):  # bounded retry loop
            try:
                response = await self._http.request(
                    method, url, json=json, params=params, headers=headers
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt == self._retries:
                    raise GatewayError(f"cannot reach {project.base}: {_describe(exc)}") from exc
            except httpx.HTTPError as exc:
                raise GatewayError(f"{method} {path} failed: {_describe(exc)}") from exc
            else:
                if response.status_code not in _RETRY_STATUSES or attempt == self._retries:
                    return _check(response)
            await asyncio.sleep(0.25 * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def me(self, project: Project) -> dict[str, Any]:
        """GET /v1/me."""
        return _json_object(await self.request(project, "GET", "me"))

    async def app(self, project: Project, name: str) -> AppInfo:
        """GET /v1/apps/{name}."""
        return _parse(AppInfo, await self.request(project, "GET", _path("apps", name)))

    async def create_batch(
        self, project: Project, *, name: str, app: str, params: dict[str, float]
    ) -> tuple[bool, BatchSummary]:
        """POST /v1/batches, left open; returns (created_now, summary)."""
        body: dict[str, Any] = {"name": name, "app": app, "submit": False}
        if params:
            body["params"] = params
        response = await self.request(project, "POST", "batches", json=body)
        return response.status_code == 201, _parse(BatchSummary, response)

    async def batch(self, project: Project, name: str) -> BatchSummary:
        """GET /v1/batches/{name}."""
        return _parse(BatchSummary, await self.request(project, "GET", _path("batches", name)))

    async def add_jobs(self, project: Project, batch: str, jobs: list[dict[str, Any]]) -> None:
        """POST /v1/batches/{name}/jobs."""
        await self.request(project, "POST", _path("batches", batch) + "/jobs", json={"jobs": jobs})

    async def submit_batch(self, project: Project, batch: str) -> None:
        """POST /v1/batches/{name}/submit."""
        await self.request(project, "POST", _path("batches", batch) + "/submit")

    async def missing_files(self, project: Project, md5s: list[str], batch: str) -> list[str]:
        """POST /v1/files/query; returns the md5s the user does not have yet."""
        body = {"md5s": md5s, "batch": batch}
        data = _json_object(await self.request(project, "POST", "files/query", json=body))
        missing = data.get("missing")
        if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
            raise GatewayError("malformed reply to files/query")
        return [str(m) for m in missing]

    async def put_file(
        self, project: Project, *, md5: str, path: str, size: int, batch: str
    ) -> None:
        """PUT /v1/files/{md5}?batch=..., streaming the local file."""
        url = f"{project.base}/v1/files/{_path(md5)}"
        headers = {
            "Authorization": f"Bearer {project.token}",
            "Content-Type": "application/octet-stream",
            # An explicit length avoids chunked uploads, which some proxies refuse.
            "Content-Length": str(size),
        }
        try:
            response = await self._http.put(
                url, content=_read_chunks(path), headers=headers, params={"batch": batch}
            )
        except OSError as exc:
            raise GatewayError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except httpx.HTTPError as exc:
            raise GatewayError(f"upload of {path} failed: {_describe(exc)}") from exc
        _check(response)

    async def query_batches(self, project: Project, names: list[str], since: str) -> QueryReply:
        """POST /v1/batches/query."""
        body = {"batches": names, "since": since}
        return _parse(QueryReply, await self.request(project, "POST", "batches/query", json=body))

    async def batch_jobs(
        self, project: Project, name: str, *, cursor: str | None, limit: int
    ) -> JobPage:
        """GET /v1/batches/{name}/jobs: one page, in job order."""
        params = {"limit": str(limit)}
        if cursor is not None:
            params["cursor"] = cursor
        path = _path("batches", name) + "/jobs"
        return _parse(JobPage, await self.request(project, "GET", path, params=params))

    async def job(self, project: Project, name: str) -> JobInfo:
        """GET /v1/jobs/{name}."""
        return _parse(JobInfo, await self.request(project, "GET", _path("jobs", name)))

    async def abort_jobs(self, project: Project, names: list[str]) -> None:
        """POST /v1/jobs/abort."""
        await self.request(project, "POST", "jobs/abort", json={"jobs": names})

    async def retire_batch(self, project: Project, name: str) -> None:
        """POST /v1/batches/{name}/retire."""
        await self.request(project, "POST", _path("batches", name) + "/retire")

    async def set_lease(self, project: Project, name: str, until: int) -> None:
        """PUT /v1/batches/{name}/lease."""
        await self.request(project, "PUT", _path("batches", name) + "/lease", json={"until": until})

    def stream(self, project: Project, path: str) -> AbstractAsyncContextManager[httpx.Response]:
        """Open a streaming GET of a job's file (output, stdout or stderr)."""
        headers = {"Authorization": f"Bearer {project.token}"}
        return self._http.stream("GET", project.base + "/v1/" + path, headers=headers)


def job_path(job: str, *rest: str) -> str:
    """The URL path of a job resource, each name percent-encoded."""
    return _path("jobs", job, *rest)


async def _read_chunks(path: str) -> AsyncIterator[bytes]:
    # Even open() may block (NFS, a FIFO), so it runs in a worker thread like the reads.
    handle = await asyncio.to_thread(open, path, "rb")
    try:
        while chunk := await asyncio.to_thread(handle.read, CHUNK):  # ends at EOF
            yield chunk
    finally:
        handle.close()


def check_response(response: httpx.Response) -> None:
    """Raise GatewayError for a non-2xx response whose body has been read."""
    _check(response)


def _check(response: httpx.Response) -> httpx.Response:
    if response.is_success:
        return response
    data: dict[str, Any] = {}
    try:
        parsed = response.json()
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        data = parsed
    message = next(
        (v for v in (data.get("detail"), data.get("title")) if isinstance(v, str) and v),
        f"HTTP {response.status_code} {response.reason_phrase}".strip(),
    )
    code = data.get("code")
    raise GatewayError(
        message, status=response.status_code, code=code if isinstance(code, str) else "", extra=data
    )


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError as exc:
        raise GatewayError(f"reply to {response.request.url.path} is not JSON") from exc
    if not isinstance(data, dict):
        raise GatewayError(f"reply to {response.request.url.path} is not a JSON object")
    return data


def _parse(model: type[M], response: httpx.Response) -> M:
    try:
        return model.model_validate(_json_object(response))
    except ValidationError as exc:
        raise GatewayError(f"malformed reply to {response.request.url.path}") from exc


def _describe(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.replace("\n", " ")
