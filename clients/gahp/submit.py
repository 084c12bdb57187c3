"""BOINC_SUBMIT: parse the gridmanager's batch description and create it on the gateway.

Flow (api.md section 6): create the batch open, hash each distinct local input once,
ask which files the gateway lacks (associating them with the batch so they cannot be
collected meanwhile), upload those, add the jobs in chunks, submit. A batch that already
exists with the same jobs is a success, because the gridmanager resubmits with the same
names after a restart when it could not confirm an earlier submission (gahp.md 2.10).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from clients.gahp.context import (
    CommandError,
    Context,
    ParseError,
    bounded_gather,
    describe,
    parse_count,
    step,
)
from clients.gahp.localfs import md5_file
from clients.gahp.rest import BatchSummary, GatewayError, Project

log = logging.getLogger(__name__)

# The six trailing fields of BOINC_SUBMIT since HTCondor 8.7.10 (gahp.md 2.3).
PARAM_FIELDS = (
    "rsc_fpops_est",
    "rsc_fpops_bound",
    "rsc_memory_bound",
    "rsc_disk_bound",
    "delay_bound",
    "app_version_num",
)
JOBS_PER_REQUEST = 500
MD5S_PER_QUERY = 1000
PARALLEL_FILES = 4

T = TypeVar("T")


@dataclass(frozen=True)
class SubmitJob:
    """One job of a BOINC_SUBMIT: name, arguments, local input paths in order, and the
    output names it asks for (None: all of the app's; only the Condor-B form names them)."""

    name: str
    args: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Submit:
    """BOINC_SUBMIT <batch> <app> <#jobs> {job}* [six job parameters], or the Condor-B
    design's form, in which each job ends with ALL or <#outputs> <name>... and no
    parameters follow."""

    context: ClassVar[str] = "error submitting jobs"
    batch: str
    app: str
    jobs: tuple[SubmitJob, ...]
    params: tuple[str, ...]
    form: str = "gridmanager"

    @classmethod
    def parse(cls, args: Sequence[str]) -> Submit:
        """The gridmanager's form first; the design's when the token counts do not fit.

        A line both forms can read (one job whose output count and names happen to look
        like the six parameters) is the gridmanager's, unless its parameters are no
        numbers, as the design's output names would be.
        """
        if len(args) < 3:
            raise ParseError("BOINC_SUBMIT needs <batch> <app> <#jobs>")
        try:
            submit = cls._gridmanager_form(args)
        except ParseError as exc:
            try:
                return cls._design_form(args)
            except ParseError as design:
                raise ParseError(f"{exc}; as the Condor-B form: {design}") from None
        if not all(_is_param(value) for value in submit.params):
            try:
                return cls._design_form(args)
            except ParseError:
                pass  # the gridmanager's form answers the bad value at run time
        return submit

    @classmethod
    def _gridmanager_form(cls, args: Sequence[str]) -> Submit:
        """Exact token counts; with or without the six trailing parameters."""
        njobs = parse_count(args[2], "job count", len(args))
        pos, jobs = 3, []
        for _ in range(njobs):  # bounded by the job count, itself bounded by len(args)
            job, pos = _job_head(args, pos)
            jobs.append(job)
        params = tuple(args[pos:])
        if len(params) not in (0, len(PARAM_FIELDS)):
            raise ParseError(f"BOINC_SUBMIT has {len(params)} trailing fields, expected 0 or 6")
        return cls(batch=args[0], app=args[1], jobs=tuple(jobs), params=params)

    @classmethod
    def _design_form(cls, args: Sequence[str]) -> Submit:
        """Each job ends with ALL or a count of output names; nothing follows the jobs."""
        njobs = parse_count(args[2], "job count", len(args))
        pos, jobs = 3, []
        for _ in range(njobs):  # bounded by the job count, itself bounded by len(args)
            job, pos = _job_head(args, pos)
            if pos >= len(args):
                raise ParseError(f"BOINC_SUBMIT job {job.name} has no ALL or output count")
            if args[pos].upper() == "ALL":
                outputs = None
                pos += 1
            else:
                nout = parse_count(args[pos], "output count", len(args) - pos - 1)
                outputs = tuple(args[pos + 1 : pos + 1 + nout])
                pos += 1 + nout
            jobs.append(SubmitJob(job.name, job.args, job.inputs, outputs))
        if pos != len(args):
            raise ParseError(f"BOINC_SUBMIT has {len(args) - pos} fields after the last job")
        return cls(batch=args[0], app=args[1], jobs=tuple(jobs), params=(), form="Condor-B")

    def rest_params(self) -> dict[str, float]:
        """The job parameters as the gateway's batch params; NULL or empty means unset."""
        result: dict[str, float] = {}
        for field, raw in zip(PARAM_FIELDS, self.params, strict=False):
            if raw in ("NULL", ""):
                continue
            if not _is_param(raw):
                raise CommandError(f"{self.context}: bad {field} value {raw!r}")
            if field == "app_version_num":
                version = app_version(float(raw))
                if version is None:
                    raise CommandError(f"{self.context}: bad app_version_num {raw!r}")
                if version:
                    result[field] = version
                continue
            result[field] = float(raw)
        return result

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """Create, fill and submit the batch."""
        params = self.rest_params()
        async with step("error getting templates"):
            app = await ctx.client.app(project, self.app)
        app_outputs = {output.name for output in app.outputs}
        for job in self.jobs:
            if len(job.inputs) != len(app.inputs):
                raise CommandError(
                    f"{self.context}: job {job.name} has {len(job.inputs)} input files"
                    f" but app {self.app} takes {len(app.inputs)}"
                )
            bad = [name for name in job.outputs or () if name not in app_outputs]
            if bad:
                raise CommandError(
                    f"{self.context}: job {job.name} asks for output {bad[0]},"
                    f" which app {self.app} does not have"
                )
        existing = await self._create(ctx, project, params)
        if existing is None:
            return ["NULL"]
        todo = [job for job in self.jobs if job.name not in existing]
        async with step("error processing input files"):
            md5_of = await self._upload_inputs(ctx, project, todo)
        async with step(self.context):
            for chunk in _chunks(todo, JOBS_PER_REQUEST):
                specs = [_job_spec(job, app.inputs, md5_of) for job in chunk]
                await ctx.client.add_jobs(project, self.batch, specs)
            await ctx.client.submit_batch(project, self.batch)
        log.info("submitted batch %s with %d jobs (%s form)", self.batch, len(self.jobs), self.form)
        return ["NULL"]

    async def _create(
        self, ctx: Context, project: Project, params: dict[str, float]
    ) -> set[str] | None:
        """Create the batch open; return the jobs it already has, None when nothing is left."""
        summary: BatchSummary | None
        try:
            created, summary = await ctx.client.create_batch(
                project, name=self.batch, app=self.app, params=params
            )
        except GatewayError as exc:
            if exc.status != 409:
                raise CommandError(f"error creating batch: {describe(exc)}") from exc
            created, summary = False, None
        if created:
            return set()
        async with step("error creating batch"):
            if summary is None:
                summary = await ctx.client.batch(project, self.batch)
            reply = await ctx.client.query_batches(project, [self.batch], "0")
        existing = {job.name for group in reply.batches for job in group.jobs}
        wanted = {job.name for job in self.jobs}
        if summary.app != self.app:
            raise CommandError(
                f"error creating batch: -1 batch {self.batch} exists for app {summary.app}"
            )
        if summary.state != "open":
            if existing == wanted:
                log.info("batch %s already submitted with the same jobs", self.batch)
                return None
            raise CommandError(
                f"error creating batch: -1 batch {self.batch} exists with other jobs"
            )
        if not existing <= wanted:
            raise CommandError(
                f"error creating batch: -1 open batch {self.batch} has jobs not in this request"
            )
        log.info("resuming open batch %s (%d jobs present)", self.batch, len(existing))
        return existing

    async def _upload_inputs(
        self, ctx: Context, project: Project, jobs: list[SubmitJob]
    ) -> dict[str, str]:
        """Hash each distinct path once, upload what the gateway lacks; path -> md5."""
        paths = list(dict.fromkeys(path for job in jobs for path in job.inputs))
        hashed = await bounded_gather((md5_file(os.path.abspath(p)) for p in paths), PARALLEL_FILES)
        md5_of = {path: md5 for path, (md5, _) in zip(paths, hashed, strict=True)}
        source: dict[str, tuple[str, int]] = {}
        for path, (md5, size) in zip(paths, hashed, strict=True):
            source.setdefault(md5, (os.path.abspath(path), size))
        missing: list[str] = []
        for chunk in _chunks(list(source), MD5S_PER_QUERY):
            missing += await ctx.client.missing_files(project, chunk, self.batch)
        unknown = [md5 for md5 in missing if md5 not in source]
        if unknown:
            raise CommandError(f"error processing input files: -1 unexpected md5 {unknown[0]}")
        await bounded_gather(
            (
                ctx.client.put_file(
                    project, md5=md5, path=source[md5][0], size=source[md5][1], batch=self.batch
                )
                for md5 in dict.fromkeys(missing)
            ),
            PARALLEL_FILES,
        )
        log.info("batch %s: %d distinct inputs, %d uploaded", self.batch, len(source), len(missing))
        return md5_of


def _job_spec(job: SubmitJob, input_names: list[str], md5_of: dict[str, str]) -> dict[str, Any]:
    # Binding is by position, as in BOINC; HTCondor's file names are not used.
    inputs = [{"name": n, "md5": md5_of[p]} for n, p in zip(input_names, job.inputs, strict=True)]
    spec: dict[str, Any] = {"name": job.name, "args": list(job.args), "inputs": inputs}
    if job.outputs is not None:
        spec["outputs"] = list(dict.fromkeys(job.outputs))
    return spec


def _job_head(args: Sequence[str], pos: int) -> tuple[SubmitJob, int]:
    """Name, arguments and input pairs of the job starting at pos; and where it ends."""
    if pos + 2 > len(args):
        raise ParseError("BOINC_SUBMIT ends inside a job")
    name = args[pos]
    nargs = parse_count(args[pos + 1], "argument count", len(args) - pos - 2)
    job_args = tuple(args[pos + 2 : pos + 2 + nargs])
    pos += 2 + nargs
    if pos >= len(args):
        raise ParseError(f"BOINC_SUBMIT job {name} has no input count")
    ninputs = parse_count(args[pos], "input count", (len(args) - pos - 1) // 2)
    paths = tuple(args[pos + 1 + 2 * i] for i in range(ninputs))
    return SubmitJob(name=name, args=job_args, inputs=paths), pos + 1 + 2 * ninputs


def app_version(value: float) -> int | None:
    """An app_version_num as BOINC takes it: a whole number, 0 for any version (None: not
    one). The gridmanager sends the job attribute's string, so "7" and "7.0" both mean 7."""
    if not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


def _is_param(raw: str) -> bool:
    """A value the gridmanager could have sent as a job parameter: NULL, empty or a number."""
    if raw in ("NULL", ""):
        return True
    try:
        value = float(raw)
    except ValueError:
        return False
    return math.isfinite(value) and value >= 0


def _chunks(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
