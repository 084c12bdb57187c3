"""HTTP plumbing of the fake gateway: a threaded stdlib server on 127.0.0.1.

Requests are decoded here (JSON or raw bytes, bearer token) and passed to
`FakeGateway.handle`; its return value or `Problem` becomes the response.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.gahp.fake_gateway import FakeGateway


class Problem(Exception):
    """An error reply: application/problem+json with a stable code (api.md 2)."""

    def __init__(self, status: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.body = {"type": "about:blank", "title": code.replace("_", " "), "status": status}
        self.body |= {"detail": detail, "code": code, **extra}


def serve(fake: FakeGateway) -> ThreadingHTTPServer:
    """Start serving `fake` on an ephemeral 127.0.0.1 port in a daemon thread."""

    class Handler(_Handler):
        gateway = fake

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
    server.daemon_threads = True
    server.block_on_close = False
    server.request_queue_size = 256  # 60 concurrent connects must not overflow the backlog
    server.server_bind()
    server.server_activate()
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


class _Handler(BaseHTTPRequestHandler):
    gateway: FakeGateway
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def _serve(self) -> None:
        fake = self.gateway
        with fake.lock:
            fake.active += 1
            fake.max_active = max(fake.max_active, fake.active)
        try:
            if "chunked" in self.headers.get("Transfer-Encoding", ""):
                # The shim promises Content-Length on uploads; hold it to that.
                self._send(411, {"code": "length_required"}, "application/problem+json")
                return
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            is_json = self.headers.get("Content-Type", "").startswith("application/json")
            body = json.loads(data) if is_json and data else None
            auth = self.headers.get("Authorization", "")
            token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else ""
            try:
                result = fake.handle(self.command, self.path, token, body, data)
            except Problem as problem:
                self._send(problem.body["status"], problem.body, "application/problem+json")
                return
            except Exception as exc:  # a bug in the fake must show, not hang the shim
                fake.errors.append(repr(exc))
                self._send(500, {"code": "fake_bug", "detail": repr(exc)}, "application/json")
                return
            status = 200
            if isinstance(result, tuple):
                status, result = result
            if isinstance(result, bytes):
                self._send_bytes(status, result, "application/octet-stream")
            else:
                self._send(status, result, "application/json")
        except ConnectionError:
            pass  # the shim went away (EOF tests, timeouts): nothing to answer
        finally:
            with fake.lock:
                fake.active -= 1
                fake.last_activity = time.monotonic()

    def _send(self, status: int, value: Any, content_type: str) -> None:
        self._send_bytes(status, json.dumps(value).encode(), content_type)

    def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = _serve
