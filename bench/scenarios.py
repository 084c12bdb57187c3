"""The benchmark scenarios. Each returns a dict of measurements (seconds, bytes, ratios)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from bench.server import TOKEN, Database, PeakRss, Server

Result = dict[str, Any]


def median_of(runs: int, fn: Callable[[], float]) -> tuple[float, list[float]]:
    """Median of ``runs`` calls of ``fn`` (each returns seconds), and the samples."""
    samples = [fn() for _ in range(runs)]
    return statistics.median(samples), samples


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _put(c: Any, data: bytes) -> str:
    m = _md5(data)
    r = c.put(f"/v1/files/{m}", content=data)
    r.raise_for_status()
    return m


def _jobs(prefix: str, n: int, shared: str) -> list[dict[str, Any]]:
    return [
        {
            "name": f"{prefix}-{i}",
            "args": ["--repeat", "1"],
            "inputs": [{"name": "a", "md5": shared}, {"name": "b", "content": f"job {i}\n"}],
        }
        for i in range(n)
    ]


# ---- 1. a 10,000-job one-shot submission ----------------------------------------------------


def _driver_bulk_insert(db: Database, jobs: list[dict[str, Any]], shared: str) -> float:
    """The same rows (jobs + two inputs each) inserted with the driver's bulk insert."""
    t0 = time.perf_counter()
    contents = [hashlib.md5(j["inputs"][1]["content"].encode()).hexdigest() for j in jobs]
    job_rows = [
        (1, 1, f"raw-{uuid.uuid4().hex[:6]}-{i}", "queued", 1, "x" * 32, "[]", "[]", 0, time.time())
        for i in range(len(jobs))
    ]
    sql_job = (
        "INSERT INTO jobs (batch_id, owner_id, name, state, change, spec_hash, args, "
        "outputs_wanted, attempts, created_at) VALUES ({})"
    )
    sql_in = "INSERT INTO job_inputs (job_id, name, position, md5) VALUES ({})"
    if db.engine == "postgres":
        dsn = db.url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(dsn) as conn, conn.cursor() as cur:
            t0 = time.perf_counter()
            cur.executemany(
                sql_job.format(", ".join(["%s"] * 10)) + " RETURNING id", job_rows, returning=True
            )
            ids = []
            while True:
                ids.append(cur.fetchone()[0])  # type: ignore[index]
                if not cur.nextset():
                    break
            rows = [(i, "a", 0, shared) for i in ids] + [
                (i, "b", 1, m) for i, m in zip(ids, contents, strict=True)
            ]
            cur.executemany(sql_in.format("%s, %s, %s, %s"), rows)
            conn.commit()
    else:
        path = db.url.removeprefix("sqlite:///")
        conn = sqlite3.connect(path)
        t0 = time.perf_counter()
        with conn:
            first = conn.execute("SELECT coalesce(max(id), 0) FROM jobs").fetchone()[0] + 1
            conn.executemany(sql_job.format(", ".join(["?"] * 10)), job_rows)
            ids = list(range(first, first + len(job_rows)))
            rows = [(i, "a", 0, shared) for i in ids] + [
                (i, "b", 1, m) for i, m in zip(ids, contents, strict=True)
            ]
            conn.executemany(sql_in.format("?, ?, ?, ?"), rows)
        conn.close()
    return time.perf_counter() - t0


def submit_10k(engine: str, work: Path, runs: int = 3, n: int = 10_000) -> Result:
    """Scenario 1: one-shot submission of a 10,000-job batch (two inputs per job, one shared)."""
    db = Database(engine, work)
    server = Server(db.url, work / f"s1-{engine}")
    try:
        with server.client() as c:
            shared = _put(c, b"shared input\n")
            times: list[float] = []
            peak = 0
            for r in range(runs):
                body = json.dumps(
                    {
                        "name": f"b{r}",
                        "app": "concat",
                        "jobs": _jobs(f"b{r}", n, shared),
                        "submit": False,
                    }
                ).encode()
                with PeakRss(server) as rss:
                    t0 = time.perf_counter()
                    resp = c.post(
                        "/v1/batches", content=body, headers={"Content-Type": "application/json"}
                    )
                    times.append(time.perf_counter() - t0)
                resp.raise_for_status()
                peak = max(peak, rss.peak)
            baseline = [
                _driver_bulk_insert(db, _jobs("raw", n, shared), shared) for _ in range(runs)
            ]
        api = statistics.median(times)
        base = statistics.median(baseline)
        return {
            "engine": engine,
            "jobs": n,
            "api_seconds": round(api, 3),
            "api_samples": [round(t, 3) for t in times],
            "driver_bulk_insert_seconds": round(base, 3),
            "ratio_api_to_driver": round(api / base, 1),
            "server_peak_rss_mib": round(peak / 2**20, 1),
        }
    finally:
        server.stop()
        db.close()


