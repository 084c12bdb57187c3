"""A whole HTCondor job life through the shim, against the `gateway` fixture.

Only the `Gateway` interface is used here, so this test can also run against a real
boinc-gateway (see tests/gahp/gateways.py).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import httpx

from tests.gahp.gateways import Gateway
from tests.gahp.harness import Gahp, esc


def query_groups(fields: list[str], nbatches: int) -> list[list[tuple[str, str]]]:
    """Parse QUERY_BATCHES result fields as the gridmanager does, strictly."""
    assert fields[0] == "NULL" and len(fields) >= 2
    float(fields[1])  # the gridmanager stores it; it must be a number it can echo back
    groups, pos = [], 2
    while pos < len(fields):  # each turn consumes one group
        n = int(fields[pos])
        pairs = fields[pos + 1 : pos + 1 + 2 * n]
        assert len(pairs) == 2 * n, "group count larger than the pairs that follow"
        groups.append(list(zip(pairs[::2], pairs[1::2], strict=True)))
        pos += 1 + 2 * n
    assert len(groups) == nbatches
    return groups


def test_submit_query_fetch_retire(
    gahp: Callable[..., Gahp], gateway: Gateway, tmp_path: Path
) -> None:
    """Submit 2 jobs, poll until DONE, fetch (SOME and ALL), compare bytes, retire."""
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    data = [b"first input\n", b"second input \xff\x00\n"]
    for i, content in enumerate(data):
        (iwd / f"in_{i}.txt").write_bytes(content)
    batch = f"condor#gahp-test.example.org#{gateway.app}#{int(time.time())}{uuid.uuid4().hex[:8]}"
    jobs = [f"{batch}#7.{i}" for i in range(2)]
    shim = gahp()
    shim.startup(gateway.url, gateway.token)
    assert shim.run("BOINC_PING 1", "1") == ["NULL"]

    specs = " ".join(
        f"{job} 2 --n {i} 1 {esc(str(iwd / f'in_{i}.txt'))} in_{i}.txt"
        for i, job in enumerate(jobs)
    )
    submit = f"BOINC_SUBMIT 2 {batch} {gateway.app} 2 {specs} NULL NULL NULL NULL NULL NULL"
    assert shim.run(submit, "2") == ["NULL"]
    assert shim.run(f"BOINC_SET_LEASE 3 {batch} {int(time.time()) + 21600}", "3") == ["NULL"]

    since, states, reqid = "0", dict.fromkeys(jobs, ""), 10
    deadline = time.monotonic() + gateway.wait_seconds
    while set(states.values()) != {"DONE"}:  # bounded by the deadline
        assert time.monotonic() < deadline, f"jobs not done in time: {states}"
        gateway.finish(batch)
        reqid += 1
        fields = shim.run(f"BOINC_QUERY_BATCHES {reqid} {since} 1 {batch}", str(reqid))
        (group,) = query_groups(fields, 1)
        assert {name for name, _ in group} <= set(jobs)
        states |= dict(group)
        assert set(states.values()) <= {"", "NOT_STARTED", "IN_PROGRESS", "DONE"}, states
        since = fields[1]
        time.sleep(0.1)

    out = gateway.output
    some = f"SOME 3 {out} result_0.txt out_0.txt out_0.txt err_0.txt err_0.txt"
    fields = shim.run(f"BOINC_FETCH_OUTPUT 20 {jobs[0]} {esc(str(iwd))} err_0.txt {some}", "20")
    assert fields[0] == "NULL" and len(fields) == 4
    assert int(fields[1]) == 0 and float(fields[2]) >= 0 and float(fields[3]) >= 0
    assert (iwd / "result_0.txt").read_bytes() == gateway.transform(data[0])
    assert (iwd / "out_0.txt").exists() and (iwd / "err_0.txt").exists()
    assert not (iwd / out).exists()

    fields = shim.run(f"BOINC_FETCH_OUTPUT 21 {jobs[1]} {esc(str(iwd))} /dev/null ALL 0", "21")
    assert fields[0] == "NULL" and len(fields) == 4
    assert (iwd / out).read_bytes() == gateway.transform(data[1])

    assert shim.run(f"BOINC_RETIRE_BATCH 22 {batch}", "22") == ["NULL"]
    reply = httpx.get(
        f"{gateway.url.rstrip('/')}/v1/batches/{quote(batch, safe='')}",
        headers={"Authorization": f"Bearer {gateway.token}"},
    )
    assert reply.status_code == 200 and reply.json()["state"] == "retired"
