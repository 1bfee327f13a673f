from enum import StrEnum


class PortalPermission(StrEnum):
    MANAGE = "manage"
    READ = "read"
    RETRY = "retry"

    def __str__(self) -> str:
        return str(self.value)
