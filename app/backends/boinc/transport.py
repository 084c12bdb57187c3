"""HTTP plumbing of the BOINC client: one POST per RPC, status checks, error mapping.

Every RPC is counted in `rpc_counts` (by operation) so tests can assert how many round trips
a submission needed.
"""

from __future__ import annotations

import collections
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO, Self
from urllib.parse import quote_plus, urlencode
from xml.etree.ElementTree import Element

import httpx

from app.backends.boinc.errors import (
    BoincConnectionError,
    BoincRequestError,
    BoincServerError,
    BoincTimeoutError,
)
from app.backends.boinc.xml import RAW_FIELDS, Reply, new_request, parse_reply, serialize

__all__ = ["JOB_FILE", "SUBMIT", "BoincTransport"]

SUBMIT = "submit_rpc_handler.php"
JOB_FILE = "job_file.php"
USER_AGENT = "boinc-gateway (BOINC remote job submission)"


def form_size(request: str) -> int:
    """Bytes of the form-encoded body of an RPC without files whose XML is ``request``."""
    return len(urlencode({"request": request}))


def encoded_size(piece: str) -> int:
    """Bytes a piece of a request's XML takes in the form-encoded body (encoding is byte by
    byte, so the sizes of the pieces of a request add up)."""
    return len(quote_plus(piece))


class BoincTransport:
    """HTTP plumbing shared by the RPC groups: POST, status checks, error mapping, counts."""

    def __init__(
        self,
        project_url: str,
        authenticator: str,
        *,
        timeout: float | httpx.Timeout = 60.0,
        transport: httpx.BaseTransport | None = None,
        max_upload_files: int = 20,
        max_upload_bytes: int = 8 * 1024 * 1024,
        verify_upload_md5: bool = True,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        url = project_url.strip()
        # The reference clients concatenate "url + endpoint", so the base must end in "/".
        self.project_url = url if url.endswith("/") else url + "/"
        self.authenticator = authenticator
        # PHP's max_file_uploads (default 20) silently drops extra parts.
        self.max_upload_files = max(1, max_upload_files)
        # Per request, under PHP's post_max_size (default 8 MiB) with room for the framing.
        self.max_upload_bytes = max(1, max_upload_bytes)
        self.verify_upload_md5 = verify_upload_md5
        self.rpc_counts: collections.Counter[str] = collections.Counter()
        self._count_lock = threading.Lock()  # the client is shared by fetching threads
        self._http = httpx.Client(
            timeout=timeout,
            transport=transport,
            verify=verify,
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
        )

    def _count(self, op: str) -> None:
        with self._count_lock:
            self.rpc_counts[op] += 1

    def close(self) -> None:
        """Close the underlying HTTP connections."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _mapped(self, op: str) -> Iterator[None]:
        """Turn httpx transport failures into retryable BoincErrors."""
        try:
            yield
        except httpx.TimeoutException as exc:
            raise BoincTimeoutError(f"{op}: timed out: {exc}") from exc
        except httpx.TransportError as exc:
            raise BoincConnectionError(f"{op}: {type(exc).__name__}: {exc}") from exc

    def _check_status(self, op: str, resp: httpx.Response) -> None:
        if resp.is_redirect:
            # A redirected POST loses its body (SECURE_URL_BASE); the URL must be fixed.
            # Without the query: output downloads carry the authenticator (auth_str) in it.
            where = resp.headers.get("location", "?").split("?", 1)[0]
            raise BoincRequestError(f"{op}: redirected to {where}; use that URL as project URL")
        if resp.status_code >= 500:
            raise BoincServerError(f"{op}: HTTP {resp.status_code}", status_code=resp.status_code)
        if resp.status_code != 200:
            url = resp.url.copy_with(query=None)  # never the auth_str of a download
            raise BoincRequestError(f"{op}: HTTP {resp.status_code} from {url}")

    def _rpc(
        self,
        op: str,
        root: Element,
        *,
        endpoint: str = SUBMIT,
        files: list[tuple[str, tuple[str, BinaryIO, str]]] | None = None,
        raw_fields: tuple[str, ...] = RAW_FIELDS,
    ) -> Reply:
        self._count(op)
        with self._mapped(op):
            resp = self._http.post(
                self.project_url + endpoint,
                data={"request": serialize(root)},
                files=files,
            )
        self._check_status(op, resp)
        return parse_reply(resp.content, op, raw_fields=raw_fields)

    def _request(self, op: str) -> Element:
        return new_request(op, self.authenticator)
