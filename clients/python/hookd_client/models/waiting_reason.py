from enum import StrEnum


class WaitingReason(StrEnum):
    CIRCUIT_OPEN = "circuit_open"
    DUE = "due"
    ENDPOINT_DISABLED = "endpoint_disabled"
    IN_FLIGHT = "in_flight"
    ORDERING = "ordering"
    PULL = "pull"
    RATE_LIMIT = "rate_limit"
    SCHEDULED = "scheduled"

    def __str__(self) -> str:
        return str(self.value)
