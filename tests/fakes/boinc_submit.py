"""The fake `submit_rpc_handler.php`: batch and job RPCs (protocol reference section 2).

Each handler runs after the dispatcher has opened the reply's root element, echoes the rest of
the reply into an `Output` with the live server's whitespace, and ends with `XmlError` or
`PhpFatal` where the real handler would.
"""

from __future__ import annotations

import email.utils
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime

from tests.fakes import boinc_state as st
from tests.fakes.boinc_php import (
    Output,
    Quirks,
    XmlError,
    f,
    i,
    php_float,
    s,
)
from tests.fakes.boinc_state import App, Batch, BoincState, Result, User, Workunit

Handler = Callable[[BoincState, Quirks, ET.Element, Output], None]
FAKE_PID = 4242
PROJECT_FLOPS = 1e9  # 1e9 * sum(expavg_credit) / 200 with no credit yet
CMD_SIZE = 4096


def authenticate(state: BoincState, r: ET.Element, app: App | None) -> User:
    """authenticate_user(): app-level rights when `app` is given, else user-level."""
    auth = s(r, "authenticator")
    if not auth:
        raise XmlError("no authenticator")
    user = state.user_by_auth(auth)
    if user is None:
        raise XmlError("bad authenticator")
    if app is None:
        if not user.has_submit:
            raise XmlError("no file access")
    elif not user.has_submit or not (user.submit_all or app.name in user.apps):
        raise XmlError("no submit access")
    return user


def get_app(state: BoincState, name: str) -> App:
    """The app by name, or `app not found`."""
    app = state.apps.get(name)
    if app is None:
        raise XmlError(f"app not found: {name}")
    return app


def get_batch(state: BoincState, r: ET.Element, user: User) -> Batch:
    """get_batch(): a non-zero batch_id wins over batch_name; the caller must own it."""
    batch_id, name = i(r, "batch_id"), s(r, "batch_name")
    if batch_id:
        batch = state.batches.get(batch_id)
    elif name:
        batch = state.batch_by_name(name)
    else:
        raise XmlError("batch not specified")
    if batch is None:
        raise XmlError("no such batch")
    if batch.user_id != user.id:
        raise XmlError("not owner of batch")
    return batch


def default_batch_name(user: User, app: App, now: float) -> str:
    """`<user name>:<app name>:<RFC-2822 date>`."""
    date = email.utils.format_datetime(datetime.fromtimestamp(now, UTC))
    return f"{user.name}:{app.name}:{date}"


