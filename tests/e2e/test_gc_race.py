"""GC racing with concurrent query + upload + submit never deletes a referenced file."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from app.db import Database
from app.errors import ServiceError
from app.schemas import BatchCreate, JobSpec, UserCreate
from app.services import batches, files, gc
from app.services import users as users_svc
from app.services.store import FileStore
from app.setup import prepare
from tests.conftest import TestDatabase, make_settings

ROUNDS = 25
FILES = 6


def _upload(db: Database, store: FileStore, user: object, data: bytes, batch: str | None) -> None:
    src = store.tmp.parent / f"src-{uuid.uuid4().hex}"
    src.write_bytes(data)
    try:
        with store.staged_copy(src) as (tmp, md5, size), db.session() as s:
            files.record_upload(
                s,
                store=store,
                user=user,
                md5=md5,
                size=size,
                temp=tmp,  # type: ignore[arg-type]
                filename=None,
                batch_name=batch,
                keep_seconds=0,
            )
    finally:
        src.unlink()


@pytest.mark.parametrize("repeat", range(3))
def test_gc_never_deletes_referenced_files(
    test_db: TestDatabase, tmp_path: Path, repeat: int
) -> None:
    settings = make_settings(test_db.url, tmp_path)
    db = Database(test_db.url)
    prepare(db, settings)
    store = FileStore(settings.store_dir)
    with db.session() as s:
        user, _ = users_svc.create_user(s, data=UserCreate(name=f"gc{uuid.uuid4().hex[:8]}"))
    contents = [f"content {repeat} {i}".encode() for i in range(FILES)]
    md5s = [hashlib.md5(c).hexdigest() for c in contents]
    stop = threading.Event()
    failures: list[str] = []
    submitted: list[str] = []

    def collector() -> None:
        while not stop.is_set():
            try:
                gc.collect(db, store, at=time.time() + 1)
            except Exception as exc:  # a GC error is a finding, not a crash of the test
                failures.append(f"gc: {exc!r}")

    def submitter() -> None:
        for r in range(ROUNDS):
            name = f"race-{repeat}-{r}-{uuid.uuid4().hex[:6]}"
            try:
                with db.session() as s:
                    batches.create(
                        s,
                        store=store,
                        user=user,
                        data=BatchCreate(name=name, app="uppercase", submit=False),
                        backend="none",
                        keep=0,
                        max_content=1024,
                    )
                with db.session() as s:
                    missing = files.query(s, user=user, md5s=md5s, batch_name=name, keep_seconds=0)
                for m in missing:
                    _upload(db, store, user, contents[md5s.index(m)], name)
                jobs = [
                    JobSpec.model_validate(
                        {"name": f"{name}-{i}", "inputs": [{"name": "in", "md5": m}]}
                    )
                    for i, m in enumerate(md5s)
                ]
                with db.session() as s:
                    batches.add_jobs(
                        s, store=store, user=user, name=name, jobs=jobs, keep=0, max_content=1024
                    )
                with db.session() as s:
                    batches.submit(s, user=user, name=name)
                submitted.append(name)
            except ServiceError as exc:
                failures.append(f"{name}: {exc.code} {exc.detail}")

    threads = [
        threading.Thread(target=collector),
        threading.Thread(target=submitter),
        threading.Thread(target=submitter),
    ]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join(timeout=300)
    stop.set()
    threads[0].join(timeout=60)
    assert not failures, failures[:5]
    assert len(submitted) == 2 * ROUNDS
    with db.read_session() as s:
        referenced = {
            r[0]
            for r in s.execute(
                text(
                    "SELECT ji.md5 FROM job_inputs ji JOIN jobs j ON j.id = ji.job_id "
                    "JOIN batches b ON b.id = j.batch_id WHERE b.owner_id = :u"
                ),
                {"u": user.id},
            )
        }
        rows = {r[0] for r in s.execute(text("SELECT md5 FROM files"))}
    assert referenced == set(md5s)
    for m in referenced:
        assert m in rows, f"row of referenced file {m} deleted"
        assert store.exists(m), f"bytes of referenced file {m} deleted"
    # And the rule still collects: once the batches are retired, everything may go.
    with db.session() as s:
        for name in submitted:
            batches.retire(s, user=user, name=name)
    gc.collect(db, store, at=time.time() + 1)
    assert not any(store.exists(m) for m in md5s)
    db.dispose()
