"""An in-memory fake of the gateway REST API (api.md), served on 127.0.0.1 in a thread.

It implements the routes the GAHP shim calls with the documented shapes and error codes,
records every request, and lets tests steer time (the change counter), job states,
delays and failures. It runs jobs only when a test says so (`start_jobs`, `finish`).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.gahp.fake_http import Problem, serve

NAME = re.compile(r"[A-Za-z0-9_.\-#:@+=]{1,191}")
PARAMS = {"rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound"}
PARAMS |= {"delay_bound", "priority"}


@dataclass
class RunResult:
    """What a fake app run produced."""

    outputs: dict[str, bytes]
    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int = 0
    wall: float = 2.0
    cpu: float = 1.5


@dataclass
class App:
    name: str
    inputs: list[str]
    outputs: list[tuple[str, bool]]
    run: Callable[[list[str], dict[str, bytes]], RunResult]


@dataclass
class Job:
    name: str
    batch: str
    app: str
    args: list[str]
    inputs: list[dict[str, Any]]
    state: str = "queued"
    change: int = 0
    outputs: dict[str, bytes] = field(default_factory=dict)
    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int | None = None
    wall: float | None = None
    cpu: float | None = None
    error: str | None = None


@dataclass
class Batch:
    name: str
    app: str
    owner: str
    content: Any
    state: str = "open"
    jobs: list[str] = field(default_factory=list)
    lease: float | None = None
    files: set[str] = field(default_factory=set)


@dataclass
class Recorded:
    method: str
    path: str
    token: str
    body: Any


class FakeGateway:
    """State and helpers; `url` is valid between start() and stop()."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.tokens: dict[str, str] = {}
        self.apps: dict[str, App] = {}
        self.files: dict[str, dict[str, bytes]] = {}
        self.batches: dict[tuple[str, str], Batch] = {}
        self.jobs: dict[tuple[str, str], Job] = {}
        self.counter = 0
        self.requests: list[Recorded] = []
        self.errors: list[str] = []
        self.delays: list[tuple[str, str, float]] = []
        self.failures: list[tuple[str, str, Problem]] = []
        self.active = 0
        self.max_active = 0
        self.last_activity = time.monotonic()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    # ----- test controls -----

    def start(self) -> str:
        """Serve on an ephemeral 127.0.0.1 port; return the base URL."""
        self._server = serve(self)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        return self.url

    def stop(self) -> None:
        """Stop serving; sleeping handlers wake up."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def add_user(self, name: str, token: str | None = None) -> str:
        """Create a user; return the bearer token."""
        token = token or hashlib.md5(name.encode()).hexdigest()
        with self.lock:
            self.tokens[token] = name
            self.files.setdefault(name, {})
        return token

    def add_app(
        self,
        name: str,
        inputs: list[str],
        outputs: list[tuple[str, bool]],
        run: Callable[[list[str], dict[str, bytes]], RunResult],
    ) -> None:
        """Register an app; `run(args, inputs_by_name)` computes a job's result."""
        with self.lock:
            self.apps[name] = App(name, inputs, outputs, run)

    def delay(self, method: str, path_prefix: str, seconds: float) -> None:
        """Make matching requests sleep first (woken early by stop())."""
        self.delays.append((method, path_prefix, seconds))

    def fail(self, method: str, path_prefix: str, status: int, code: str, detail: str) -> None:
        """Make matching requests answer a problem+json error."""
        self.failures.append((method, path_prefix, Problem(status, code, detail)))

    def set_counter(self, value: int) -> None:
        """Move the global change number forward (the cursor the shim echoes)."""
        with self.lock:
            assert value >= self.counter
            self.counter = value

    def job(self, name: str) -> Job:
        """The job of that name (any owner)."""
        with self.lock:
            return next(j for (_, n), j in self.jobs.items() if n == name)

    def batch(self, name: str) -> Batch:
        """The batch of that name (any owner)."""
        with self.lock:
            return next(b for (_, n), b in self.batches.items() if n == name)

    def set_state(self, name: str, state: str) -> None:
        """Force a job's state, bumping the change number."""
        with self.lock:
            self._change(self.job(name), state)

    def complete(self, name: str, result: RunResult, state: str = "done") -> None:
        """Finish one job with the given outputs and numbers."""
        with self.lock:
            job = self.job(name)
            job.outputs, job.stdout, job.stderr = result.outputs, result.stdout, result.stderr
            job.exit_code, job.wall, job.cpu = result.exit_code, result.wall, result.cpu
            self._change(job, state)
            batch = self.batch(job.batch)
            if all(self.job(j).state in ("done", "error", "aborted") for j in batch.jobs):
                batch.state = "complete" if batch.state == "in_progress" else batch.state

    def finish(self, batch_name: str | None = None) -> None:
        """Run every unfinished job of submitted batches with its app."""
        with self.lock:
            pending = [
                j
                for j in self.jobs.values()
                if j.state in ("queued", "in_progress")
                and self.batch(j.batch).state == "in_progress"
                and batch_name in (None, j.batch)
            ]
            for job in pending:
                owner = self.batch(job.batch).owner
                data = {i["name"]: self.files[owner][i["md5"]] for i in job.inputs}
                self.complete(job.name, self.apps[job.app].run(job.args, data))

    def _change(self, job: Job, state: str) -> None:
        self.counter += 1
        job.state, job.change = state, self.counter

    # ----- request handling -----

    def handle(self, method: str, raw_path: str, token: str, body: Any, data: bytes) -> Any:
        """Route one request; return a JSON value, bytes, or (status, value)."""
        parts = [unquote(p) for p in urlsplit(raw_path).path.split("/")[1:]]
        query = parse_qs(urlsplit(raw_path).query)
        path = "/" + "/".join(parts)
        with self.lock:
            self.requests.append(Recorded(method, path, token, body))
        for m, prefix, seconds in self.delays:
            if m == method and path.startswith(prefix):
                self._stopping.wait(seconds)
        for m, prefix, problem in self.failures:
            if m == method and path.startswith(prefix):
                raise problem
        if parts[:1] != ["v1"]:
            raise Problem(404, "not_found", "no such route")
        with self.lock:
            user = self.tokens.get(token)
            if user is None:
                raise Problem(401, "unauthorized", "missing or bad token")
            return self._route(method, parts[1:], user, body, data, query)

    def _route(self, method: str, p: list[str], user: str, body: Any, data: bytes, q: Any) -> Any:
        match method, p:
            case "GET", ["me"]:
                return {"name": user, "admin": False, "quotas": {}, "usage": {}}
            case "GET", ["apps", name]:
                app = self._app(name)
                outs = [{"name": n, "required": r} for n, r in app.outputs]
                return {"name": name, "description": "", "inputs": app.inputs, "outputs": outs}
            case "POST", ["batches"]:
                return self._create_batch(user, body)
            case "POST", ["batches", "query"]:
                return self._query(user, body)
            case "GET", ["batches", name]:
                return self._summary(self._batch(user, name))
            case "POST", ["batches", name, "jobs"]:
                self._add_jobs(user, self._batch(user, name), body["jobs"])
                return self._summary(self._batch(user, name))
            case "POST", ["batches", name, "submit"]:
                batch = self._batch(user, name)
                if batch.state != "open":
                    raise Problem(409, "batch_not_open", f"batch {name} is {batch.state}")
                batch.state = "in_progress"
                return self._summary(batch)
            case "POST", ["batches", name, "retire"]:
                batch = self._batch(user, name)
                batch.state = "retired"
                return self._summary(batch)
            case "PUT", ["batches", name, "lease"]:
                batch = self._batch(user, name)
                batch.lease = float(body["until"])
                return self._summary(batch)
            case "POST", ["files", "query"]:
                have = self.files[user]
                batch = self._batch(user, body["batch"]) if body.get("batch") else None
                if batch is not None:
                    batch.files |= {m for m in body["md5s"] if m in have}
                return {"missing": [m for m in body["md5s"] if m not in have]}
            case "PUT", ["files", md5]:
                if hashlib.md5(data).hexdigest() != md5:
                    raise Problem(400, "md5_mismatch", "content does not match md5")
                new = md5 not in self.files[user]
                self.files[user][md5] = data
                if "batch" in q:
                    self._batch(user, q["batch"][0]).files.add(md5)
                return (201 if new else 200), {"md5": md5, "size": len(data)}
            case "GET", ["jobs", name]:
                return self._job_view(self._job(user, name))
            case "GET", ["jobs", name, "outputs", output]:
                job = self._job(user, name)
                if output not in job.outputs:
                    raise Problem(404, "output_not_found", f"job {name} has no output {output}")
                return job.outputs[output]
            case "GET", ["jobs", name, ("stdout" | "stderr") as which]:
                return getattr(self._job(user, name), which)
            case "POST", ["jobs", "abort"]:
                jobs = [self._job(user, n) for n in body["jobs"]]
                for job in jobs:
                    if job.state in ("queued", "in_progress"):
                        self._change(job, "aborted")
                return {"aborted": len(jobs)}
        raise Problem(404, "not_found", "no such route")

    def _app(self, name: str) -> App:
        if name not in self.apps:
            raise Problem(404, "app_not_found", f"no app named {name}", app=name)
        return self.apps[name]

    def _batch(self, user: str, name: str) -> Batch:
        if (user, name) not in self.batches:
            raise Problem(404, "batch_not_found", f"no batch named {name}", batch=name)
        return self.batches[(user, name)]

    def _job(self, user: str, name: str) -> Job:
        if (user, name) not in self.jobs:
            raise Problem(404, "job_not_found", f"no job named {name}", job=name)
        return self.jobs[(user, name)]

    def _summary(self, batch: Batch) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for name in batch.jobs:
            state = self.jobs[(batch.owner, name)].state
            counts[state] = counts.get(state, 0) + 1
        return {"name": batch.name, "app": batch.app, "state": batch.state, "counts": counts}

    def _create_batch(self, user: str, body: dict[str, Any]) -> Any:
        name, app = body["name"], body["app"]
        if not NAME.fullmatch(name):
            raise Problem(422, "invalid_name", f"bad batch name {name!r}")
        self._app(app)
        if not set(body.get("params") or {}) <= PARAMS:
            raise Problem(422, "invalid_params", "unknown job parameter")
        content = {k: body.get(k) for k in ("app", "jobs", "submit", "params")}
        if (user, name) in self.batches:
            existing = self.batches[(user, name)]
            if existing.content != content:
                raise Problem(409, "batch_exists", f"batch {name} exists", batch=name)
            return 200, self._summary(existing)
        batch = Batch(name=name, app=app, owner=user, content=content)
        self._add_jobs(user, batch, body.get("jobs") or [], check_only=True)
        self.batches[(user, name)] = batch
        self._add_jobs(user, batch, body.get("jobs") or [])
        if body.get("jobs") and body.get("submit", True):
            batch.state = "in_progress"
        return 201, self._summary(batch)

    def _add_jobs(
        self, user: str, batch: Batch, specs: list[dict[str, Any]], check_only: bool = False
    ) -> None:
        if batch.state != "open":
            raise Problem(409, "batch_not_open", f"batch {batch.name} is {batch.state}")
        app = self.apps[batch.app]
        missing = []
        for spec in specs:
            if not NAME.fullmatch(spec["name"]) or (user, spec["name"]) in self.jobs:
                raise Problem(409, "job_exists", f"job {spec['name']} exists or is invalid")
            if sorted(i["name"] for i in spec["inputs"]) != sorted(app.inputs):
                raise Problem(400, "bad_inputs", f"job {spec['name']} must bind {app.inputs}")
            missing += [i["md5"] for i in spec["inputs"] if i["md5"] not in self.files[user]]
        if missing:
            raise Problem(400, "missing_input_files", "input files missing", md5s=missing)
        if check_only:
            return
        for spec in specs:
            job = Job(spec["name"], batch.name, batch.app, list(spec["args"]), spec["inputs"])
            self._change(job, "queued")
            self.jobs[(user, job.name)] = job
            batch.jobs.append(job.name)

    def _query(self, user: str, body: dict[str, Any]) -> dict[str, Any]:
        since = int(body["since"])
        groups = []
        for name in body["batches"]:
            batch = self._batch(user, name)
            jobs = [self.jobs[(user, j)] for j in batch.jobs]
            changed = [{"name": j.name, "state": j.state} for j in jobs if j.change > since]
            groups.append({"name": name, "jobs": changed})
        return {"cursor": str(self.counter), "batches": groups}

    def _job_view(self, job: Job) -> dict[str, Any]:
        outs = [
            {"name": n, "md5": hashlib.md5(d).hexdigest(), "size": len(d)}
            for n, d in job.outputs.items()
        ]
        return {
            "name": job.name,
            "state": job.state,
            "batch": job.batch,
            "app": job.app,
            "args": job.args,
            "inputs": job.inputs,
            "outputs": outs,
            "exit_code": job.exit_code,
            "wall_seconds": job.wall,
            "cpu_seconds": job.cpu,
            "error": job.error,
            "attempts": 1,
        }