def ping(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """ping: no authentication."""
    out.echo("<success>1</success>\n        </ping>\n    ")


def create_batch(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """create_batch: an empty INIT batch."""
    app = get_app(state, s(r, "app_name"))  # looked up before the authenticator (2.4.5)
    user = authenticate(state, r, app)
    now = state.now()
    bid = state.next_id("batch")
    name = s(r, "batch_name") or default_batch_name(user, app, now)
    state.batches[bid] = Batch(bid, user.id, app.id, name, int(now), f(r, "expire_time"))
    out.echo(f"<batch_id>{bid}</batch_id>\n        </create_batch>\n    ")


def _check_jobs(q: Quirks, app: App, jobs: list[ET.Element], out: Output) -> None:
    if q.template_entity_bug and app.input_template is not None:
        path = f"{st.PROJECT_DIR}/templates/{app.name}_in"
        msg = "simplexml_load_file(): I/O warning : failed to load external entity "
        msg += f"&quot;{path}&quot;"
        out.notice("Warning", msg, f"{st.PROJECT_DIR}/html/inc/submit_util.inc", 350)
        raise XmlError(f"couldn't parse input template file {path}")
    need = app.n_input_files
    for k, job in enumerate(jobs):
        got = len(job.findall("input_file"))
        if need is not None and got != need:
            raise XmlError(f"wrong # of input files for job {k}: need {need}, got {got}")


def estimate_batch(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """estimate_batch: total FLOPs over the project's speed; nothing is created."""
    app = get_app(state, s(r, "batch/app_name"))
    authenticate(state, r, app)
    jobs = r.findall("batch/job")
    _check_jobs(q, app, jobs, out)
    total = 0.0
    for job in jobs:
        flops = f(job, "rsc_fpops_est") or app.template_fpops_est
        if not flops:
            raise XmlError("no rsc_fpops_est given for job")
        total += flops
    out.echo(
        f"<seconds>{php_float(total / PROJECT_FLOPS)}</seconds>\n        </estimate_batch>\n    "
    )


def _stage(state: BoincState, q: Quirks, user: User, fe: ET.Element) -> tuple[str, bool]:
    """Stage one input file; return its physical name and whether it is remote."""
    mode, source = s(fe, "mode"), s(fe, "source")
    if mode == "local_staged":
        return source, False
    if mode == "remote":
        return f"jf_{s(fe, 'md5')}", True
    if mode == "inline":
        name = f"jf_{st.md5_hex(source.encode())}"
        state.download.setdefault(name, source.encode())
        return name, False
    if mode == "sandbox":
        data = state.sandbox.get((user.id, source))
        if data is None:
            raise XmlError(f"sandbox link file {source} not found")
        real = f"jf_{st.md5_hex(data)}"
        state.download.setdefault(real, data)
        if not q.sandbox_fallthrough:
            return real, False
        # The missing `return` runs the inline branch on the sandbox file's *name*.
        bogus = f"jf_{st.md5_hex(source.encode())}"
        state.download.setdefault(bogus, source.encode())
        return bogus, False
    raise XmlError(f"unsupported file mode: {mode}")  # local, semilocal: not modelled


def _create_work(
    state: BoincState,
    q: Quirks,
    batch: Batch,
    jobs: list[tuple[ET.Element, list[tuple[str, bool]]]],
    prio: int,
    params: dict[str, float],
) -> None:
    """create_work: check every stdin line, then insert all jobs (atomic in the fake)."""
    if state.create_work_failure is not None:
        msg, state.create_work_failure = state.create_work_failure, None
        raise XmlError(f"create_work failed: {msg}")
    now = state.now()
    seen = {w.name for w in state.wus.values()}
    app_name = state.apps_by_id[batch.app_id].name
    rows: list[Workunit] = []
    for k, (job, files) in enumerate(jobs):
        name = s(job, "name") or f"{app_name}_{FAKE_PID}_{now:.6f}_{k}"
        cmd = s(job, "command_line")
        line = f' --wu_name {name} --command_line "{cmd}" ' + " ".join(p for p, _ in files)
        if q.target_team_failure and job.find("target_team") is not None:
            raise XmlError("create_work failed: bad stdin argument: --target_team")
        # Names and command lines go on the stdin line unquoted (2.4.5).
        if any(c.isspace() for c in name) or '"' in cmd or len(line) >= CMD_SIZE:
            raise XmlError(f"create_work failed: bad stdin line: {line[:200]}")
        if name in seen:
            raise XmlError(f"create_work failed: Duplicate entry '{name}' for key 'name'")
        missing = [p for p, remote in files if not remote and p not in state.download]
        if missing:
            raise XmlError(f"create_work failed: input file {missing[0]} is not staged")
        seen.add(name)
        wu = Workunit(state.next_id("workunit"), name, batch.id, batch.app_id, int(now), cmd)
        wu.input_files = [p for p, _ in files]
        wu.priority = i(job, "priority") if job.find("priority") is not None else prio
        wu.params = params
        rows.append(wu)
    for wu in rows:
        state.wus[wu.id] = wu
        rid = state.next_id("result")
        state.results[rid] = Result(rid, f"{wu.name}_0", wu.id, batch.id)


def submit_batch(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """submit_batch: the steps of 2.4.5, in order."""
    app = get_app(state, s(r, "batch/app_name"))
    user = authenticate(state, r, app)
    jobs = r.findall("batch/job")
    _check_jobs(q, app, jobs, out)
    staged = [
        (job, [_stage(state, q, user, fe) for fe in job.findall("input_file")]) for job in jobs
    ]
    now = state.now()
    batch_id = i(r, "batch/batch_id")
    if batch_id:
        existing = state.batches.get(batch_id)
        if existing is None:
            raise XmlError(f"no batch {batch_id}")
        if existing.user_id != user.id:
            raise XmlError("not owner of batch")
        if existing.state != st.INIT:
            raise XmlError("batch not in init state")
        batch = existing
    else:
        bid = state.next_id("batch")
        name = s(r, "batch/batch_name") or default_batch_name(user, app, now)
        batch = state.batches[bid] = Batch(bid, user.id, app.id, name, int(now))
    prio = i(r, "batch/priority")
    if r.find("batch/allocation_priority") is not None:
        flops = sum(f(j, "rsc_fpops_est") or f(r, "batch/job_params/rsc_fpops_est") for j in jobs)
        if not flops:
            raise XmlError("no rsc_fpops_est given")
        user.logical_start_time = (
            max(user.logical_start_time, now) + flops / PROJECT_FLOPS / user.quota
        )
        batch.logical_end_time = user.logical_start_time
        prio = -int(batch.logical_end_time)
    batch.njobs = len(jobs)
    params = {e.tag: f(e, ".") for e in r.findall("batch/job_params/*")}
    _create_work(state, q, batch, staged, prio, params)
    for wu in state.wus_of(batch.id):
        wu.app_version_num = i(r, "batch/app_version_num")
    batch.state = st.IN_PROGRESS
    out.echo(f"<batch_id>{batch.id}</batch_id>\n        </submit_batch>\n    ")


def get_templates(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """get_templates: the app's default template files, verbatim."""
    if s(r, "app_name"):
        app = get_app(state, s(r, "app_name"))
    else:
        wu = state.wu_by_name(s(r, "job_name"))
        if wu is None:
            raise XmlError(f"job not found: {s(r, 'job_name')}")
        app = state.apps_by_id[wu.app_id]
    authenticate(state, r, app)
    if app.input_template is None or app.output_template is None:
        raise XmlError("template file missing")
    out.echo(f"<templates>\n{app.input_template}\n{app.output_template}\n</templates>\n")
    out.echo("        </get_templates>\n    ")


def abort_jobs(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """abort_jobs: in order; an error leaves the earlier jobs aborted."""
    user = authenticate(state, r, None)
    for elem in r.findall("job_name"):
        name = "".join(elem.itertext())
        wu = state.wu_by_name(name)
        if wu is None:
            raise XmlError(f"no job {name}")
        if not wu.batch_id:
            raise XmlError(f"job {name} is not part of a batch")
        if state.batches[wu.batch_id].user_id != user.id:
            raise XmlError("not owner of batch")
        out.echo(f"<aborted {name}>\n" if q.abort_jobs_bad_xml else f"<aborted>{name}</aborted>\n")
        state.abort_wu(wu)
    out.echo("<success>1</success>\n        </abort_jobs>\n    ")


def abort_batch(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """abort_batch: cancel every job, whatever the batch state."""
    batch = get_batch(state, r, authenticate(state, r, None))
    for wu in state.wus_of(batch.id):
        state.abort_wu(wu)
    batch.state, batch.completion_time = st.ABORTED, int(state.now())
    out.echo("<success>1</success>\n        </abort_batch>\n    ")


def retire_batch(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """retire_batch: refresh, RETIRED, cancel jobs never sent."""
    batch = get_batch(state, r, authenticate(state, r, None))
    out.batch_params_notices()
    state.batch_params(batch)
    for wu in state.wus_of(batch.id):
        if state.wu_unsent(wu):
            wu.error_mask |= st.WU_CANCELLED
            wu.file_delete_state, wu.mod_time = 1, int(state.now())
    batch.state = st.RETIRED
    out.echo("<success>1</success>\n        </retire_batch>\n    ")


def set_expire_time(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """set_expire_time: the batch lease."""
    batch = get_batch(state, r, authenticate(state, r, None))
    batch.expire_time = f(r, "expire_time")
    out.echo("<success>1</success></set_expire_time>\n")


HANDLERS: dict[str, Handler] = {
    "abort_batch": abort_batch,
    "abort_jobs": abort_jobs,
    "create_batch": create_batch,
    "estimate_batch": estimate_batch,
    "get_templates": get_templates,
    "ping": ping,
    "retire_batch": retire_batch,
    "set_expire_time": set_expire_time,
    "submit_batch": submit_batch,
}
