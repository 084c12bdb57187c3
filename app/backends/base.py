"""The narrow interface between the dispatcher and whatever runs jobs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar


def _no_one_to_wake() -> None:
    return None


class Backend(ABC):
    """Runs the jobs of submitted batches; driven by the dispatcher's loop.

    The database is the source of truth: a backend claims jobs with guarded updates, reports
    results through ``app.services.jobs.transition`` and notices aborts by reading job states.
    """

    name: ClassVar[str]
    # Whether in-progress jobs are held by the worker that claimed them (and so go back to the
    # queue when it dies). False for backends where the jobs run elsewhere, such as BOINC.
    jobs_held_by_worker: ClassVar[bool] = True
    # Set by the dispatcher: ends its idle pause (say, when a slot frees up).
    wake: Callable[[], None] = staticmethod(_no_one_to_wake)

    @abstractmethod
    def step(self) -> bool:
        """Do one bounded round of work; True when something happened (poll again soon)."""

    def health(self) -> str:
        """``ok``, or a short reason why the backend cannot work now."""
        return "ok"

    def stop(self) -> None:
        """Stop running work (called once, from the dispatcher's thread)."""
        return None
