"""Conversion of parsed reply XML (see `xml.parse_reply`) into the typed results of `models`."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from xml.etree.ElementTree import Element

from app.backends.boinc.errors import BoincProtocolError
from app.backends.boinc.models import (
    BatchDetail,
    BatchInfo,
    BatchState,
    BatchStatuses,
    CompletedJob,
    JobDetail,
    JobInstance,
    JobStatus,
    QueryBatch2Result,
    Templates,
)
from app.backends.boinc.xml import serialize, text_of

__all__ = [
    "batch_detail",
    "batch_info",
    "clean_stderr",
    "completed_job",
    "job_instances",
    "number",
    "positive_int",
    "query_batch2_result",
    "salvage_completed_job",
    "templates",
]


def number(root: Element, tag: str, op: str) -> float:
    """A required numeric child of the reply root."""
    try:
        return float(text_of(root, tag))
    except ValueError:
        raise BoincProtocolError(f"{op}: reply without a valid <{tag}>") from None


def positive_int(root: Element, tag: str, op: str) -> int:
    """A required positive integer child of the reply root (an id)."""
    value = number(root, tag, op)
    if value <= 0 or value != int(value):
        raise BoincProtocolError(f"{op}: reply without a valid <{tag}>")
    return int(value)


def _num(elem: Element | None, tag: str) -> float:
    try:
        return float(text_of(elem, tag, "0"))
    except ValueError:
        return 0.0


def _int(elem: Element | None, tag: str) -> int:
    return int(_num(elem, tag))


def _opt_num(elem: Element, tag: str) -> float | None:
    if elem.find(tag) is None:
        return None
    return _num(elem, tag)


def batch_info(elem: Element) -> BatchInfo:
    """Batch fields from a `<batch>` element or the query_batch root."""
    try:
        state = BatchState(_int(elem, "state"))
    except ValueError:
        state = BatchState.IN_PROGRESS
    return BatchInfo(
        id=_int(elem, "id"),
        name=text_of(elem, "name"),
        app_name=text_of(elem, "app_name"),
        state=state,
        create_time=_num(elem, "create_time"),
        expire_time=_num(elem, "expire_time"),
        est_completion_time=_num(elem, "est_completion_time"),
        njobs=_int(elem, "njobs"),
        fraction_done=_num(elem, "fraction_done"),
        nerror_jobs=_int(elem, "nerror_jobs"),
        completion_time=_num(elem, "completion_time"),
        credit_estimate=_num(elem, "credit_estimate"),
        credit_canonical=_num(elem, "credit_canonical"),
        total_cpu_time=_opt_num(elem, "total_cpu_time"),
    )


def batch_detail(root: Element) -> BatchDetail:
    """Convert a query_batch reply."""
    jobs = tuple(
        JobDetail(
            id=_int(job, "id"),
            name=text_of(job, "name"),
            canonical_instance_id=_int(job, "canonical_instance_id"),
            status=text_of(job, "status") or None,
            cpu_time=_opt_num(job, "cpu_time"),
            errors=tuple((e.text or "").strip() for e in job.findall("error")),
            exit_statuses=tuple(int(float(e.text or 0)) for e in job.findall("exit_status")),
        )
        for job in root.findall("job")
    )
    return BatchDetail(batch=batch_info(root), jobs=jobs)


def query_batch2_result(root: Element, batch_names: Sequence[str]) -> QueryBatch2Result:
    """Convert a query_batch2 reply: each `<batch_size>` is followed by that many jobs."""
    batches: list[BatchStatuses] = []
    current: list[JobStatus] | None = None
    for child in root:
        if child.tag == "batch_size":
            current = []
            name = batch_names[len(batches)] if len(batches) < len(batch_names) else ""
            batches.append(BatchStatuses(batch_name=name, jobs=()))
        elif child.tag == "job" and current is not None:
            current.append(JobStatus(text_of(child, "job_name"), text_of(child, "status")))
            batches[-1] = BatchStatuses(batches[-1].batch_name, tuple(current))
    return QueryBatch2Result(server_time=_num(root, "server_time"), batches=tuple(batches))


def clean_stderr(raw: str) -> str:
    """Undo the htmlspecialchars and the framing whitespace of `<stderr_out>`."""
    text = html.unescape(raw)
    if text.startswith("\n"):
        text = text[1:]
    stripped = text.rstrip(" ")
    if stripped.endswith("\n") and len(text) - len(stripped) == 3:
        stripped = stripped[:-1]
    return stripped


def completed_job(root: Element) -> CompletedJob:
    """Convert a query_completed_job reply."""
    job = root.find("completed_job")
    if job is None:
        job = Element("completed_job")
    stderr = job.find("stderr_out")
    exit_status = _opt_num(job, "exit_status")
    return CompletedJob(
        error_mask=_int(job, "error_mask"),
        canonical_resultid=_int(job, "canonical_resultid"),
        error_resultid=_int(job, "error_resultid"),
        exit_status=None if exit_status is None else int(exit_status),
        elapsed_time=_opt_num(job, "elapsed_time"),
        cpu_time=_opt_num(job, "cpu_time"),
        stderr_out=None if stderr is None else clean_stderr(stderr.text or ""),
    )


_PARTIAL_JOB_RE = re.compile(r"<completed_job>\s*<error_mask>\s*(-?\d+)\s*</error_mask>")


def salvage_completed_job(exc: BoincProtocolError) -> CompletedJob | None:
    """The error mask of a query_completed_job reply cut short after `<error_mask>`."""
    text = exc.reply_text or ""
    match = _PARTIAL_JOB_RE.search(text)
    if match is None or "<canonical_resultid>" in text:
        return None
    return CompletedJob(error_mask=int(match.group(1)), partial=True)


def job_instances(root: Element) -> tuple[JobInstance, ...]:
    """Convert a query_job reply."""
    return tuple(
        JobInstance(
            id=_int(inst, "id"),
            name=text_of(inst, "name"),
            state=text_of(inst, "state"),
            outfile_sizes=tuple(_int(o, "size") for o in inst.findall("outfile")),
        )
        for inst in root.findall("instance")
    )


def _template_text(elem: Element | None) -> str:
    if elem is None:
        return ""
    elem.tail = None
    return serialize(elem)


def templates(root: Element) -> Templates:
    """Convert a get_templates reply; open names are collected in document order."""
    tpl = root.find("templates")
    in_t = tpl.find("input_template") if tpl is not None else None
    out_t = tpl.find("output_template") if tpl is not None else None
    return Templates(
        input_template=_template_text(in_t),
        output_template=_template_text(out_t),
        input_open_names=tuple(
            (e.text or "").strip() for e in (in_t.iter("open_name") if in_t is not None else ())
        ),
        output_open_names=tuple(
            (e.text or "").strip() for e in (out_t.iter("open_name") if out_t is not None else ())
        ),
    )
