from enum import StrEnum

class JobState(StrEnum):
    ABORTED = "aborted"
    DONE = "done"
    ERROR = "error"
    IN_PROGRESS = "in_progress"
    QUEUED = "queued"

    def __str__(self) -> str:
        return str(self.value)
