"""Uploads and downloads: streaming MD5, ``files/query`` dedup, ``PUT`` of the missing ones,
resumable downloads checked by MD5."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from bgw.api import Api, seg
from bgw.errors import BgwError, UsageError
from bgw.progress import Transfers, human

CHUNK = 1 << 20
QUERY_MAX = 10_000


@dataclass(frozen=True)
class LocalFile:
    """A local file named by the MD5 of its content."""

    path: Path
    md5: str
    size: int


def md5_of(path: Path, advance: Callable[[int], None] | None = None) -> str:
    """The hex MD5 of a file, read in chunks."""
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            if advance is not None:
                advance(len(chunk))
    return digest.hexdigest()


def hash_files(paths: Iterable[Path], console: Console) -> list[LocalFile]:
    """MD5 and size of each path (in order; each distinct path hashed once)."""
    unique = list(dict.fromkeys(paths))
    sizes: dict[Path, int] = {}
    for path in unique:
        if not path.is_file():
            raise UsageError(f"{path}: no such file")
        sizes[path] = path.stat().st_size
    result: dict[Path, LocalFile] = {}
    with Transfers(console, verb="hashing", total=sum(sizes.values()), files=len(unique)) as bars:
        for path in unique:
            try:
                with bars.file(path.name, sizes[path]) as task:
                    md5 = md5_of(path, task.advance)
            except OSError as exc:
                raise UsageError(f"{path}: {exc.strerror or exc}") from None
            result[path] = LocalFile(path, md5, sizes[path])
    return [result[p] for p in unique]


def missing(api: Api, md5s: list[str], *, batch: str | None = None) -> set[str]:
    """Which of these MD5s the service does not have for this user."""
    out: set[str] = set()
    for i in range(0, len(md5s), QUERY_MAX):
        body: dict[str, object] = {"md5s": md5s[i : i + QUERY_MAX]}
        if batch is not None:
            body["batch"] = batch
        out.update(api.post("/v1/files/query", body)["missing"])
    return out


def _chunks(path: Path, advance: Callable[[int], None]) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            advance(len(chunk))
            yield chunk


def upload(
    api: Api, files: list[LocalFile], console: Console, *, batch: str | None = None
) -> set[str]:
    """Upload the files the service lacks; returns the MD5s that were sent."""
    by_md5 = {f.md5: f for f in files}
    need = missing(api, list(by_md5), batch=batch)
    todo = [f for md5, f in by_md5.items() if md5 in need]
    params = {"batch": batch} if batch is not None else None
    with Transfers(
        console, verb="uploading", total=sum(f.size for f in todo), files=len(todo)
    ) as bars:
        for f in todo:
            done = f"uploaded {f.path} ({human(f.size)}, md5 {f.md5})"
            with bars.file(f.path.name, f.size, done=done) as task:
                api.request(
                    "PUT",
                    f"/v1/files/{f.md5}",
                    params=params,
                    content=_chunks(f.path, task.advance),
                    headers={
                        "Content-Type": "application/octet-stream",
                        "Content-Length": str(f.size),
                    },
                )
    return {f.md5 for f in todo}


def safe_component(name: str, what: str) -> str:
    """A server-given name usable as one path component (never ``..`` or a separator)."""
    bad = not name or name in {".", ".."} or any(c in name for c in "/\\\0")
    if bad:
        raise BgwError(f"refusing {what} name {name!r}: it is not a plain file name")
    return name


def complete(path: Path, md5: str, size: int | None) -> bool:
    """Whether ``path`` already holds exactly these bytes."""
    try:
        if size is not None and path.stat().st_size != size:
            return False
    except FileNotFoundError:
        return False
    return md5_of(path) == md5


def download(api: Api, url: str, target: Path, md5: str, size: int, bars: Transfers) -> None:
    """Download into ``target`` via ``target.part``, resuming a partial one; verify the MD5."""
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    for attempt in (1, 2):
        have = part.stat().st_size if part.exists() else 0
        if have > size:
            part.unlink()
            have = 0
        headers = {"Range": f"bytes={have}-"} if 0 < have < size else None
        with bars.file(target.name, size, done=f"fetched {target} ({human(size)})") as task:
            task.advance(have)
            if have < size or size == 0:
                with api.stream("GET", url, headers=headers) as response:
                    mode = "ab" if response.status_code == 206 else "wb"
                    if mode == "wb" and have:
                        task.advance(-have)
                    with part.open(mode) as fh:
                        for chunk in response.iter_bytes(CHUNK):
                            fh.write(chunk)
                            task.advance(len(chunk))
        if md5_of(part) == md5:
            os.replace(part, target)
            return
        part.unlink()
        if attempt == 2:
            raise BgwError(f"{target}: the downloaded bytes do not match md5 {md5}")


def output_url(job: str, output: str) -> str:
    """The API path of one job output."""
    return f"/v1/jobs/{seg(job)}/outputs/{seg(output)}"
