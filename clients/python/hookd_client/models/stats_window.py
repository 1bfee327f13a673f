from enum import StrEnum


class StatsWindow(StrEnum):
    DAY = "24h"
    HOUR = "1h"

    def __str__(self) -> str:
        return str(self.value)
