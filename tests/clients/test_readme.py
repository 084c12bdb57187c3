"""The README's curl walk-through, extracted and run step by step against a live server."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import LiveServer

README = Path(__file__).resolve().parents[2] / "README.md"


def walkthrough() -> str:
    """The first sh block after the walk-through heading."""
    text = README.read_text()
    section = text[text.index("## Walk-through with curl") :]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def run_steps(script: str, env: dict[str, str], cwd: Path) -> list[tuple[str, str]]:
    """Run the script in one shell; return (step comment, its output) pairs."""
    marked = re.sub(
        r"^# (.*)$", lambda m: "echo " + shlex.quote("@@step " + m.group(1)), script, flags=re.M
    )
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", marked],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    parts = proc.stdout.split("@@step ")
    return [(p.split("\n", 1)[0], p.split("\n", 1)[1] if "\n" in p else "") for p in parts[1:]]


@pytest.fixture
def server(tmp_path: Path) -> LiveServer:
    data = tmp_path / "data"
    data.mkdir()
    srv = LiveServer(f"sqlite:///{tmp_path / 'g.db'}", data)
    srv.start()
    yield srv  # type: ignore[misc]
    srv.stop()


def test_curl_walkthrough(server: LiveServer, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "BGW": server.url, "TOKEN": server.token}
    steps = dict(run_steps(walkthrough(), env, work))
    md5 = hashlib.md5(b"hello, volunteers\n").hexdigest()

    def step(prefix: str) -> str:
        matches = [out for title, out in steps.items() if title.startswith(prefix)]
        assert len(matches) == 1, (prefix, list(steps))
        return matches[0]

    up = json.loads(step("upload"))
    assert up == {"md5": md5, "size": 18, "filename": None, "created": True}
    form = json.loads(step("or as a form upload"))
    assert form == [{"md5": md5, "size": 18, "filename": "in.txt", "created": False}]
    created = json.loads(step("submit a batch"))
    assert (created["name"], created["app"], created["njobs"]) == ("demo", "uppercase", 1)
    summary = json.loads(step("poll the summary"))
    assert summary["state"] == "complete" and summary["counts"]["done"] == 1
    query = json.loads(step("the jobs that changed"))
    assert query["batches"] == [{"name": "demo", "jobs": [{"name": "demo-0", "state": "done"}]}]
    assert int(query["cursor"]) > 0
    assert step("download the output") == "HELLO, VOLUNTEERS\n"
    assert "demo-0/out" in step("or every output")
    text = step("a long job, aborted")
    first, end = json.JSONDecoder().raw_decode(text)
    assert first["state"] == "in_progress"
    assert json.loads(text[end:])["state"] == "aborted"
    assert json.loads(step("done with a batch"))["state"] == "retired"
