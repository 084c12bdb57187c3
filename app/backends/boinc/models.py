"""Typed inputs and results of the BOINC RPCs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

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

    @classmethod
    def from_args(cls, name: str, args: Sequence[str], **kwargs: Any) -> JobSpec:
        """A job whose command line is `args` joined by spaces.

        create_work splits the line on spaces and nothing unquotes it, so an argument with
        whitespace or quotes cannot be passed faithfully and is refused.
        """
        for arg in args:
            if not arg or any(c.isspace() or c in "\"'" for c in arg):
                raise ValueError(f"job {name}: argument cannot be passed to BOINC: {arg!r}")
        return cls(name, " ".join(args), **kwargs)


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
