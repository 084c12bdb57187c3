"""Batch outputs as a zip, streamed: constant memory whatever the batch size."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from typing import IO, cast

from sqlalchemy import select
from sqlmodel import col

from app.db import Database
from app.models import Job, JobOutput
from app.services.store import READ_CHUNK, FileStore
from app.states import JobState


class _Sink:
    """A write-only, non-seekable file object whose bytes are drained by the generator."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.pos = 0

    def write(self, data: bytes) -> int:
        self.buf += data
        self.pos += len(data)
        return len(data)

    def tell(self) -> int:
        return self.pos

    def flush(self) -> None:
        return None

    def drain(self) -> bytes:
        out = bytes(self.buf)
        self.buf.clear()
        return out


def zip_stream(
    db: Database, store: FileStore, *, batch_id: int, page: int = 500
) -> Iterator[bytes]:
    """Yield a zip of every output of the batch's done jobs, page by page of jobs."""
    sink = _Sink()
    with zipfile.ZipFile(cast(IO[bytes], sink), mode="w", compression=zipfile.ZIP_STORED) as zf:
        last = 0
        while True:
            with db.read_session() as session:
                ids = list(
                    session.execute(
                        select(col(Job.id))
                        .where(
                            col(Job.batch_id) == batch_id,
                            col(Job.state) == JobState.done.value,
                            col(Job.id) > last,
                        )
                        .order_by(col(Job.id))
                        .limit(page)
                    ).scalars()
                )
                rows = session.execute(
                    select(col(Job.id), col(Job.name), col(JobOutput.name), col(JobOutput.md5))
                    .join(JobOutput, col(JobOutput.job_id) == col(Job.id))
                    .where(col(Job.id).in_(ids))
                    .order_by(col(Job.id), col(JobOutput.name))
                ).all()
            if not ids:
                break
            last = ids[-1]
            for _job_id, job_name, out_name, md5 in rows:
                path = store.path(md5)
                if not path.exists():
                    continue  # collected after the batch was retired
                info = zipfile.ZipInfo(f"{job_name}/{out_name}")
                info.compress_type = zipfile.ZIP_STORED
                with zf.open(info, "w", force_zip64=True) as dst, open(path, "rb") as src:
                    while chunk := src.read(READ_CHUNK):
                        dst.write(chunk)
                        yield sink.drain()
            if len(ids) < page:
                break
    yield sink.drain()
