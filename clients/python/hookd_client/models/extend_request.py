from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ExtendRequest")


@_attrs_define
class ExtendRequest:
    """
    Attributes:
        lease (str): The lease's new length from now, `1s` to `12h`. Example: 1m.
        receipt (str):
    """

    lease: str
    receipt: str

    def to_dict(self) -> dict[str, Any]:
        lease = self.lease

        receipt = self.receipt

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "lease": lease,
                "receipt": receipt,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        lease = d.pop("lease")

        receipt = d.pop("receipt")

        extend_request = cls(
            lease=lease,
            receipt=receipt,
        )

        return extend_request
