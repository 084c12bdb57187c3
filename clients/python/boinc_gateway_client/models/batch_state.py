from enum import StrEnum

class BatchState(StrEnum):
    ABORTED = "aborted"
    COMPLETE = "complete"
    IN_PROGRESS = "in_progress"
    OPEN = "open"
    RETIRED = "retired"

    def __str__(self) -> str:
        return str(self.value)
