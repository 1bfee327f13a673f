from enum import StrEnum


class ListNotificationsOrder(StrEnum):
    ATTEMPTS = "attempts"
    NEWEST = "newest"
    OLDEST = "oldest"

    def __str__(self) -> str:
        return str(self.value)
