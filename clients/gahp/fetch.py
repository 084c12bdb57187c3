"""BOINC_FETCH_OUTPUT: bring a finished job's files home and report its exit and times.

ALL places every output in iwd under its own name; SOME places each requested output
at its destination. A SOME pair whose source is no output of the app is HTCondor's
own stdout or stderr file (gahp.md 2.5): the stderr one is served by appending the
job's stderr to the stderr path, `/dev/null` is skipped, any other gets the job's
stdout. Names chosen by the server never leave iwd; destinations chosen by the user
(absolute remaps) are honoured as HTCondor would.

The Condor-B design's form has no stderr argument and no SOME keyword: `ALL` or a bare
pair count. It only places outputs, each destination a plain file name in the directory,
and answers NULL alone, since its clients expect no exit status.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from clients.gahp.context import (
    CommandError,
    Context,
    ParseError,
    bounded_gather,
    parse_count,
    step,
)
from clients.gahp.localfs import (
    LocalFileError,
    append_bytes,
    is_dev_null,
    is_safe_name,
    under_iwd,
    user_path,
    write_bytes,
    write_stream,
)
from clients.gahp.rest import FileInfo, GatewayError, JobInfo, Project, check_response, job_path

log = logging.getLogger(__name__)

PARALLEL_DOWNLOADS = 4


@dataclass(frozen=True)
class FetchOutput:
    """BOINC_FETCH_OUTPUT <job> <iwd> <stderr> ALL|SOME <#pairs> {<src> <dst>}*, or the
    Condor-B design's <job> <dir> ALL|<#pairs> {<src> <dst>}* (stderr is None)."""

    context: ClassVar[str] = "error fetching output"
    job: str
    iwd: str
    stderr: str | None
    fetch_all: bool
    pairs: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, args: Sequence[str]) -> FetchOutput:
        """The gridmanager's form first; the design's when its tokens do not fit."""
        try:
            return cls._gridmanager_form(args)
        except ParseError as exc:
            try:
                return cls._design_form(args)
            except ParseError as design:
                raise ParseError(f"{exc}; as the Condor-B form: {design}") from None

    @classmethod
    def _gridmanager_form(cls, args: Sequence[str]) -> FetchOutput:
        """Check the mode word and that exactly #pairs pairs follow."""
        if len(args) < 5:
            raise ParseError("BOINC_FETCH_OUTPUT needs <job> <iwd> <stderr> <mode> <#pairs>")
        mode = args[3].upper()
        if mode not in ("ALL", "SOME"):
            raise ParseError(f"BOINC_FETCH_OUTPUT mode {args[3]!r} is neither ALL nor SOME")
        pairs = _pairs(args, 4)
        return cls(job=args[0], iwd=args[1], stderr=args[2], fetch_all=mode == "ALL", pairs=pairs)

    @classmethod
    def _design_form(cls, args: Sequence[str]) -> FetchOutput:
        """ALL alone, or a bare count and exactly that many pairs."""
        if len(args) < 3:
            raise ParseError("needs <job> <dir> ALL|<#files>")
        if args[2].upper() == "ALL":
            if len(args) != 3:
                raise ParseError("ALL must end the line")
            return cls(job=args[0], iwd=args[1], stderr=None, fetch_all=True, pairs=())
        pairs = _pairs(args, 2)
        return cls(job=args[0], iwd=args[1], stderr=None, fetch_all=False, pairs=pairs)

    async def run(self, ctx: Context, project: Project) -> list[str]:
        """Download; the gridmanager's form answers NULL <exit> <wall> <cpu>, the design's
        NULL alone."""
        async with step(self.context):
            info = await ctx.client.job(project, self.job)
        _require_done(info, self.context)
        iwd = Path(os.path.abspath(self.iwd))
        if not await asyncio.to_thread(iwd.is_dir):
            what = "iwd " if self.stderr is not None else ""
            raise CommandError(f"{self.context}: {what}{iwd} is not a directory")
        produced = {f.name: f for f in info.outputs}
        known = await self._app_outputs(ctx, project, info)
        if self.stderr is None:
            await self._fetch_design(ctx, project, iwd, produced, known)
            return ["NULL"]
        stderr_path = user_path(iwd, self.stderr)
        placed: dict[str, list[Path]] = {}
        stdout_targets: list[Path] = []
        async with step(self.context):
            for src, dst in self.pairs:
                dst_path = user_path(iwd, dst)
                if src in known:
                    if src not in produced:
                        raise CommandError(f"{self.context}: job {self.job} has no output {src}")
                    placed.setdefault(src, []).append(dst_path)
                elif not is_dev_null(dst_path) and not _same(dst_path, stderr_path):
                    stdout_targets.append(dst_path)
            # ALL puts every output in iwd; a pair naming an output renames it.
            targets = {n: [under_iwd(iwd, n)] for n in produced} if self.fetch_all else {}
            targets.update(placed)
            await self._download_all(ctx, project, produced, targets)
            if not is_dev_null(stderr_path):
                await append_bytes(stderr_path, await self._log(ctx, project, "stderr"))
            if stdout_targets:
                text = await self._log(ctx, project, "stdout")
                for place in stdout_targets:
                    await write_bytes(place, text)
        return [
            "NULL",
            str(info.exit_code or 0),
            f"{info.wall_seconds or 0.0:.6f}",
            f"{info.cpu_seconds or 0.0:.6f}",
        ]

    async def _fetch_design(
        self,
        ctx: Context,
        project: Project,
        directory: Path,
        produced: dict[str, FileInfo],
        known: set[str],
    ) -> None:
        """Every output under its own name, or each src to dst; dst is a plain file name."""
        placed: dict[str, list[Path]] = {}
        for src, dst in self.pairs:
            if src not in known:
                raise CommandError(f"{self.context}: {src} is not an output of job {self.job}")
            if src not in produced:
                raise CommandError(f"{self.context}: job {self.job} has no output {src}")
            if not is_safe_name(dst):
                raise CommandError(
                    f"{self.context}: destination {dst!r} is not a file name in {directory}"
                )
            placed.setdefault(src, []).append(directory / dst)
        targets = {n: [under_iwd(directory, n)] for n in produced} if self.fetch_all else placed
        async with step(self.context):
            await self._download_all(ctx, project, produced, targets)

    async def _download_all(
        self,
        ctx: Context,
        project: Project,
        produced: dict[str, FileInfo],
        targets: dict[str, list[Path]],
    ) -> None:
        await bounded_gather(
            (self._download(ctx, project, produced[n], p) for n, p in targets.items()),
            PARALLEL_DOWNLOADS,
        )
        log.info("fetched %d outputs of job %s", len(targets), self.job)

    async def _app_outputs(self, ctx: Context, project: Project, info: JobInfo) -> set[str]:
        """Output names of the job's app; the produced ones when the app is unknown."""
        names = {f.name for f in info.outputs}
        if info.app:
            try:
                app = await ctx.client.app(project, info.app)
            except GatewayError as exc:
                log.warning("cannot read app %s (%s); using the job's outputs", info.app, exc)
            else:
                names |= {o.name for o in app.outputs}
        return names

    async def _download(
        self, ctx: Context, project: Project, output: FileInfo, places: list[Path]
    ) -> None:
        first, *copies = places
        async with ctx.client.stream(project, job_path(self.job, "outputs", output.name)) as resp:
            if not resp.is_success:
                await resp.aread()
                check_response(resp)
            await write_stream(first, resp.aiter_bytes(), expect_md5=output.md5)
        for place in copies:
            try:
                await asyncio.to_thread(shutil.copyfile, first, place)
            except OSError as exc:
                raise LocalFileError(f"cannot write {place}: {exc.strerror or exc}") from exc

    async def _log(self, ctx: Context, project: Project, which: str) -> bytes:
        """The job's captured stdout or stderr; nothing captured reads as empty."""
        try:
            response = await ctx.client.request(project, "GET", job_path(self.job, which))
        except GatewayError as exc:
            if exc.status == 404 and exc.code != "job_not_found":
                return b""
            raise
        return response.content


def _pairs(args: Sequence[str], at: int) -> tuple[tuple[str, str], ...]:
    """The <#pairs> count at index `at` and exactly that many pairs after it, to the end."""
    npairs = parse_count(args[at], "pair count", (len(args) - at - 1) // 2)
    if len(args) != at + 1 + 2 * npairs:
        raise ParseError("BOINC_FETCH_OUTPUT pair count does not match its arguments")
    return tuple((args[at + 1 + 2 * i], args[at + 2 + 2 * i]) for i in range(npairs))


def _require_done(info: JobInfo, context: str) -> None:
    if info.state == "done":
        return
    if info.state in ("error", "aborted"):
        reason = info.error or "no reason given"
        raise CommandError(f"{context}: -1 job {info.name} ended in state {info.state}: {reason}")
    raise CommandError(f"{context}: -1 job {info.name} is {info.state}, not done")


def _same(a: Path, b: Path) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)
