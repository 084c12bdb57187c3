"""A small synchronous client for the REST API: bearer auth, problem+json errors, paging."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from bgw import __version__
from bgw.config import Config
from bgw.errors import ApiError, BgwError, ConnectionFailed

PAGE = 1000
TIMEOUT = httpx.Timeout(60.0, connect=10.0)


def seg(name: str) -> str:
    """A name as one URL path segment (``#`` becomes ``%23``, ``/`` is never a separator)."""
    return quote(name, safe="")


def _validation_detail(body: Any) -> str:
    errors = body.get("detail") if isinstance(body, dict) else None
    if not isinstance(errors, list) or not errors:
        return "the request is not valid"
    parts = []
    for err in errors[:3]:
        loc = ".".join(str(p) for p in err.get("loc", []) if p != "body")
        parts.append(f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg")))
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(parts) + more


def api_error(response: httpx.Response) -> ApiError:
    """The ApiError for an error response (problem+json, FastAPI's 422, or anything else)."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        code = str(body.get("code") or "http_error")
        return ApiError(response.status_code, code, body["detail"], body)
    if response.status_code == 422:
        detail = _validation_detail(body)
        return ApiError(422, "validation_error", detail, body if isinstance(body, dict) else {})
    text = response.text.strip()[:200] or response.reason_phrase
    return ApiError(response.status_code, "http_error", text, {})


class Api:
    """The service at ``config.url`` as the user holding ``config.token``."""

    def __init__(self, config: Config, *, transport: httpx.BaseTransport | None = None) -> None:
        self.url = config.url
        self._http = httpx.Client(
            base_url=config.url,
            headers={
                "Authorization": f"Bearer {config.token}",
                "User-Agent": f"bgw/{__version__}",
            },
            timeout=TIMEOUT,
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection_failed(self, exc: httpx.TransportError) -> ConnectionFailed:
        return ConnectionFailed(f"cannot reach {self.url}: {exc or type(exc).__name__}")

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request; an error answer raises ApiError, a transport failure ConnectionFailed."""
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise self._connection_failed(exc) from None
        if response.status_code >= 400:
            raise api_error(response)
        return response

    @contextmanager
    def stream(
        self, method: str, path: str, *, headers: Mapping[str, str] | None = None
    ) -> Iterator[httpx.Response]:
        """A streamed response (errors are raised before the body is read)."""
        try:
            with self._http.stream(method, path, headers=headers) as response:
                if response.status_code >= 400:
                    response.read()
                    raise api_error(response)
                yield response
        except httpx.TransportError as exc:
            raise self._connection_failed(exc) from None

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise BgwError(
                f"{response.request.method} {response.request.url.path} answered "
                f"{response.status_code} without JSON: is {self.url} a boinc-gateway?"
            ) from None

    def get(self, path: str, **params: Any) -> Any:
        """GET a JSON document."""
        clean = {k: v for k, v in params.items() if v is not None}
        return self._json(self.request("GET", path, params=clean))

    def post(self, path: str, body: Any = None) -> Any:
        """POST a JSON body, return the JSON answer."""
        return self._json(self.request("POST", path, json=body))

    def put(self, path: str, body: Any) -> Any:
        """PUT a JSON body, return the JSON answer."""
        return self._json(self.request("PUT", path, json=body))

    def pages(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of a paged list (``{"items", "next_cursor"}``), page by page."""
        cursor: str | None = None
        while True:
            page = self.get(path, limit=PAGE, cursor=cursor, **params)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return
