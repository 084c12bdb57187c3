"""Local file work of the shim: hashing inputs, placing outputs safely under iwd.

Blocking file I/O runs in worker threads so the command loop keeps answering the
gridmanager within its 20 s response timeout.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

CHUNK = 1024 * 1024


class LocalFileError(Exception):
    """A local file could not be read or written; the text names it."""


def _md5_file(path: str) -> tuple[str, int]:
    digest = hashlib.md5(usedforsecurity=False)
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):  # bounded by the file size
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


async def md5_file(path: str) -> tuple[str, int]:
    """Return (hex md5, size) of a local file, streamed in a worker thread."""
    try:
        return await asyncio.to_thread(_md5_file, path)
    except OSError as exc:
        raise LocalFileError(f"cannot read {path}: {exc.strerror or exc}") from exc


def is_safe_name(name: str) -> bool:
    """True when a server-supplied output name is one plain path component."""
    return (
        bool(name)
        and name not in (".", "..")
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
    )


def under_iwd(iwd: Path, name: str) -> Path:
    """The path of a server-named file directly inside iwd; refuses anything else."""
    if not is_safe_name(name):
        raise LocalFileError(f"refusing output name {name!r} from the server")
    return iwd / name


def user_path(iwd: Path, path: str) -> Path:
    """A path named by the gridmanager (the user): absolute, or relative to iwd."""
    return Path(path) if os.path.isabs(path) else iwd / path


async def write_stream(
    target: Path, chunks: AsyncIterator[bytes], *, expect_md5: str | None = None
) -> None:
    """Write chunks to a temporary file beside target, check the md5, rename into place."""
    parent = target.parent
    try:
        await asyncio.to_thread(parent.mkdir, parents=True, exist_ok=True)
        fd, temp = await asyncio.to_thread(
            tempfile.mkstemp, dir=parent, prefix=".boinc-gahp-", suffix=".part"
        )
    except OSError as exc:
        raise LocalFileError(f"cannot write in {parent}: {exc.strerror or exc}") from exc
    digest = hashlib.md5(usedforsecurity=False)
    try:
        with os.fdopen(fd, "wb") as handle:
            async for chunk in chunks:  # bounded by the response length
                digest.update(chunk)
                await asyncio.to_thread(handle.write, chunk)
        if expect_md5 and digest.hexdigest() != expect_md5.lower():
            raise LocalFileError(f"md5 of the downloaded {target.name} does not match")
        await asyncio.to_thread(os.replace, temp, target)
    except OSError as exc:
        raise LocalFileError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def _append(target: Path, data: bytes) -> None:
    with open(target, "ab") as handle:
        handle.write(data)


def _replace_with(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as handle:
        handle.write(data)


async def append_bytes(target: Path, data: bytes) -> None:
    """Append data to target (HTCondor's stderr file), creating it when missing."""
    try:
        await asyncio.to_thread(_append, target, data)
    except OSError as exc:
        raise LocalFileError(f"cannot append to {target}: {exc.strerror or exc}") from exc


async def write_bytes(target: Path, data: bytes) -> None:
    """Replace target's content with data."""
    try:
        await asyncio.to_thread(_replace_with, target, data)
    except OSError as exc:
        raise LocalFileError(f"cannot write {target}: {exc.strerror or exc}") from exc


def is_dev_null(path: Path) -> bool:
    """True for the null device, which HTCondor uses for 'no file'."""
    return str(path) == os.devnull
