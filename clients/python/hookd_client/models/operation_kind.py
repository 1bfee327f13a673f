from enum import StrEnum


class OperationKind(StrEnum):
    CANCEL = "cancel"
    RECOVER = "recover"
    RETRY = "retry"

    def __str__(self) -> str:
        return str(self.value)