# ---- 2. uploads ----------------------------------------------------------------------------


def upload(
    engine: str, work: Path, sizes_mib: tuple[int, ...] = (100, 1024), runs: int = 3
) -> Result:
    """Scenario 2: PUT of large files: throughput against md5sum, and the server's peak RSS."""
    db = Database(engine, work)
    server = Server(db.url, work / f"s2-{engine}")
    out: Result = {"engine": engine, "sizes": []}
    try:
        for mib in sizes_mib:
            src = work / f"upload-{mib}.bin"
            with open(src, "wb") as fh:
                for _ in range(mib):
                    fh.write(os.urandom(1 << 20))
            md5s, _ = median_of(runs, lambda src=src: _time_cmd(["md5sum", str(src)]))
            md5 = (
                hashlib.md5(src.read_bytes()).hexdigest()
                if mib <= 128
                else subprocess.run(
                    ["md5sum", str(src)], capture_output=True, text=True, check=True
                ).stdout[:32]
            )
            peak = 0
            samples = []
            for _ in range(runs):
                with server.client() as c, PeakRss(server) as rss:
                    c.delete(f"/v1/files/{md5}")
                    t0 = time.perf_counter()
                    r = c.put(f"/v1/files/{md5}", content=_chunks(src))
                    samples.append(time.perf_counter() - t0)
                    r.raise_for_status()
                peak = max(peak, rss.peak)
            up = statistics.median(samples)
            out["sizes"].append(
                {
                    "mib": mib,
                    "put_seconds": round(up, 3),
                    "md5sum_seconds": round(md5s, 3),
                    "mib_per_s": round(mib / up, 1),
                    "ratio_put_to_md5sum": round(up / md5s, 2),
                    "server_peak_rss_mib": round(peak / 2**20, 1),
                }
            )
            src.unlink()
        return out
    finally:
        server.stop()
        db.close()


def _chunks(path: Path) -> Any:
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            yield chunk


