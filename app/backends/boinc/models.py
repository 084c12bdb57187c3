"""Typed inputs and results of the BOINC RPCs, and their conversion from reply XML."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from xml.etree.ElementTree import Element

from app.backends.boinc.errors import BoincProtocolError
from app.backends.boinc.xml import serialize, text_of

__all__ = [
    "BatchDetail",
    "BatchInfo",
    "BatchState",
    "BatchStatuses",
    "CompletedJob",
    "DownloadResult",
    "JobDetail",
    "JobInstance",
    "JobParams",
    "JobSpec",
    "JobStatus",
    "LocalInput",
    "QueryBatch2Result",
    "RemoteInput",
    "StageResult",
    "Templates",
]

# Names the server puts on create_work's stdin line unquoted: keep them to safe characters.
JOB_NAME_RE = re.compile(r"^[A-Za-z0-9_.:#-]{1,191}$")
MD5_RE = re.compile(r"^[0-9a-f]{32}$")
# create_work's per-job stdin line limit (CMD_SIZE), with room for the option names.
MAX_STDIN_LINE = 4096


class BatchState(IntEnum):
    """`batch.state` values."""

    INIT = 0
    IN_PROGRESS = 1
    COMPLETE = 2
    ABORTED = 3
    RETIRED = 4


@dataclass(frozen=True, slots=True)
class LocalInput:
    """An input file uploaded through job_file.php, named `jf_<md5>` on the server."""

    md5: str

    def __post_init__(self) -> None:
        if not MD5_RE.match(self.md5):
            raise ValueError(f"not a lower-case hex MD5: {self.md5!r}")

    @property
    def phys_name(self) -> str:
        """Physical (download hierarchy) name of the file."""
        return f"jf_{self.md5}"


@dataclass(frozen=True, slots=True)
class RemoteInput:
    """An input file volunteers download from a URL outside the project."""

    url: str
    nbytes: int
    md5: str

    def __post_init__(self) -> None:
        if not MD5_RE.match(self.md5):
            raise ValueError(f"not a lower-case hex MD5: {self.md5!r}")
        if self.nbytes < 0 or any(c.isspace() for c in self.url):
            raise ValueError(f"bad remote input: {self.url!r} ({self.nbytes} bytes)")


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job of a submit_batch: its inputs are listed in input-template order."""

    name: str
    command_line: str = ""
    inputs: Sequence[LocalInput | RemoteInput] = ()
    priority: int | None = None
    # Used by the server only for estimate_batch and allocation priority (issue #2071).
    rsc_fpops_est: float | None = None

    def __post_init__(self) -> None:
        if not JOB_NAME_RE.match(self.name):
            raise ValueError(f"job name must match {JOB_NAME_RE.pattern}: {self.name!r}")
        # The command line sits inside "..." on create_work's stdin line, unescaped.
        if any(c in self.command_line for c in '"\n\r\0'):
            raise ValueError(f"command line may not contain quotes or newlines: {self.name}")
        line = len(self.name) + len(self.command_line.encode()) + 64
        line += sum(len(i.phys_name) + 1 if isinstance(i, LocalInput) else 0 for i in self.inputs)
        line += sum(len(i.url) + 60 if isinstance(i, RemoteInput) else 0 for i in self.inputs)
        if line >= MAX_STDIN_LINE:
            raise ValueError(f"job {self.name}: command line and inputs exceed {MAX_STDIN_LINE}")


@dataclass(frozen=True, slots=True)
class JobParams:
    """Batch-wide `<job_params>`; None (or 0) leaves the template's value."""

    rsc_fpops_est: float | None = None
    rsc_fpops_bound: float | None = None
    rsc_memory_bound: float | None = None
    rsc_disk_bound: float | None = None
    delay_bound: float | None = None


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """Batch fields as query_batch and query_batches print them."""

    id: int
    name: str
    app_name: str
    state: BatchState
    create_time: float
    expire_time: float
    est_completion_time: float
    njobs: int
    fraction_done: float
    nerror_jobs: int
    completion_time: float
    credit_estimate: float
    credit_canonical: float
    total_cpu_time: float | None = None


@dataclass(frozen=True, slots=True)
class JobDetail:
    """A job in a query_batch reply; status fields need get_job_details."""

    id: int
    name: str
    canonical_instance_id: int
    status: str | None = None  # error, done, in_progress, queued
    cpu_time: float | None = None
    errors: tuple[str, ...] = ()
    exit_statuses: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class BatchDetail:
    """A query_batch reply: the batch and its jobs ordered by id."""

    batch: BatchInfo
    jobs: tuple[JobDetail, ...]


@dataclass(frozen=True, slots=True)
class JobStatus:
    """A job in a query_batch2 reply: DONE, ERROR, IN_PROGRESS or UNSENT."""

    name: str
    status: str


@dataclass(frozen=True, slots=True)
class BatchStatuses:
    """The jobs query_batch2 listed for one requested batch."""

    batch_name: str
    jobs: tuple[JobStatus, ...]


@dataclass(frozen=True, slots=True)
class QueryBatch2Result:
    """A query_batch2 reply."""

    server_time: float
    batches: tuple[BatchStatuses, ...]

    @property
    def jobs(self) -> tuple[JobStatus, ...]:
        """All listed jobs, in reply order."""
        return tuple(j for b in self.batches for j in b.jobs)

    @property
    def next_min_mod_time(self) -> float:
        """min_mod_time for the next incremental poll.

        `workunit.mod_time` has one-second resolution, so a change later in the second of
        `server_time` would be missed; poll from a second earlier and deduplicate.
        """
        return max(self.server_time - 1.0, 0.0)


@dataclass(frozen=True, slots=True)
class CompletedJob:
    """A query_completed_job reply; fields the server left out are None."""

    error_mask: int
    canonical_resultid: int = 0
    error_resultid: int = 0
    exit_status: int | None = None
    elapsed_time: float | None = None
    cpu_time: float | None = None
    stderr_out: str | None = None
    # True when the reply was cut short by the server's broken no-canonical-result path.
    partial: bool = False


@dataclass(frozen=True, slots=True)
class JobInstance:
    """An instance (result) in a query_job reply."""

    id: int
    name: str
    state: str
    outfile_sizes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Templates:
    """An app's default input and output templates."""

    input_template: str
    output_template: str
    input_open_names: tuple[str, ...]
    output_open_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StageResult:
    """What staging input files did: md5s already present and md5s uploaded."""

    present: tuple[str, ...]
    uploaded: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DownloadResult:
    """A finished download."""

    path: str
    nbytes: int
    md5: str
    server_filename: str | None = field(default=None)


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
