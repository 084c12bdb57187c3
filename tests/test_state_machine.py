"""A hypothesis state machine over job and batch transitions, against the real database.

The machine drives the service functions (create, add jobs, submit, abort jobs or batch,
retire, and the dispatcher's claim / finish / requeue) in random orders and checks after every
step that the database agrees with a simple model: job states, batch states, counts, and that
the change cursor reports exactly the jobs that changed.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from sqlalchemy import select, text
from sqlmodel import col

from app.db import Database
from app.errors import ServiceError
from app.models import Batch, Job, User
from app.schemas import BatchCreate, JobSpec, UserCreate
from app.services import batches, queries
from app.services import jobs as jobs_svc
from app.services import users as users_svc
from app.services.store import FileStore
from app.setup import prepare
from app.states import JOB_ACTIVE, JOB_TERMINAL, JobState
from tests.conftest import TestDatabase, make_settings

CONTEXT: dict[str, Any] = {}


class Transitions(RuleBasedStateMachine):
    """Random walks through the transition table; the model says what each step must do."""

    def __init__(self) -> None:
        super().__init__()
        self.db: Database = CONTEXT["db"]
        self.store: FileStore = CONTEXT["store"]
        with self.db.session() as s:
            self.user, _ = users_svc.create_user(
                s, data=UserCreate(name=f"sm{uuid.uuid4().hex[:10]}")
            )
        self.batches: dict[str, str] = {}  # name -> expected state
        self.jobs: dict[str, tuple[str, str]] = {}  # job name -> (batch, expected state)
        self.worker = f"w-{uuid.uuid4().hex[:6]}"
        self.backend = f"sm-{uuid.uuid4().hex[:8]}"  # claims see only this run's jobs
        self.cursor = 0
        self.changed: set[str] = set()  # jobs whose state changed since self.cursor

    # ---- helpers -----------------------------------------------------------------------

    def _set(self, job: str, state: str) -> None:
        batch, old = self.jobs[job]
        if old != state:
            self.changed.add(job)
        self.jobs[job] = (batch, state)

    def _settle(self, batch: str) -> None:
        """An in-progress batch with every job terminal (vacuously, too) is complete."""
        states = [s for b, s in self.jobs.values() if b == batch]
        if self.batches[batch] == "in_progress" and all(s in JOB_TERMINAL for s in states):
            self.batches[batch] = "complete"

    def _spec(self, name: str, jobs: list[str]) -> BatchCreate:
        return BatchCreate(
            name=name,
            app="uppercase",
            submit=False,
            jobs=[JobSpec(name=j, inputs=[{"name": "in", "content": "x"}]) for j in jobs] or None,
        )

    def _ids(self, names: list[str]) -> list[int]:
        with self.db.read_session() as s:
            return list(
                s.execute(
                    select(col(Job.id)).where(
                        col(Job.owner_id) == self.user.id, col(Job.name).in_(names)
                    )
                ).scalars()
            )

    # ---- rules -------------------------------------------------------------------------

    @rule(njobs=st.integers(0, 4), submit=st.booleans())
    def create(self, njobs: int, submit: bool) -> None:
        name = f"b{len(self.batches)}"
        jobs = [f"{name}-j{i}" for i in range(njobs)]
        spec = self._spec(name, jobs).model_copy(update={"submit": submit})
        with self.db.session() as s:
            batches.create(
                s,
                store=self.store,
                user=self.user,
                data=spec,
                backend=self.backend,
                keep=0,
                max_content=100,
            )
        self.batches[name] = "in_progress" if submit and jobs else "open"
        for j in jobs:
            self.jobs[j] = (name, "queued")
            self.changed.add(j)

    @precondition(lambda self: any(s == "open" for s in self.batches.values()))
    @rule(data=st.data(), njobs=st.integers(1, 3))
    def add_jobs(self, data: st.DataObject, njobs: int) -> None:
        name = data.draw(st.sampled_from(sorted(b for b, s in self.batches.items() if s == "open")))
        start = sum(1 for b, _ in self.jobs.values() if b == name)
        jobs = [f"{name}-j{start + i}" for i in range(njobs)]
        with self.db.session() as s:
            batches.add_jobs(
                s,
                store=self.store,
                user=self.user,
                name=name,
                jobs=self._spec(name, jobs).jobs or [],
                keep=0,
                max_content=100,
            )
        for j in jobs:
            self.jobs[j] = (name, "queued")
            self.changed.add(j)

    @precondition(lambda self: bool(self.batches))
    @rule(data=st.data())
    def submit(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.batches)))
        state = self.batches[name]
        try:
            with self.db.session() as s:
                batches.submit(s, user=self.user, name=name)
        except ServiceError as exc:
            assert state in ("aborted", "retired"), (state, exc.code)
            assert exc.code == "batch_state"
            return
        if state == "open":
            self.batches[name] = "in_progress"
            for j, (b, _) in self.jobs.items():
                if b == name:
                    self.changed.add(j)  # runnable now: cursors see them again
            self._settle(name)

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data())
    def abort_jobs(self, data: st.DataObject) -> None:
        names = data.draw(st.lists(st.sampled_from(sorted(self.jobs)), min_size=1, max_size=3))
        with self.db.session() as s:
            jobs_svc.abort_named(s, user=self.user, names=names)
        for j in set(names):
            if self.jobs[j][1] in JOB_ACTIVE:
                self._set(j, "aborted")
        for b in {self.jobs[j][0] for j in names}:
            self._settle(b)

    @precondition(lambda self: bool(self.batches))
    @rule(data=st.data(), retire=st.booleans())
    def end_batch(self, data: st.DataObject, retire: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.batches)))
        with self.db.session() as s:
            (batches.retire if retire else batches.abort)(s, user=self.user, name=name)
        if self.batches[name] == "retired":
            return
        for j, (b, state) in self.jobs.items():
            if b == name and state in JOB_ACTIVE:
                self._set(j, "aborted")
        self.batches[name] = "retired" if retire else "aborted"

    @rule(limit=st.integers(1, 3))
    def claim(self, limit: int) -> None:
        with self.db.session() as s:
            ids = jobs_svc.claim(s, worker_id=self.worker, backend=self.backend, limit=limit)
        runnable = sorted(
            (
                j
                for j, (b, st_) in self.jobs.items()
                if st_ == "queued" and self.batches[b] == "in_progress"
            ),
            key=lambda j: self._ids([j])[0],
        )
        assert len(ids) == min(limit, len(runnable))
        for j in runnable[: len(ids)]:
            self._set(j, "in_progress")

    @precondition(lambda self: any(s == "in_progress" for _, s in self.jobs.values()))
    @rule(data=st.data(), outcome=st.sampled_from(["done", "error", "queued"]))
    def finish(self, data: st.DataObject, outcome: str) -> None:
        running = sorted(j for j, (_, s) in self.jobs.items() if s == "in_progress")
        job = data.draw(st.sampled_from(running))
        with self.db.session() as s:
            moved = jobs_svc.transition(
                s, job_ids=self._ids([job]), target=JobState(outcome), worker_id=self.worker
            )
        assert len(moved) == 1
        self._set(job, outcome)
        self._settle(self.jobs[job][0])

    # ---- invariants ----------------------------------------------------------------------

    @invariant()
    def database_matches_model(self) -> None:
        with self.db.read_session() as s:
            got_batches = dict(
                s.execute(
                    select(col(Batch.name), col(Batch.state)).where(
                        col(Batch.owner_id) == self.user.id
                    )
                ).all()
            )
            got_jobs = dict(
                s.execute(
                    select(col(Job.name), col(Job.state)).where(col(Job.owner_id) == self.user.id)
                ).all()
            )
            for name in self.batches:
                b = s.execute(
                    select(Batch).where(
                        col(Batch.owner_id) == self.user.id, col(Batch.name) == name
                    )
                ).scalar_one()
                summary = batches.summary(s, batch=b)
                assert summary.njobs == sum(summary.counts.values()) == b.njobs
        assert got_batches == self.batches
        assert got_jobs == {j: s for j, (_, s) in self.jobs.items()}

    @invariant()
    def cursor_reports_exactly_the_changes(self) -> None:
        if not self.batches:
            return
        with self.db.read_session() as s:
            user = s.get_one(User, self.user.id)
            result = queries.query_batches(
                s, user=user, names=sorted(self.batches), since=self.cursor
            )
        reported = {j.name for g in result.batches for j in g.jobs}
        assert self.changed <= reported, self.changed - reported
        self.cursor = int(result.cursor)
        self.changed = set()


@pytest.fixture
def machine_db(test_db: TestDatabase, tmp_path: Path) -> Any:
    db = Database(test_db.url)
    prepare(db, make_settings(test_db.url, tmp_path))
    CONTEXT.update(db=db, store=FileStore(tmp_path / "files"))
    yield db
    db.dispose()


def test_transitions_agree_with_the_model(machine_db: Database) -> None:
    # The "sm" backend has no dispatcher: the machine itself plays the worker.
    with machine_db.read_session() as s:
        assert s.execute(text("SELECT count(*) FROM apps WHERE name = 'uppercase'")).scalar_one()
    runner = Transitions.TestCase
    runner.settings = settings(
        max_examples=25,
        stateful_step_count=25,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    runner().runTest()
