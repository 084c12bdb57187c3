"""``python -m tests.faults.inject serve|worker ...``: the real CLI with fault hooks.

It behaves exactly like ``boinc-gateway``; a fault is active while a flag file of its name
exists in ``$BGW_FAULT_DIR`` (so a test switches faults on and off in a live process):

- ``enospc``: writes into the file store's temp files (uploads, outputs, logs, inline
  content) write half of their data and then fail with ENOSPC, like a full disk.
- ``gc_pause``: garbage collection, right after moving a file's bytes to the trash and
  before its transaction commits, touches ``gc_paused`` and sleeps (so the test can
  kill -9 the process exactly there).
- ``db_lost_after_claim`` (one-shot: the flag is removed when it fires): the local
  backend's first read after claiming a job fails as if the connection had dropped.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

FAULT_DIR = Path(os.environ.get("BGW_FAULT_DIR", "/nonexistent"))


def active(name: str) -> bool:
    """Whether the fault ``name`` is switched on."""
    return (FAULT_DIR / name).exists()


class _FullDisk:
    """A file object whose writes fail with ENOSPC (after writing half) while ``enospc`` is on."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh

    def write(self, data: Any) -> int:
        if active("enospc"):
            half = bytes(data)[: len(data) // 2]
            self._fh.write(half)
            self._fh.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._fh.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)


def install() -> None:
    """Patch the file store (only where these faults act)."""
    from app.services.store import FileStore

    temp = FileStore.temp
    trash = FileStore.trash

    @contextlib.contextmanager
    def faulty_temp(self: FileStore) -> Iterator[tuple[Any, Path]]:
        with temp(self) as (fh, path):
            yield _FullDisk(fh), path

    def paused_trash(self: FileStore, md5: str) -> Path | None:
        moved = trash(self, md5)
        if moved is not None and active("gc_pause"):
            (FAULT_DIR / "gc_paused").write_text(md5)
            time.sleep(60)
        return moved

    FileStore.temp = faulty_temp  # type: ignore[method-assign]
    FileStore.trash = paused_trash  # type: ignore[method-assign]

    from sqlalchemy.exc import OperationalError

    from app.backends.local import LocalBackend

    load = LocalBackend._load

    def lost_load(self: LocalBackend, job_id: int) -> Any:
        flag = FAULT_DIR / "db_lost_after_claim"
        if flag.exists():
            flag.unlink(missing_ok=True)
            raise OperationalError("SELECT jobs", {}, ConnectionError("injected: connection lost"))
        return load(self, job_id)

    LocalBackend._load = lost_load  # type: ignore[method-assign]


if __name__ == "__main__":
    install()
    from app.cli import main

    main()
