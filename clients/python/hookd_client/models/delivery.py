from enum import StrEnum


class Delivery(StrEnum):
    PULL = "pull"
    PUSH = "push"

    def __str__(self) -> str:
        return str(self.value)
