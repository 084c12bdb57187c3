"""Dockerfile and docker-compose.yml, checked as far as a machine without a Docker engine
allows: the compose file validates against the compose specification's JSON schema (vendored
in tests/clients/data), the Dockerfile lints clean with hadolint, the image's build context
installs the project, and the commands and health checks the image runs work here."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.clients.conftest import ROOT, Server, free_port, tool, tool_env

SCHEMA = Path(__file__).parent / "data" / "compose-spec.json"
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"


def run(*cmd: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(cmd),
        cwd=cwd,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def check_compose(path: Path) -> subprocess.CompletedProcess[str]:
    return run(tool("check-jsonschema"), "--schemafile", str(SCHEMA), str(path))


def hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    return run(tool("hadolint"), "--config", str(ROOT / ".hadolint.yaml"), "--no-color", str(path))


# ---- the compose file --------------------------------------------------------------------


def test_compose_file_matches_the_compose_spec() -> None:
    result = check_compose(COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_schema_check_can_fail(tmp_path: Path) -> None:
    broken = yaml.safe_load(COMPOSE.read_text())
    broken["services"]["worker"]["healthcheck"]["interval"] = ["30s"]
    broken["services"]["gateway"]["depends_on"]["postgres"]["condition"] = "whenever"
    path = tmp_path / "docker-compose.yml"
    path.write_text(yaml.safe_dump(broken))
    result = check_compose(path)
    assert result.returncode != 0 and "whenever" in result.stdout + result.stderr


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def test_compose_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"gateway", "worker", "postgres"}
    assert services["postgres"]["image"] == "postgres:16"
    for name, svc in services.items():
        assert svc.get("healthcheck", {}).get("test"), f"{name} has no health check"
        assert svc.get("volumes"), f"{name} keeps no volume"
    assert set(compose["volumes"]) == {"gateway-data", "postgres-data"}
    gateway, worker = services["gateway"], services["worker"]
    assert gateway["command"][0] == "serve" and worker["command"] == ["worker"]
    assert "build" in gateway and worker["image"] == gateway["image"]
    assert worker["depends_on"]["gateway"]["condition"] == "service_healthy"
    assert gateway["depends_on"]["postgres"]["condition"] == "service_healthy"
    for svc in (gateway, worker):
        env = svc["environment"]
        assert env["BGW_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert env["BGW_DATA_DIR"] == "/data" and "gateway-data:/data" in svc["volumes"]
        assert env["BGW_BOOTSTRAP_TOKEN"].startswith("${BGW_BOOTSTRAP_TOKEN")
        # The processes that run jobs need an init as PID 1 to reap what killed jobs leave.
        assert svc["init"] is True
        for key in ("BGW_BACKEND", "BGW_BOINC_URL", "BGW_BOINC_AUTHENTICATOR"):
            assert key in env
    assert "BGW_BACKEND: boinc" in COMPOSE.read_text()  # the BOINC section


def test_compose_commands_exist(compose: dict[str, Any]) -> None:
    for name in ("gateway", "worker"):
        cmd = compose["services"][name]["command"]
        result = run(tool("boinc-gateway"), cmd[0], "--help")
        assert result.returncode == 0, f"{name}: {result.stderr}"
        for option in (c for c in cmd[1:] if c.startswith("--")):
            assert option in result.stdout, f"{name}: boinc-gateway {cmd[0]} has no {option}"


def _python_check(test: list[str] | str) -> str:
    """The ``python -c`` program of a health check (exec form or CMD-SHELL)."""
    argv = list(test) if isinstance(test, list) else shlex.split(test)
    if argv and argv[0] in ("CMD", "CMD-SHELL"):
        argv = argv[1:]
    assert argv[:2] == ["python", "-c"], argv
    return str(argv[2])


def test_health_checks_work_here(compose: dict[str, Any], server: Server) -> None:
    """The image's and the gateway service's health checks pass against a live server
    (their port swapped for its port) and fail when nothing answers."""
    port = server.url.rsplit(":", 1)[1]
    dead = str(free_port())
    programs = [
        _python_check(dockerfile()["HEALTHCHECK"]),
        _python_check(compose["services"]["gateway"]["healthcheck"]["test"]),
    ]
    for program in programs:
        assert ":8000/healthz" in program
        alive = run(sys.executable, "-c", program.replace(":8000/", f":{port}/"), timeout=30)
        assert alive.returncode == 0, alive.stderr
        down = run(sys.executable, "-c", program.replace(":8000/", f":{dead}/"), timeout=30)
        assert down.returncode != 0


# ---- the Dockerfile ----------------------------------------------------------------------


def dockerfile() -> dict[str, Any]:
    """The final stage's instructions (continuation lines joined), by keyword."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [
        ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")
    ]
    stages: list[dict[str, Any]] = []
    for line in lines:
        key, _, rest = line.partition(" ")
        key = key.upper()
        if key == "FROM":
            stages.append({"FROM": rest, "COPY": [], "ENV": {}})
            continue
        stage = stages[-1]
        if key == "COPY":
            stage["COPY"].append(rest)
        elif key == "ENV":
            stage["ENV"].update(dict(re.findall(r"(\w+)=(\S+)", rest)))
        elif key == "HEALTHCHECK":
            stage[key] = json.loads(rest[rest.index("CMD") + 3 :].strip())
            stage["HEALTHCHECK_OPTS"] = rest[: rest.index("CMD")]
        elif key in ("ENTRYPOINT", "CMD", "VOLUME"):
            stage[key] = json.loads(rest)
        else:
            stage[key] = rest
    stages[-1]["stages"] = stages
    return stages[-1]


def test_dockerfile_lints_clean() -> None:
    result = hadolint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN apt-get update && apt-get install -y curl\nUSER root\n")
    result = hadolint(bad)
    assert result.returncode != 0 and "DL3006" in result.stdout


def test_dockerfile_shape() -> None:
    final = dockerfile()
    assert all(s["FROM"].startswith("python:3.11-slim") for s in final["stages"])
    user = final["USER"].split(":")[0]
    assert user not in ("root", "0") and user.isdigit()
    assert final["VOLUME"] == ["/data"]
    assert final["ENV"]["BGW_DATA_DIR"] == "/data"
    assert final["ENTRYPOINT"] + final["CMD"][:3] == ["boinc-gateway", "serve", "--host", "0.0.0.0"]
    assert final["HEALTHCHECK"][0] == "python" and "/healthz" in final["HEALTHCHECK"][2]


def test_build_context_installs_the_project(tmp_path: Path) -> None:
    """What the build stage copies is enough to build the project, assets included, and
    .dockerignore keeps none of it out."""
    build = dockerfile()["stages"][0]
    ignored = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()]
    ctx = tmp_path / "src"
    ctx.mkdir()
    for copy in build["COPY"]:
        *sources, dest = copy.split()
        for src in sources:
            assert src.split("/")[0] not in ignored and src not in ignored, src
            origin = ROOT / src
            if origin.is_dir():
                shutil.copytree(origin, ctx / dest, ignore=shutil.ignore_patterns("__pycache__"))
                continue
            target = ctx / dest / origin.name if dest.endswith("/") else ctx / dest
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(origin, target)
    result = run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(tmp_path / "dist"),
        str(ctx),
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [wheel] = (tmp_path / "dist").glob("boinc_gateway-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "app/main.py",
        "app/static/swagger-ui-bundle.js",
        "app/static/redoc.standalone.js",
        "app/migrations/env.py",
        "clients/gahp/main.py",
    ):
        assert needed in names, needed
    assert not any(n.startswith("clients/python/") for n in names)
