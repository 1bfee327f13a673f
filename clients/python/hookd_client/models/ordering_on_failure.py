from enum import StrEnum


class OrderingOnFailure(StrEnum):
    CONTINUE = "continue"
    HOLD = "hold"

    def __str__(self) -> str:
        return str(self.value)