def _time_cmd(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - t0


# ---- 3. status of big batches --------------------------------------------------------------


def status(
    engine: str, work: Path, sizes: tuple[int, ...] = (10_000, 100_000), runs: int = 5
) -> Result:
    """Scenario 3: summary, a page of jobs, and an incremental query after 10 changes."""
    db = Database(engine, work)
    server = Server(db.url, work / f"s3-{engine}")
    out: Result = {"engine": engine, "sizes": []}
    try:
        with server.client() as c:
            shared = _put(c, b"x")
            for n in sizes:
                name = f"status-{n}"
                c.post(
                    "/v1/batches", json={"name": name, "app": "uppercase", "submit": False}
                ).raise_for_status()
                for start in range(0, n, 10_000):
                    jobs = [
                        {"name": f"{name}-{i}", "inputs": [{"name": "in", "md5": shared}]}
                        for i in range(start, min(n, start + 10_000))
                    ]
                    c.post(f"/v1/batches/{name}/jobs", json={"jobs": jobs}).raise_for_status()
                cursor = c.post("/v1/batches/query", json={"batches": [name], "since": "0"}).json()[
                    "cursor"
                ]
                c.post(
                    "/v1/jobs/abort", json={"jobs": [f"{name}-{i}" for i in range(0, n, n // 10)]}
                ).raise_for_status()

                def timed(method: str, path: str, **kw: Any) -> float:
                    t0 = time.perf_counter()
                    c.request(method, path, **kw).raise_for_status()
                    return time.perf_counter() - t0

                summary, _ = median_of(runs, lambda name=name: timed("GET", f"/v1/batches/{name}"))
                page, _ = median_of(
                    runs,
                    lambda name=name: timed(
                        "GET", f"/v1/batches/{name}/jobs", params={"limit": 100}
                    ),
                )
                inc, _ = median_of(
                    runs,
                    lambda name=name, cursor=cursor: timed(
                        "POST", "/v1/batches/query", json={"batches": [name], "since": cursor}
                    ),
                )
                changed = c.post(
                    "/v1/batches/query", json={"batches": [name], "since": cursor}
                ).json()
                out["sizes"].append(
                    {
                        "jobs": n,
                        "summary_ms": round(summary * 1000, 2),
                        "page_of_100_ms": round(page * 1000, 2),
                        "incremental_query_ms": round(inc * 1000, 2),
                        "incremental_jobs_returned": len(changed["batches"][0]["jobs"]),
                    }
                )
        return out
    finally:
        server.stop()
        db.close()


# ---- 4. read load --------------------------------------------------------------------------


def read_load(engine: str, work: Path, seconds: int = 20, connections: int = 64) -> Result:
    """Scenario 4: GET a job and a batch summary under 64 concurrent connections (wrk)."""
    db = Database(engine, work)
    server = Server(db.url, work / f"s4-{engine}", BGW_LOCAL_SLOTS="1")
    out: Result = {"engine": engine, "connections": connections, "seconds": seconds, "routes": []}
    try:
        with server.client() as c:
            shared = _put(c, b"x")
            jobs = [
                {"name": f"load-{i}", "inputs": [{"name": "in", "md5": shared}]}
                for i in range(1000)
            ]
            c.post(
                "/v1/batches",
                json={"name": "load", "app": "uppercase", "jobs": jobs, "submit": False},
            ).raise_for_status()
        for path in ("/v1/jobs/load-500", "/v1/batches/load"):
            out["routes"].append({"path": path, **_wrk(server.url + path, seconds, connections)})
        return out
    finally:
        server.stop()
        db.close()


def _wrk(url: str, seconds: int, connections: int) -> Result:
    if not _have("wrk"):
        return {"skipped": "wrk not installed (apt-get install wrk)"}
    proc = subprocess.run(
        [
            "wrk",
            "-t2",
            f"-c{connections}",
            f"-d{seconds}s",
            "--latency",
            "-H",
            f"Authorization: Bearer {TOKEN}",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    )
    text = proc.stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))  # type: ignore[union-attr]
    lat = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", text, re.M))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {
        "requests_per_s": rps,
        "p50": lat.get("50"),
        "p99": lat.get("99"),
        "non_2xx": int(errors.group(1)) if errors else 0,
    }


def _have(cmd: str) -> bool:
    return subprocess.run(["sh", "-c", f"command -v {cmd}"], capture_output=True).returncode == 0


# ---- 5. the local backend -----------------------------------------------------------------


def local_backend(engine: str, work: Path, n: int = 1000) -> Result:
    """Scenario 5: 1,000 jobs that exit at once, end to end, against spawning them bare."""
    db = Database(engine, work)
    server = Server(db.url, work / f"s5-{engine}")
    try:
        with server.client() as c:
            c.post(
                "/v1/apps",
                json={
                    "name": "noop",
                    "inputs": [],
                    "outputs": [],
                    "local": {"command": ["/bin/true"]},
                },
            ).raise_for_status()
            jobs = [{"name": f"noop-{i}"} for i in range(n)]
            t0 = time.perf_counter()
            c.post(
                "/v1/batches", json={"name": "noop", "app": "noop", "jobs": jobs}
            ).raise_for_status()
            deadline = time.monotonic() + 900
            while c.get("/v1/batches/noop").json()["state"] != "complete":
                if time.monotonic() > deadline:
                    raise TimeoutError("local backend benchmark did not finish")
                time.sleep(0.05)
            total = time.perf_counter() - t0
            counts = c.get("/v1/batches/noop").json()["counts"]
        t0 = time.perf_counter()
        for _ in range(n):
            subprocess.run(["/bin/true"], check=True)
        bare = time.perf_counter() - t0
        slots = os.cpu_count() or 1
        return {
            "engine": engine,
            "jobs": n,
            "slots": slots,
            "total_seconds": round(total, 2),
            "per_job_ms": round(total / n * 1000, 2),
            "bare_spawn_per_job_ms": round(bare / n * 1000, 2),
            "counts": counts,
        }
    finally:
        server.stop()
        db.close()


# ---- 6. the GAHP shim ---------------------------------------------------------------------


def gahp(engine: str, work: Path, n: int = 1000) -> Result:
    """Scenario 6: 1,000 BOINC_QUERY_BATCHES through boinc-gahp against the same REST calls."""
    db = Database(engine, work)
    server = Server(db.url, work / f"s6-{engine}")
    try:
        with server.client() as c:
            shared = _put(c, b"x")
            jobs = [
                {"name": f"g-{i}", "inputs": [{"name": "in", "md5": shared}]} for i in range(10)
            ]
            c.post(
                "/v1/batches", json={"name": "g", "app": "uppercase", "jobs": jobs, "submit": False}
            ).raise_for_status()
            t0 = time.perf_counter()
            for _ in range(n):
                c.post(
                    "/v1/batches/query", json={"batches": ["g"], "since": "0"}
                ).raise_for_status()
            direct = time.perf_counter() - t0
        shim = subprocess.Popen(
            [sys.executable, "-m", "clients.gahp.main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert shim.stdin and shim.stdout
        shim.stdout.readline()  # banner

        def send(line: str) -> str:
            shim.stdin.write(line.encode() + b"\r\n")  # type: ignore[union-attr]
            shim.stdin.flush()  # type: ignore[union-attr]
            return shim.stdout.readline().decode()  # type: ignore[union-attr]

        send(f"BOINC_SELECT_PROJECT {server.url}/ {TOKEN}")
        # At most 50 in flight, as the gridmanager's default GRIDMANAGER_MAX_PENDING_REQUESTS.
        window = 50
        t0 = time.perf_counter()
        sent = got = 0
        deadline = time.monotonic() + 600
        while got < n and time.monotonic() < deadline:
            while sent < n and sent - got < window:
                sent += 1
                ack = send(f"BOINC_QUERY_BATCHES {sent} 0 1 g")
                assert ack.startswith("S"), ack
            head = send("RESULTS")
            k = int(head.split()[1])
            for _ in range(k):
                line = shim.stdout.readline().decode()
                assert " NULL " in line, line
            got += k
            if k == 0:
                time.sleep(0.002)
        assert got == n, f"{got} of {n} results"
        through = time.perf_counter() - t0
        send("QUIT")
        shim.wait(timeout=10)
        return {
            "engine": engine,
            "queries": n,
            "direct_rest_sequential_seconds": round(direct, 3),
            "gahp_seconds": round(through, 3),
            "ratio_gahp_to_direct": round(through / direct, 2),
        }
    finally:
        server.stop()
        db.close()


def gahp_query_batch(engine: str, work: Path, n: int = 10_000, runs: int = 3) -> Result:
    """Scenario 8: the Condor-B BOINC_QUERY_BATCH of a 10,000-job batch through boinc-gahp
    (every job, paged through the REST listing) against the same pages fetched directly."""
    db = Database(engine, work)
    server = Server(db.url, work / f"s8-{engine}")
    try:
        with server.client() as c:
            shared = _put(c, b"x")
            jobs = [{"name": f"q-{i}", "inputs": [{"name": "in", "md5": shared}]} for i in range(n)]
            c.post(
                "/v1/batches", json={"name": "q", "app": "uppercase", "jobs": jobs, "submit": False}
            ).raise_for_status()

            def direct() -> float:
                t0 = time.perf_counter()
                cursor: str | None = None
                seen = 0
                for _ in range(n // 1000 + 2):  # bounded by the page count
                    params = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
                    page = c.get("/v1/batches/q/jobs", params=params).json()
                    seen += len(page["items"])
                    cursor = page["next_cursor"]
                    if cursor is None:
                        break
                assert seen == n, seen
                return time.perf_counter() - t0

            direct_s, _ = median_of(runs, direct)
        shim = subprocess.Popen(
            [sys.executable, "-m", "clients.gahp.main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert shim.stdin and shim.stdout
        shim.stdout.readline()  # banner

        def send(line: str) -> str:
            shim.stdin.write(line.encode() + b"\r\n")  # type: ignore[union-attr]
            shim.stdin.flush()  # type: ignore[union-attr]
            return shim.stdout.readline().decode()  # type: ignore[union-attr]

        send(f"BOINC_SELECT_PROJECT {server.url}/ {TOKEN}")
        sizes: list[int] = []

        def through() -> float:
            reqid = len(sizes) + 1
            t0 = time.perf_counter()
            assert send(f"BOINC_QUERY_BATCH {reqid} q").startswith("S")
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                head = send("RESULTS")
                if int(head.split()[1]) == 1:
                    line = shim.stdout.readline()  # type: ignore[union-attr]
                    assert line.count(b" ") == 1 + 2 * n, line[:200]
                    sizes.append(len(line))
                    return time.perf_counter() - t0
                time.sleep(0.002)
            raise AssertionError("no BOINC_QUERY_BATCH result within 300 s")

        gahp_s, _ = median_of(runs, through)
        send("QUIT")
        shim.wait(timeout=10)
        return {
            "engine": engine,
            "jobs": n,
            "direct_pages_seconds": round(direct_s, 3),
            "gahp_seconds": round(gahp_s, 3),
            "ratio_gahp_to_direct": round(gahp_s / direct_s, 2),
            "reply_line_bytes": sizes[-1],
        }
    finally:
        server.stop()
        db.close()


SCENARIOS: dict[str, Callable[..., Result]] = {
    "submit_10k": submit_10k,
    "upload": upload,
    "status": status,
    "read_load": read_load,
    "local_backend": local_backend,
    "gahp": gahp,
    "gahp_query_batch": gahp_query_batch,
}


def workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="bgw-bench-"))


# ---- 7. the BOINC backend against the fake BOINC server -----------------------------------


def boinc_backend(engine: str, work: Path, n: int = 10_000, finish: int = 1000) -> Result:
    """Scenario 7: RPCs and time to submit a 10,000-job batch to (fake) BOINC and to poll it."""
    from collections import Counter

    from tests.backends.boinc.backend_harness import gateway, wait
    from tests.conftest import TestDatabase

    db = Database(engine, work)
    test_db = TestDatabase(engine, db.url)
    with gateway(test_db, work, boinc_full_poll_seconds=3600, boinc_poll_seconds=0.5) as gw:
        md5 = gw.upload(b"one input for every job\n")
        t0 = time.perf_counter()
        names = gw.submit("big", md5, n)
        accepted = time.perf_counter() - t0
        wait(lambda: len(gw.wus()) == n or None, "the batch on BOINC", timeout=600)
        submitted = time.perf_counter() - t0
        submit_ops = Counter(gw.ops())
        mark = len(gw.fake.rpc_log)
        time.sleep(5)  # five seconds of polling with nothing finished
        idle_ops = Counter(gw.ops(mark))
        mark = len(gw.fake.rpc_log)
        t2 = time.perf_counter()
        for name in names[:finish]:
            gw.fake.complete_job(gw.wu(name), outputs={"out": b"DONE\n"})
        wait(lambda: gw.batch("big")["counts"]["done"] == finish or None, "results", timeout=900)
        collected = time.perf_counter() - t2
        finish_ops = Counter(gw.ops(mark))
    db.close()
    return {
        "engine": engine,
        "jobs": n,
        "accept_seconds": round(accepted, 2),
        "submitted_on_boinc_seconds": round(submitted, 2),
        "submit_rpcs": dict(submit_ops),
        "idle_poll_rpcs_per_5s": dict(idle_ops),
        "finished_jobs": finish,
        "collect_seconds": round(collected, 2),
        "collect_rpcs": dict(finish_ops),
        "collect_ms_per_job": round(collected / finish * 1000, 2),
    }


SCENARIOS["boinc_backend"] = boinc_backend


def boinc_collect_latency(engine: str, work: Path, n: int = 200, delay: float = 0.02) -> Result:
    """Scenario 9: collecting finished BOINC jobs when every request takes ``delay`` seconds
    (a network round trip), one job at a time against BGW_BOINC_FETCH_THREADS=4."""
    from tests.backends.boinc.backend_harness import gateway, wait
    from tests.conftest import TestDatabase

    db = Database(engine, work)
    test_db = TestDatabase(engine, db.url)
    result: Result = {"engine": engine, "finished_jobs": n, "request_delay_ms": delay * 1000}
    try:
        for threads in (1, 4):
            with gateway(
                test_db, work, boinc_full_poll_seconds=3600, boinc_fetch_threads=threads
            ) as gw:
                names = gw.submit("done", gw.upload(b"collect me\n"), n)
                wus = gw.wait_sent(names)
                gw.fake.delay = delay
                t0 = time.perf_counter()
                for wu in wus:
                    gw.fake.complete_job(wu, outputs={"out": b"DONE\n"})
                wait(lambda: gw.batch("done")["counts"]["done"] == n or None, "results", 600)
                seconds = time.perf_counter() - t0
            result[f"threads_{threads}_seconds"] = round(seconds, 2)
            result[f"threads_{threads}_ms_per_job"] = round(seconds / n * 1000, 2)
        result["speedup"] = round(result["threads_1_seconds"] / result["threads_4_seconds"], 2)
    finally:
        db.close()
    return result


SCENARIOS["boinc_collect_latency"] = boinc_collect_latency
