"""A faithful fake BOINC project server for tests: real HTTP on 127.0.0.1, in a thread.

`FakeBoincServer` serves `<url>submit_rpc_handler.php`, `job_file.php`, `get_output.php` and
`get_output2.php` like BoincServer master c5c6cb79b9aa on PHP 8.2 (protocol reference sections
1 to 4 and 11), from the in-memory project of `boinc_state`. Replies match the recorded ones
in /work/shared/boinc-replies byte for byte where the state matches.

Test-facing API:

* `with FakeBoincServer(quirks=Quirks.live()) as fake:` starts it; `fake.url` is the project
  URL; `fake.alice` (submit_all) and `fake.bob` (no user_submit row) are the users, with the
  recorded authenticators; app `uppercase` has the recorded templates (input `in`, output `out`).
* Driving jobs: `start_job`, `complete_job`, `fail_job`, `fail_next_create_work`,
  `run_file_deleter`, `expire_batches`, `delete_output_files`, `add_sandbox_file`,
  `add_user`, `add_app`.
* Inspecting: `rpc_log` (list of (endpoint, op)), `state` (all rows and files), `batch(id)`,
  `job(name)`.
* Quirks (`Quirks`, all off by default; `Quirks.live()` = the recorded server) reproduce the
  real server's broken behaviours; see `boinc_php.Quirks`.
* Faults: `project_down` (-183), `db_down` (-138), `truncate_next` (cut the next N replies in
  half), `disconnect_next` (close the next N connections without replying), `delay` (seconds
  before each reply), `set_down("refused" | "503" | None)`; PHP limits `post_max_size`,
  `upload_max_filesize`, `max_file_uploads`.

Not modelled: `local`/`semilocal` input modes, per-job templates and `workunit_template_file`,
`get_output2.php?cmd=file`, `get_output3.php`, `lookup_account.php`, `server_status.php`,
translations of `query_job` states, create_work's chunked partial inserts (it is atomic here).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import traceback
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes import boinc_files, boinc_queries, boinc_submit
from tests.fakes.boinc_files import HttpReply, UploadedFile
from tests.fakes.boinc_php import (
    XML_HEADER,
    XML_TYPE,
    Output,
    PhpFatal,
    Quirks,
    XmlError,
    fatal_text,
    hsc,
    load_request,
    multipart_form,
    notice_text,
    xml_error_text,
)
from tests.fakes.boinc_state import PROJECT_DIR, App, Batch, BoincState, Result, User, Workunit

__all__ = ["ALICE_AUTH", "BOB_AUTH", "FakeBoincServer", "Quirks"]

ALICE_AUTH = "a1ce0000000000000000000000000001"
BOB_AUTH = "b0b00000000000000000000000000002"
SUBMIT_OPS = boinc_submit.HANDLERS | boinc_queries.HANDLERS
MIB = 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _HttpServer

    def setup(self) -> None:
        super().setup()
        self.server.fake._conns.add(self.connection)

    def finish(self) -> None:
        self.server.fake._conns.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self.server.fake._serve(self, "GET")

    def do_POST(self) -> None:
        self.server.fake._serve(self, "POST")


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], fake: FakeBoincServer) -> None:
        self.fake = fake
        super().__init__(addr, _Handler)


class FakeBoincServer:
    """A fake BOINC project on 127.0.0.1 (see the module docstring for the API)."""

    def __init__(
        self,
        *,
        quirks: Quirks | None = None,
        clock: Callable[[], float] | None = None,
        project_path: str = "/test/",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.state = BoincState(clock)
        self.quirks = quirks or Quirks()
        self.project_path = project_path
        self.tls = tls  # serve https with this server context
        self.rpc_log: list[tuple[str, str]] = []
        self.internal_errors: list[str] = []  # tracebacks of bugs in the fake itself
        self.project_down = False
        self.db_down = False
        self.truncate_next = 0
        self.disconnect_next = 0
        self.delay = 0.0
        # requests being served at once (the delay is spent outside the state lock, so
        # overlapping clients show here), and the most seen
        self.in_flight = 0
        self.max_in_flight = 0
        self._flight_lock = threading.Lock()
        self.post_max_size = 8 * MIB  # PHP defaults
        self.upload_max_filesize = 2 * MIB
        self.max_file_uploads = 20
        self._mode: str | None = None
        self._conns: set[socket.socket] = set()
        self._stop = threading.Event()
        self._port = 0
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self.alice = self.add_user("alice", ALICE_AUTH)
        self.bob = self.add_user("bob", BOB_AUTH, has_submit=False)
        self.add_app("uppercase")

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeBoincServer:
        """Listen on 127.0.0.1 (an ephemeral port the first time) and serve in a thread."""
        self._httpd = _HttpServer(("127.0.0.1", self._port), self)
        self._port = self._httpd.server_address[1]
        if self.tls is not None:
            self._httpd.socket = self.tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def _close_listener(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        for conn in list(self._conns):
            # Kill kept-alive connections too, so clients really see the server go away.
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        """Stop serving and close every connection."""
        self._stop.set()
        self._close_listener()

    def __enter__(self) -> FakeBoincServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The project URL, with its trailing slash."""
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self._port}{self.project_path}"

    def set_down(self, mode: str | None) -> None:
        """ "refused": nothing listens on the port; "503": every request gets 503; None: up."""
        if mode not in (None, "refused", "503"):
            raise ValueError(mode)
        if mode == "refused" and self._httpd is not None:
            self._close_listener()
        if mode != "refused" and self._httpd is None:
            self.start()
        self._mode = mode

    # -- test hooks -----------------------------------------------------------------------

    def add_user(
        self,
        name: str,
        authenticator: str,
        *,
        has_submit: bool = True,
        submit_all: bool = True,
        apps: tuple[str, ...] = (),
    ) -> User:
        """Add an account; `has_submit` is the user_submit row, `apps` user_submit_app rows."""
        with self.state.lock:
            user = User(self.state.next_id("user"), name, authenticator, has_submit, submit_all)
            user.apps = set(apps)
            self.state.users[user.id] = user
            return user

    def add_app(
        self, name: str, *, input_template: str | None = None, output_template: str | None = None
    ) -> App:
        """Add an app; templates default to the recorded `uppercase` ones."""
        with self.state.lock:
            app = App(self.state.next_id("app"), name)
            if input_template is not None:
                app.input_template = input_template
            if output_template is not None:
                app.output_template = output_template
            self.state.apps[name] = app
            return app

    def add_sandbox_file(self, user: User, name: str, data: bytes) -> None:
        """Put a file in a user's sandbox (for `sandbox` input mode)."""
        with self.state.lock:
            self.state.sandbox[(user.id, name)] = data

    def start_job(self, name: str) -> Result:
        """A volunteer got the job's next instance."""
        return self.state.start_job(name)

    def complete_job(self, name: str, **kwargs: Any) -> Result:
        """The job succeeded (exit_status, outputs={name: data}, stderr, cpu, elapsed, credit)."""
        return self.state.complete_job(name, **kwargs)

    def fail_job(self, name: str, **kwargs: Any) -> Result:
        """An instance failed (exit_status, stderr, cpu, elapsed, retry, error_mask)."""
        return self.state.fail_job(name, **kwargs)

    def fail_next_create_work(self, output: str) -> None:
        """Make the next submit_batch fail with `create_work failed: <output>`."""
        with self.state.lock:
            self.state.create_work_failure = output

    def run_file_deleter(self) -> list[str]:
        """Run delete_job_files (intended rule, or inverted with the quirk); deleted names."""
        return self.state.run_file_deleter(inverted=self.quirks.inverted_deleter)

    def expire_batches(self) -> list[int]:
        """Run the expire_batches cron; ids of the batches aborted and retired."""
        return self.state.expire_batches()

    def delete_output_files(self, name: str) -> list[str]:
        """Delete a job's output files, as the stock file_deleter does after assimilation."""
        return self.state.delete_output_files(name)

    def batch(self, batch_id: int) -> Batch:
        """The batch row."""
        return self.state.batches[batch_id]

    def job(self, name: str) -> Workunit:
        """The workunit row of a job."""
        return self.state.job(name)

    # -- HTTP ------------------------------------------------------------------------------

    def _serve(self, req: _Handler, method: str) -> None:
        if self._mode == "refused" or self._stop.is_set():
            req.connection.shutdown(socket.SHUT_RDWR)
            req.close_connection = True
            return
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else b""
        with self._flight_lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                self._stop.wait(self.delay)
        finally:
            with self._flight_lock:
                self.in_flight -= 1
        with self.state.lock:
            if self.disconnect_next:
                self.disconnect_next -= 1
                req.connection.shutdown(socket.SHUT_RDWR)
                req.close_connection = True
                return
            try:
                reply = self._route(req, method, body)
            except Exception:
                # A bug in the fake: answer like a crashed PHP script and let the test see it.
                self.internal_errors.append(traceback.format_exc())
                reply = HttpReply(b"<h1>500 Internal Server Error</h1>", status=500)
            if self.truncate_next and reply.status == 200:
                self.truncate_next -= 1
                reply.body = reply.body[: len(reply.body) // 2]
        req.send_response(reply.status)
        req.send_header("Content-Type", reply.content_type)
        for key, val in reply.headers.items():
            req.send_header(key, val)
        req.send_header("Content-Length", str(len(reply.body)))
        req.end_headers()
        req.wfile.write(reply.body)

    def _route(self, req: _Handler, method: str, body: bytes) -> HttpReply:
        url = urllib.parse.urlsplit(req.path)
        endpoint = url.path.removeprefix(self.project_path)
        if self._mode == "503":
            return HttpReply(b"<h1>503 Service Unavailable</h1>", status=503)
        if endpoint in ("get_output.php", "get_output2.php"):
            params = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
            self.rpc_log.append((endpoint, params.get("cmd", "")))
            if self.project_down or self.db_down:
                why = (
                    "Project down for maintenance"
                    if self.project_down
                    else "Can't connect to database"
                )
                return HttpReply(f"<title>{why}</title><h1>{why}</h1>".encode())
            fn = boinc_files.get_output if endpoint == "get_output.php" else boinc_files.get_output2
            return fn(self.state, params)
        if endpoint not in ("submit_rpc_handler.php", "job_file.php"):
            return HttpReply(b"<h1>Not Found</h1>", status=404)
        ctype = req.headers.get("Content-Type", "")
        fields: dict[str, str] = {}
        files: list[tuple[str, str, bytes]] = []
        too_big = method == "POST" and len(body) > self.post_max_size
        if method == "POST" and not too_big:
            if ctype.startswith("multipart/form-data"):
                fields, files = multipart_form(ctype, body)
            else:
                query = body.decode("ascii", "replace")
                fields = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        out = Output(self.quirks)
        if self.quirks.notices_before_xml:
            msg = "Constant ENT_HTML401 already defined"
            out.echo(
                notice_text(
                    self.quirks.notice_style, "Warning", msg, f"{PROJECT_DIR}/html/inc/util.inc", 30
                )
            )
        if too_big:
            # PHP drops $_POST and $_FILES entirely and warns at request startup.
            msg = f"PHP Request Startup: POST Content-Length of {len(body)} bytes exceeds"
            msg += f" the limit of {self.post_max_size} bytes"
            out.notice("Warning", msg, "Unknown", 0)
        out.echo(XML_HEADER)
        limits = (self.max_file_uploads, self.upload_max_filesize)
        self._rpc(endpoint, fields, boinc_files.php_files(files, *limits), out)
        return HttpReply(out.body(), XML_TYPE)

    def _rpc(
        self, endpoint: str, fields: dict[str, str], files: list[UploadedFile], out: Output
    ) -> None:
        request = fields.get("request")
        root = load_request(request)
        try:
            if root is None:
                self.rpc_log.append((endpoint, ""))
                if endpoint == "job_file.php":
                    where = (f"{PROJECT_DIR}/html/user/job_file.php", 297)
                    raise XmlError("can't parse request message", where=where)
                raise XmlError(f"can't parse request message: {hsc(request or '')}")
            op = root.tag
            self.rpc_log.append((endpoint, op))
            if endpoint == "job_file.php":
                if op not in ("query_files", "upload_files"):
                    raise XmlError("no such action")
            elif op not in SUBMIT_OPS:
                raise XmlError("bad command")
            out.start(op)
            if self.project_down:
                raise XmlError("project down for maintenance", -183)
            if self.db_down:
                raise XmlError("Can't connect to database", -138)
            if op == "upload_files":
                boinc_files.upload_files(self.state, self.quirks, root, out, files)
            elif op == "query_files":
                boinc_files.query_files(self.state, self.quirks, root, out)
            else:
                SUBMIT_OPS[op](self.state, self.quirks, root, out)
        except XmlError as exc:
            out.echo(xml_error_text(exc.num, exc.msg, exc.where))
            if out.root is not None:
                out.echo(f"</{out.root}>\n")
        except PhpFatal as exc:
            if self.quirks.php_notices:
                out.echo(fatal_text(self.quirks.notice_style, exc))
