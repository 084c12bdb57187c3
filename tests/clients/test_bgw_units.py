"""``bgw``'s pure parts in-process: config precedence, spec parsing, times, error lines."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from bgw.api import api_error, seg
from bgw.commands import parse_until
from bgw.config import DEFAULT_URL, config_path, load_config
from bgw.errors import ExitCode, UsageError
from bgw.spec import load_spec
from bgw.transfer import safe_component


def test_config_env_wins_over_file(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('url = "http://file:1/"\ntoken = "from-file"\n')
    env = {"BGW_CONFIG": str(cfg)}
    assert load_config(env).url == "http://file:1" and load_config(env).token == "from-file"
    assert load_config({**env, "BGW_TOKEN": "from-env"}).token == "from-env"
    assert load_config({"BGW_TOKEN": "t", "XDG_CONFIG_HOME": str(tmp_path)}).url == DEFAULT_URL
    assert config_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/bgw/config.toml")
    with pytest.raises(UsageError, match="no token"):
        load_config({"XDG_CONFIG_HOME": str(tmp_path)})
    with pytest.raises(UsageError, match="http"):
        load_config({"BGW_URL": "ftp://x", "BGW_TOKEN": "t", "XDG_CONFIG_HOME": str(tmp_path)})
    cfg.write_text("url = [")
    with pytest.raises(UsageError, match="cannot read config"):
        load_config(env)


def test_spec_paths_resolve_against_the_spec(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    spec = tmp_path / "d" / "s.yaml"
    spec.write_text(
        "name: b\napp: a\njobs:\n"
        "  - {name: j0, inputs: [{name: in, path: x.txt}, {name: p, content: hi}]}\n"
        "  - {name: j1, inputs: [{name: in, path: ../y.txt}]}\n"
        "  - {name: j2, inputs: [{name: in, path: x.txt}]}\n"
    )
    parsed = load_spec(spec, name="renamed")
    x, y = (tmp_path / "d" / "x.txt").resolve(), (tmp_path / "y.txt").resolve()
    assert parsed.paths == [x, y] and parsed.name == "renamed"
    body = parsed.resolved({x: "a" * 32, y: "b" * 32})
    assert body["jobs"][0]["inputs"] == [
        {"name": "in", "md5": "a" * 32},
        {"name": "p", "content": "hi"},
    ]
    assert body["jobs"][1]["inputs"] == [{"name": "in", "md5": "b" * 32}]
    assert "path" in parsed.body["jobs"][0]["inputs"][0]  # the parsed spec is left as it was


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "mapping"),
        ("name: b\n", "`app`"),
        ("name: b\napp: a\njobs: {}\n", "`jobs` must be a list"),
        ("name: b\napp: a\njobs: [{name: j, inputs: [{name: in, path: x, md5: y}]}]\n", "another"),
        ("name: [\n", "not valid YAML"),
    ],
)
def test_bad_specs_are_usage_errors(tmp_path: Path, text: str, message: str) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(text)
    with pytest.raises(UsageError, match=message) as info:
        load_spec(spec)
    assert info.value.exit_code == ExitCode.USAGE and "\n" not in info.value.message


def test_parse_until() -> None:
    assert parse_until("+90", now=1000) == 1090
    assert parse_until("+2h", now=1000) == 1000 + 7200
    assert parse_until("+1.5d", now=0) == 1.5 * 86400
    assert parse_until("1700000000") == 1_700_000_000
    assert parse_until("2030-01-01T00:00:00+00:00") == 1_893_456_000
    for bad in ("+2w", "soon", "+"):
        with pytest.raises(UsageError):
            parse_until(bad)


def test_error_lines() -> None:
    def response(status: int, **kwargs: object) -> httpx.Response:
        return httpx.Response(status, request=httpx.Request("GET", "http://x/"), **kwargs)  # type: ignore[arg-type]

    problem = response(
        404,
        json={
            "type": "t",
            "title": "No such batch",
            "status": 404,
            "code": "batch_not_found",
            "detail": "no batch named b\nsecond line",
            "batch": "b",
        },
        headers={"content-type": "application/problem+json"},
    )
    err = api_error(problem)
    assert (err.status, err.code, err.problem["batch"]) == (404, "batch_not_found", "b")
    assert err.message == "no batch named b second line (batch_not_found, HTTP 404)"
    validation = api_error(
        response(422, json={"detail": [{"loc": ["body", "name"], "msg": "bad"}]})
    )
    assert validation.message == "name: bad (validation_error, HTTP 422)"
    assert api_error(response(502, text="<html>bad gateway</html>")).code == "http_error"


def test_names_in_urls_and_paths() -> None:
    assert seg("condor#a#b:1.0") == "condor%23a%23b%3A1.0"
    assert seg("a/b") == "a%2Fb"
    assert safe_component("job#1.out", "job") == "job#1.out"
    for bad in ("..", ".", "a/b", "a\\b", ""):
        with pytest.raises(Exception, match="refusing"):
            safe_component(bad, "output")
