from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RotateSecret")


@_attrs_define
class RotateSecret:
    """
    Attributes:
        overlap (None | str | Unset): How long the current secret keeps signing beside the new one, as a
            duration (`"24h"`, `"30m"`, `"0s"` for not at all); at most 7 days.
            Default `secrets.rotation_overlap_ms`. Secrets rotated out before
            keep their own expiry (at most 5 sign at once). Example: 24h.
        secret (None | str | Unset): The new secret, of the kind the endpoint signs with: `whsec_<base64
            of 24 to 64 bytes>` (hmac), `whsk_<base64>` (ed25519), or an RSA
            private key in PEM (rsa2: required, and only the new key signs: a
            form has one `sign`); generated when absent.
    """

    overlap: None | str | Unset = UNSET
    secret: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        overlap: None | str | Unset
        if isinstance(self.overlap, Unset):
            overlap = UNSET
        else:
            overlap = self.overlap

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if overlap is not UNSET:
            field_dict["overlap"] = overlap
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_overlap(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        overlap = _parse_overlap(d.pop("overlap", UNSET))

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        rotate_secret = cls(
            overlap=overlap,
            secret=secret,
        )

        return rotate_secret
