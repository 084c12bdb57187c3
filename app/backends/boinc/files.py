"""Content-based input files: job_file.php's query_files and upload_files.

The race-free order (protocol reference 3.6) is create_batch, then `stage_files` with that
batch id (query_files, then upload only the absent files), then submit_batch.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import BinaryIO

from app.backends.boinc import models as m
from app.backends.boinc.errors import (
    BoincError,
    BoincFileError,
    BoincProtocolError,
    BoincRequestError,
    body_dropped,
)
from app.backends.boinc.transport import JOB_FILE, BoincTransport
from app.backends.boinc.xml import add

__all__ = ["PART_OVERHEAD", "REQUEST_OVERHEAD", "FileOps"]

# Bytes counted against max_upload_bytes (PHP's post_max_size) besides the file contents: the
# headers and boundary of each file part, and the `request` field with its XML.
PART_OVERHEAD = 512
REQUEST_OVERHEAD = 8192


def _is_duplicate(exc: BoincError, key: str) -> bool:
    """Whether the failure may be an SQL duplicate of `key` (protocol reference 11.3).

    On PHP 8 a duplicate kills the script mid-reply; with display_errors off the reply is just
    cut short, so a truncated reply without a visible fatal error counts as a possible
    duplicate. The recoveries below are safe either way: they re-ask the server.
    """
    if isinstance(exc, BoincProtocolError):
        if exc.php_fatal is None:
            return True
        return "Duplicate entry" in exc.php_fatal and key in exc.php_fatal
    return "Duplicate entry" in exc.message and key in exc.message


def _md5_of(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class FileOps(BoincTransport):
    """query_files, upload_files and the two combined."""

    def _query_files_once(self, md5s: Sequence[str], batch_id: int, delete_time: int) -> set[int]:
        root = self._request("query_files")
        if batch_id:
            add(root, "batch_id", batch_id)
        if delete_time:
            add(root, "delete_time", int(delete_time))
        for md5 in md5s:
            add(root, "phys_name", f"jf_{md5}")
        reply = self._rpc("query_files", root, endpoint=JOB_FILE)
        absent = reply.root.find("absent_files")
        if absent is None:
            # An empty reply must not read as "all present" (the C++ client's mistake).
            raise BoincProtocolError("query_files: reply without absent_files")
        try:
            return {int((f.text or "").strip()) for f in absent.findall("file")}
        except ValueError:
            raise BoincProtocolError("query_files: bad index in absent_files") from None

    def query_files(
        self, md5s: Sequence[str], batch_id: int = 0, delete_time: int = 0
    ) -> list[str]:
        """Return the md5s the server lacks; present ones get batch_id and delete_time."""
        unique = [m.LocalInput(x).md5 for x in dict.fromkeys(md5s)]
        if not unique:
            return []
        try:
            absent = self._query_files_once(unique, batch_id, delete_time)
        except BoincProtocolError as exc:
            if not batch_id or not _is_duplicate(exc, "job_file_id"):
                raise
            absent = self._reassociate(unique, batch_id, delete_time)
        return [md5 for i, md5 in enumerate(unique) if i in absent]

    def _reassociate(self, unique: list[str], batch_id: int, delete_time: int) -> set[int]:
        """Recover from an association that already exists (PHP 8 aborts the whole reply)."""
        absent = self._query_files_once(unique, 0, delete_time)
        for i, md5 in enumerate(unique):
            if i in absent:
                continue
            try:
                if self._query_files_once([md5], batch_id, delete_time):
                    absent.add(i)
            except BoincProtocolError as exc:
                # Already associated with this batch: exactly what we wanted. (The query just
                # before, without association, showed the server healthy and the file there.)
                if not _is_duplicate(exc, "job_file_id"):
                    raise
        return absent

    def _plan_uploads(
        self, files: Sequence[tuple[str, str | os.PathLike[str]]]
    ) -> list[list[tuple[str, Path, int]]]:
        """Check the files, then group them into requests within the PHP limits."""
        items: dict[str, tuple[str, Path, int]] = {}
        budget = self.max_upload_bytes - REQUEST_OVERHEAD
        for md5, path in files:
            md5 = m.LocalInput(md5).md5
            p = Path(path)
            # What the file costs in the POST body, multipart framing included.
            cost = p.stat().st_size + PART_OVERHEAD
            if cost > budget:
                raise BoincFileError(
                    f"{p} ({cost - PART_OVERHEAD} bytes) does not fit in max_upload_bytes="
                    f"{self.max_upload_bytes}; raise the project's PHP upload limits and the "
                    "client's, or use a remote input"
                )
            if self.verify_upload_md5 and _md5_of(p) != md5:
                raise BoincFileError(f"content of {p} does not match md5 {md5}")
            items.setdefault(md5, (md5, p, cost))
        chunks: list[list[tuple[str, Path, int]]] = []
        total = 0
        for item in items.values():
            full = chunks and len(chunks[-1]) >= self.max_upload_files
            if not chunks or full or total + item[2] > budget:
                chunks.append([])
                total = 0
            chunks[-1].append(item)
            total += item[2]
        return chunks

    def _upload_once(
        self, chunk: Sequence[tuple[str, Path, int]], batch_id: int, delete_time: int
    ) -> None:
        root = self._request("upload_files")
        if batch_id:
            add(root, "batch_id", batch_id)
        if delete_time:
            add(root, "delete_time", int(delete_time))
        for md5, _, _ in chunk:
            add(root, "phys_name", f"jf_{md5}")
        with ExitStack() as stack:
            # The server stores the i-th file part under the i-th phys_name.
            parts: list[tuple[str, tuple[str, BinaryIO, str]]] = [
                (
                    f"file_{i}",
                    (f"jf_{md5}", stack.enter_context(path.open("rb")), "application/octet-stream"),
                )
                for i, (md5, path, _) in enumerate(chunk)
            ]
            self._rpc("upload_files", root, endpoint=JOB_FILE, files=parts)

    def upload_files(
        self,
        files: Sequence[tuple[str, str | os.PathLike[str]]],
        batch_id: int = 0,
        delete_time: int = 0,
    ) -> None:
        """Upload (md5, path) files as `jf_<md5>`, in requests within the PHP limits."""
        for chunk in self._plan_uploads(files):
            try:
                self._upload_fitting(chunk, batch_id, delete_time)
            except (BoincProtocolError, BoincFileError) as exc:
                if not _is_duplicate(exc, "jf_"):
                    raise
                # Some file already has a job_file row (uploaded by us earlier, or by another
                # submitter); the server stopped there. Upload only what is still absent.
                absent = set(self.query_files([c[0] for c in chunk], batch_id, delete_time))
                rest = [c for c in chunk if c[0] in absent]
                if rest:
                    self._upload_fitting(rest, batch_id, delete_time)

    def _upload_fitting(
        self, chunk: Sequence[tuple[str, Path, int]], batch_id: int, delete_time: int
    ) -> None:
        """Upload a chunk; when PHP dropped the request whole (larger than the project's
        post_max_size, smaller than max_upload_bytes assumed), send it in halves."""
        try:
            self._upload_once(chunk, batch_id, delete_time)
        except BoincRequestError as exc:
            if not body_dropped(exc):
                raise
            if len(chunk) == 1:
                _, path, cost = chunk[0]
                raise BoincFileError(
                    f"{path} ({cost - PART_OVERHEAD} bytes): the project dropped the upload "
                    "request, which is larger than its PHP post_max_size; raise post_max_size "
                    "and upload_max_filesize there, or use a remote input"
                ) from exc
            half = len(chunk) // 2
            self._upload_fitting(chunk[:half], batch_id, delete_time)
            self._upload_fitting(chunk[half:], batch_id, delete_time)

    def stage_files(
        self,
        files: Sequence[tuple[str, str | os.PathLike[str]]],
        batch_id: int,
        delete_time: int = 0,
    ) -> m.StageResult:
        """query_files then upload the absent files, all associated with an INIT batch."""
        md5s = list(dict.fromkeys(md5 for md5, _ in files))
        absent = set(self.query_files(md5s, batch_id, delete_time))
        paths = dict(files)
        self.upload_files([(x, paths[x]) for x in md5s if x in absent], batch_id, delete_time)
        return m.StageResult(
            present=tuple(x for x in md5s if x not in absent),
            uploaded=tuple(x for x in md5s if x in absent),
        )
