"""Reading a job ad: argument and environment syntaxes, files, parameters, strictness."""

from __future__ import annotations

import pytest

from clients.gahp.classad import ClassAd, Expr, Value
from clients.gahp.classad_xml import parse
from clients.gahp.jobad import (
    JobAdError,
    grid_contact,
    read_environment,
    read_job,
    split_v1,
    split_v2,
)


def ad(**attrs: Value | None) -> ClassAd:
    """A minimal valid job ad plus the given attributes (None removes one)."""
    base: dict[str, Value | None] = {"Cmd": "uppercase", "Iwd": "/home/alice/run"}
    base.update(attrs)
    return ClassAd([(k, v) for k, v in base.items() if v is not None])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("  a  b\tc ", ["a", "b", "c"]),
        ("'hello world' x", ["hello world", "x"]),
        ("'it''s' ''", ["it's", ""]),
        ("a'b c'd", ["ab cd"]),
        ('"quoted" back\\slash', ['"quoted"', "back\\slash"]),
        ("'C:\\tmp\\x' '  '", ["C:\\tmp\\x", "  "]),
    ],
)
def test_new_syntax_arguments(text: str, expected: list[str]) -> None:
    """Single quotes group, '' is a quote inside quotes, double quotes are plain."""
    assert split_v2(text) == expected


def test_old_syntax_arguments_and_precedence() -> None:
    """Args splits on white space only; Arguments wins when both are given."""
    assert split_v1(" a\\b  'c d' ") == ["a\\b", "'c", "d'"]
    assert read_job(ad(Args="x y")).args == ("x", "y")
    assert read_job(ad(Args="x y", Arguments="'x y'")).args == ("x y",)
    with pytest.raises(JobAdError, match="unterminated single quote"):
        read_job(ad(Arguments="'open"))
    with pytest.raises(JobAdError, match="Arguments must be a string"):
        read_job(ad(Arguments=3))


def test_environment() -> None:
    """Both syntaxes parse; the variables travel with the job request."""
    assert read_environment(ad(Env="A=1;B=x y;")) == {"A": "1", "B": "x y"}
    assert read_environment(ad(Environment="A=1 B='x y'", Env="C=3")) == {"A": "1", "B": "x y"}
    assert read_job(ad(Env="", Environment="")).env == {}
    assert read_job(ad(Environment="B=2 A=1")).env == {"A": "1", "B": "2"}
    with pytest.raises(JobAdError, match="not NAME=value"):
        read_job(ad(Env="novalue"))


def test_files_and_plan() -> None:
    """Inputs relative to Iwd plus In; outputs, remaps, Out and Err inside Iwd."""
    request = read_job(
        ad(
            TransferInput="in.txt, /data/params.cfg,in.txt",
            In="stdin.txt",
            TransferOutput="out,log",
            TransferOutputRemaps="out = results/out_0.txt; log=log_0.txt",
            Out="/home/alice/run/job.out",
            Err="job.err",
        )
    )
    assert request.inputs == (
        "/home/alice/run/in.txt",
        "/data/params.cfg",
        "/home/alice/run/in.txt",
        "/home/alice/run/stdin.txt",
    )
    plan = request.plan
    assert plan.iwd == "/home/alice/run" and plan.outputs == ("out", "log")
    assert plan.destination("out") == "results/out_0.txt" and plan.destination("x") == "x"
    assert (plan.stdout, plan.stderr) == ("job.out", "job.err")
    defaults = read_job(ad(In="/dev/null", Out="/dev/null")).plan
    assert defaults.outputs is None and defaults.stdout is None and defaults.stderr is None
    assert read_job(ad(In="/dev/null")).inputs == ()
    assert read_job(ad(TransferOutput="")).plan.outputs == ()


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"Cmd": None}, "no Cmd"),
        ({"Cmd": ""}, "no Cmd"),
        ({"Cmd": "bad name!"}, "does not name an app"),
        ({"Iwd": None}, "Iwd must be an absolute"),
        ({"Iwd": "relative/dir"}, "Iwd must be an absolute"),
        ({"Out": "../escape.txt"}, "Out '../escape.txt' is outside Iwd"),
        ({"Err": "/etc/passwd"}, "Err '/etc/passwd' is outside Iwd"),
        ({"TransferOutputRemaps": "out=/tmp/x"}, "outside Iwd"),
        ({"TransferOutputRemaps": "out"}, "not name=path"),
        ({"TransferOutput": "sub/out"}, "not an output name"),
        ({"rsc_fpops_est": "lots"}, "not a number"),
        ({"rsc_fpops_est": -1}, "positive"),
        ({"rsc_fpops_est": True}, "must be a number"),
        ({"BoincBatch": "has space"}, "not a batch name"),
        ({"ProjectName": "x"}, "unknown attribute ProjectName"),
        ({"Iwd": Expr("a + b")}, "Iwd must be a string"),
    ],
)
def test_refused(attrs: dict[str, Value | None], message: str) -> None:
    """Each ad that cannot be honoured as written is refused with the reason."""
    with pytest.raises(JobAdError) as info:
        read_job(ad(**attrs))
    assert message in str(info.value)


def test_strictness_and_the_ignore_list() -> None:
    """HTCondor's own attributes pass; others only when BoincIgnoreAttributes names them."""
    full = parse(
        '[ MyType = "Job"; ClusterId = 42; ProcId = 7; Owner = "alice"; JobUniverse = 9;'
        ' GridResource = "unicore host site"; Requirements = true; QDate = 1700000000;'
        ' cmd = "/usr/bin/uppercase"; iwd = "/home/alice/run"; rsc_fpops_est = "1e12";'
        ' rsc_memory_bound = 1000000; delay_bound = ""; app_version_num = "3";'
        ' ProjectName = "x"; Site = 1; BoincIgnoreAttributes = "projectname, Site" ]'
    )
    request = read_job(full)
    assert request.app == "uppercase" and request.proc == "42.7" and request.batch is None
    assert request.params == {"rsc_fpops_est": 1e12, "rsc_memory_bound": 1e6, "app_version_num": 3}
    many = ad(**{f"Custom{i}": i for i in range(7)})
    with pytest.raises(JobAdError, match="Custom0, Custom1, Custom2, Custom3, Custom4 and 2"):
        read_job(many)


def test_grid_contact() -> None:
    """RECOVER finds the contact as the last word of GridJobId."""
    assert grid_contact(ad(GridJobId="unicore host site b/b#0")) == "b/b#0"
    assert grid_contact(ad()) is None
