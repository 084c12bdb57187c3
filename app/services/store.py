"""The content store on disk: bytes named by MD5, written by temp file + atomic rename."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from app.errors import StorageFull
from app.schemas import MD5_RE

READ_CHUNK = 1 << 20


class FileStore:
    """Bytes live at ``root/<md5[:2]>/<md5>``; temp files in ``root/tmp`` (same filesystem)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.tmp = self.root / "tmp"
        self.trash_dir = self.root / "trash"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.trash_dir.mkdir(parents=True, exist_ok=True)

    def path(self, md5: str) -> Path:
        """Where the bytes of ``md5`` live (the name is validated: never outside the store)."""
        if not MD5_RE.fullmatch(md5):
            raise ValueError(f"not an md5: {md5!r}")
        return self.root / md5[:2] / md5

    def exists(self, md5: str) -> bool:
        """True when the bytes are on disk."""
        return self.path(md5).is_file()

    @contextlib.contextmanager
    def temp(self) -> Iterator[tuple[BinaryIO, Path]]:
        """A temp file in the store, removed on exit unless it was moved into place."""
        fd, name = tempfile.mkstemp(dir=self.tmp, prefix="up-")
        path = Path(name)
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh, path
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StorageFull("the file store is out of space") from exc
            raise
        finally:
            path.unlink(missing_ok=True)

    def place(self, temp: Path, md5: str) -> None:
        """Move a verified temp file into place (replacing identical bytes is harmless)."""
        dest = self.path(md5)
        dest.parent.mkdir(exist_ok=True)
        os.chmod(temp, 0o444)
        os.replace(temp, dest)

    @contextlib.contextmanager
    def staged_copy(self, src: Path) -> Iterator[tuple[Path, str, int]]:
        """Copy a file into a store temp file while hashing; yields (temp, md5, size).

        The caller records the row and calls :meth:`place` inside its transaction.
        """
        digest = hashlib.md5(usedforsecurity=False)
        size = 0
        with self.temp() as (out, tmp):
            with open(src, "rb") as inp:
                while chunk := inp.read(READ_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
            yield tmp, digest.hexdigest(), size

    @contextlib.contextmanager
    def staged_bytes(self, data: bytes) -> Iterator[tuple[Path, str, int]]:
        """Small bytes into a store temp file; yields (temp, md5, size)."""
        with self.temp() as (out, tmp):
            out.write(data)
            out.flush()
            yield tmp, hashlib.md5(data, usedforsecurity=False).hexdigest(), len(data)

    def trash(self, md5: str) -> Path | None:
        """Link the bytes into the trash before their row's deletion commits.

        They stay in place until :meth:`discard` (after the commit): a crash before the
        commit, which keeps the row, never leaves it without its bytes. ``restore`` undoes it.
        """
        src = self.path(md5)
        dest = self.trash_dir / f"{md5}.{uuid.uuid4().hex}"
        try:
            os.link(src, dest)
        except FileNotFoundError:
            return None
        return dest

    def restore(self, trashed: Path, md5: str) -> None:
        """The deletion did not happen: drop the trash entry (or put its bytes back in place).

        Harmless when someone else (crash recovery) already settled it.
        """
        dest = self.path(md5)
        try:
            if not dest.exists():
                dest.parent.mkdir(exist_ok=True)
                os.replace(trashed, dest)
            else:
                trashed.unlink(missing_ok=True)
        except FileNotFoundError:
            pass

    def discard(self, trashed: Path, md5: str) -> None:
        """The row's deletion committed: remove the bytes from their place for good.

        A new upload of the same content may have been placed since (its row inserted after
        our commit): the bytes are moved aside atomically and put back when they are not the
        ones that were trashed.
        """
        try:
            linked = os.stat(trashed)
        except FileNotFoundError:
            return  # settled by crash recovery
        aside = self.trash_dir / f"{md5}.{uuid.uuid4().hex}.aside"
        try:
            os.replace(self.path(md5), aside)
        except FileNotFoundError:
            pass
        else:
            try:
                st = os.stat(aside)
            except FileNotFoundError:
                st = None  # settled by crash recovery
            if st is not None and (st.st_dev, st.st_ino) != (linked.st_dev, linked.st_ino):
                self.restore(aside, md5)
            else:
                aside.unlink(missing_ok=True)
        trashed.unlink(missing_ok=True)

    def trashed(self) -> list[tuple[Path, str]]:
        """Trash entries with their md5 (left by a GC that died before it finished)."""
        out = []
        for p in self.trash_dir.iterdir():
            md5 = p.name.split(".", 1)[0]
            if MD5_RE.fullmatch(md5):
                out.append((p, md5))
        return out

    def sweep_temp(self, older_than: float) -> int:
        """Remove temp and trash files older than the given Unix time (crash leftovers)."""
        removed = 0
        for d in (self.tmp, self.trash_dir):
            for p in d.iterdir():
                with contextlib.suppress(FileNotFoundError):
                    if p.stat().st_mtime < older_than:
                        p.unlink()
                        removed += 1
        return removed

    def free_bytes(self) -> int:
        """Free space on the store's filesystem."""
        return shutil.disk_usage(self.root).free
