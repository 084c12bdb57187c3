"""Job and batch states and the one table of allowed transitions.

Every state change in the service is a guarded update built from these tables:
``UPDATE ... SET state=:new WHERE id=:id AND state IN (:allowed_from)``; zero rows means
someone else moved the row first.
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    """Job states (api.md section 3)."""

    queued = "queued"
    in_progress = "in_progress"
    done = "done"
    error = "error"
    aborted = "aborted"


class BatchState(StrEnum):
    """Batch states (api.md section 3)."""

    open = "open"
    in_progress = "in_progress"
    complete = "complete"
    aborted = "aborted"
    retired = "retired"


JOB_TERMINAL = frozenset({JobState.done, JobState.error, JobState.aborted})
JOB_ACTIVE = frozenset({JobState.queued, JobState.in_progress})

# target state -> states it may be entered from
JOB_TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.queued: frozenset({JobState.in_progress}),  # requeue after a lost worker
    JobState.in_progress: frozenset({JobState.queued}),
    JobState.done: frozenset({JobState.queued, JobState.in_progress}),
    JobState.error: frozenset({JobState.queued, JobState.in_progress}),
    JobState.aborted: frozenset({JobState.queued, JobState.in_progress}),
}

BATCH_TRANSITIONS: dict[BatchState, frozenset[BatchState]] = {
    BatchState.in_progress: frozenset({BatchState.open}),
    BatchState.complete: frozenset({BatchState.in_progress}),
    BatchState.aborted: frozenset({BatchState.open, BatchState.in_progress, BatchState.complete}),
    BatchState.retired: frozenset(
        {BatchState.open, BatchState.in_progress, BatchState.complete, BatchState.aborted}
    ),
}

# Batches whose associated files are protected from garbage collection.
BATCH_LIVE = frozenset({BatchState.open, BatchState.in_progress})

GAHP_STATUS: dict[JobState, str] = {
    JobState.queued: "NOT_STARTED",
    JobState.in_progress: "IN_PROGRESS",
    JobState.done: "DONE",
    JobState.error: "ERROR",
    JobState.aborted: "ERROR",
}


def job_sources(target: JobState) -> list[str]:
    """The states a job may move to ``target`` from, as plain strings for SQL."""
    return [s.value for s in JOB_TRANSITIONS[target]]


def batch_sources(target: BatchState) -> list[str]:
    """The states a batch may move to ``target`` from, as plain strings for SQL."""
    return [s.value for s in BATCH_TRANSITIONS[target]]
