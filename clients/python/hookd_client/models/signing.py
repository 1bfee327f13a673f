from enum import StrEnum


class Signing(StrEnum):
    ED25519 = "ed25519"
    HMAC = "hmac"
    RSA2 = "rsa2"

    def __str__(self) -> str:
        return str(self.value)
