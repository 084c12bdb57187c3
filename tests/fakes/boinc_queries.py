"""The fake `submit_rpc_handler.php`, read side: the query RPCs (sections 2.5 to 2.9).

Status rules follow 2.15.3 exactly, including where the RPCs disagree (an aborted job with a
canonical result is DONE in query_batch2 but `error` in query_batch).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tests.fakes import boinc_state as st
from tests.fakes.boinc_php import (
    Output,
    PhpFatal,
    Quirks,
    XmlError,
    f,
    hsc,
    i,
    php_float,
    s,
    sql_frames,
)
from tests.fakes.boinc_state import Batch, BoincState, Result, Workunit
from tests.fakes.boinc_submit import Handler, authenticate, get_batch


def print_batch_params(state: BoincState, b: Batch, out: Output, cpu: bool) -> None:
    """print_batch_params(): the batch fields, names unescaped like the real server."""
    app = state.apps_by_id.get(b.app_id)
    out.echo(
        f"\n        <id>{b.id}</id>\n        <create_time>{b.create_time}</create_time>\n"
        f"        <expire_time>{php_float(b.expire_time)}</expire_time>\n"
        "        <est_completion_time>0</est_completion_time>\n"
        f"        <njobs>{b.njobs}</njobs>\n"
        f"        <fraction_done>{php_float(b.fraction_done)}</fraction_done>\n"
        f"        <nerror_jobs>{b.nerror_jobs}</nerror_jobs>\n        <state>{b.state}</state>\n"
        f"        <completion_time>{b.completion_time}</completion_time>\n"
        "        <credit_estimate>0</credit_estimate>\n"
        f"        <credit_canonical>{php_float(b.credit_canonical)}</credit_canonical>\n"
        f"        <name>{b.name}</name>\n"
        f"        <app_name>{app.name if app else 'none'}</app_name>\n"
    )
    if cpu:
        total = sum(r.cpu_time for r in state.results.values() if r.batch_id == b.id)
        out.echo(f"        <total_cpu_time>{php_float(total)}</total_cpu_time>\n")


def query_batches(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """query_batches: every batch of the caller except RETIRED ones."""
    user = authenticate(state, r, None)
    for b in sorted(state.batches.values(), key=lambda b: b.id):
        if b.user_id != user.id or b.state == st.RETIRED:
            continue
        if b.state < st.COMPLETE:
            out.batch_params_notices()
            state.batch_params(b)
        out.echo("    <batch>\n")
        print_batch_params(state, b, out, bool(i(r, "get_cpu_time")))
        out.echo("   </batch>\n")
    out.echo("</query_batches>\n")


def _job_details(state: BoincState, wu: Workunit, out: Output) -> None:
    results = state.results_of(wu.id)
    if wu.canonical_resultid:
        cpu = php_float(state.results[wu.canonical_resultid].cpu_time)
        out.echo(f"            <cpu_time>{cpu}</cpu_time>\n")
    for bit, token in st.ERROR_BITS:
        if wu.error_mask & bit:
            out.echo(f"   <error>{token}</error>\n")
    for res in results:
        if res.outcome == st.CLIENT_ERROR:
            out.echo(f"            <exit_status>{res.exit_status}</exit_status>\n")
    if wu.error_mask:
        status = "error"
    elif wu.canonical_resultid:
        status = "done"
    elif any(res.server_state == st.SRV_IN_PROGRESS for res in results):
        status = "in_progress"
    else:
        status = "queued"
    out.echo(f"            <status>{status}</status>\n")


def query_batch(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """query_batch: batch fields under the root, then one `<job>` per workunit."""
    user = authenticate(state, r, None)
    batch = get_batch(state, r, user)
    out.batch_params_notices()
    state.batch_params(batch)
    print_batch_params(state, batch, out, bool(i(r, "get_cpu_time")))
    for wu in state.wus_of(batch.id):
        out.echo(
            f"        <job>\n        <id>{wu.id}</id>\n        <name>{wu.name}</name>\n"
            f"        <canonical_instance_id>{wu.canonical_resultid}</canonical_instance_id>\n"
        )
        if i(r, "get_job_details"):
            _job_details(state, wu, out)
        out.echo("        </job>\n")
    out.echo("</query_batch>\n")


def query_batch2(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """query_batch2: statuses by batch name, optionally only jobs changed since min_mod_time."""
    user = authenticate(state, r, None)
    batches = []
    for elem in r.findall("batch_name"):
        name = "".join(elem.itertext())
        batch = state.batch_by_name(name)
        if batch is None:
            raise XmlError(f"no batch named {name}")
        if batch.user_id != user.id:
            raise XmlError(f"not owner of {name}")
        batches.append(batch)
    since = f(r, "min_mod_time")
    out.echo(f"<server_time>{php_float(state.now())}</server_time>\n")
    for batch in batches:
        # mod_time is a whole-second TIMESTAMP compared with a fractional FROM_UNIXTIME().
        wus = [w for w in state.wus_of(batch.id) if not since or w.mod_time > since]
        out.echo(f"   <batch_size>{len(wus)}</batch_size>\n")
        for wu in wus:
            if wu.canonical_resultid:
                status = "DONE"
            elif wu.error_mask:
                status = "ERROR"
            elif any(res.sent_time > 0 for res in state.results_of(wu.id)):
                status = "IN_PROGRESS"
            else:
                status = "UNSENT"
            out.echo(
                f"    <job>\n        <job_name>{wu.name}</job_name>\n"
                f"        <status>{status}</status>\n    </job>\n"
            )
    out.echo("</query_batch2>\n")


def state_string(res: Result) -> str:
    """state_string() of html/inc/result.inc, untranslated and simplified for errors."""
    if res.server_state != st.OVER:
        return {1: "Inactive", st.UNSENT: "Unsent", st.SRV_IN_PROGRESS: "In progress"}.get(
            res.server_state, "Unknown"
        )
    if res.outcome == st.SUCCESS:
        return [
            "Completed, waiting for validation",
            "Completed and validated",
            "Completed, marked as invalid",
            "Completed, can't validate",
            "Completed, validation inconclusive",
            "Completed, too late to validate",
        ][res.validate_state]
    texts = {2: "Couldn't send", 3: "Error while computing", 4: "Timed out - no response"}
    texts |= {5: "Didn't need", 6: "Validate error", 7: "Abandoned"}
    return texts.get(res.outcome, "Unknown")


def query_job(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """query_job: the instances of a job by workunit id."""
    user = authenticate(state, r, None)
    wu = state.wus.get(i(r, "job_id"))
    if wu is None:
        raise XmlError("no such job")
    if state.batches[wu.batch_id].user_id != user.id:
        raise XmlError("not owner")
    for res in state.results_of(wu.id):
        out.echo(
            f"    <instance>\n        <name>{res.name}</name>\n        <id>{res.id}</id>\n"
            f"        <state>{state_string(res)}</state>\n"
        )
        if res.server_state == st.OVER:
            for phys in res.out_phys:
                if phys in state.upload:
                    size = len(state.upload[phys])
                    out.echo(
                        f"        <outfile>\n            <size>{size}</size>\n        </outfile>\n"
                    )
        out.echo("</instance>\n")
    out.echo("</query_job>\n")


def query_completed_job(state: BoincState, q: Quirks, r: ET.Element, out: Output) -> None:
    """query_completed_job: the canonical instance, else (intended) an instance that ended."""
    user = authenticate(state, r, None)
    wu = state.wu_by_name(s(r, "job_name"))
    if wu is None:
        raise XmlError("no such job")
    if state.batches[wu.batch_id].user_id != user.id:
        raise XmlError("not owner")
    out.echo(f"<completed_job>\n   <error_mask>{wu.error_mask}</error_mask>\n")
    res: Result | None = None
    if wu.canonical_resultid:
        res = state.results[wu.canonical_resultid]
        out.echo(f"   <canonical_resultid>{res.id}</canonical_resultid>\n")
    elif q.qcj_broken_error_path:
        handler = f"{st.PROJECT_DIR}/html/user/submit_rpc_handler.php"
        out.notice("Warning", "Undefined variable $job_id", handler, 890)
        if q.sql_exceptions:
            raise PhpFatal(
                "You have an error in your SQL syntax; check the manual that corresponds to "
                "your MariaDB server version for the right syntax to use near '' at line 1",
                sql_frames(
                    "{inc}/db_conn.inc(119): DbConn->do_query()",
                    "{inc}/db_conn.inc(137): DbConn->enum_general()",
                    "{inc}/db_conn.inc(141): DbConn->enum_fields()",
                    "{inc}/boinc_db.inc(379): DbConn->enum()",
                    "{user}/submit_rpc_handler.php(890): BoincResult::enum()",
                    "{user}/submit_rpc_handler.php(1120): query_completed_job()",
                ),
            )
    else:
        res = next((x for x in state.results_of(wu.id) if x.outcome in (1, 3, 6)), None)
        if res is not None:
            out.echo(f"   <error_resultid>{res.id}</error_resultid>\n")
    if res is not None:
        out.echo(
            f"   <exit_status>{res.exit_status}</exit_status>\n"
            f"   <elapsed_time>{php_float(res.elapsed_time)}</elapsed_time>\n"
            f"   <cpu_time>{php_float(res.cpu_time)}</cpu_time>\n"
            f"   <stderr_out><![CDATA[\n{hsc(res.stderr_out)}\n   ]]></stderr_out>\n"
        )
    out.echo("</completed_job>\n        </query_completed_job>\n    ")


HANDLERS: dict[str, Handler] = {
    "query_batch": query_batch,
    "query_batch2": query_batch2,
    "query_batches": query_batches,
    "query_completed_job": query_completed_job,
    "query_job": query_job,
}
