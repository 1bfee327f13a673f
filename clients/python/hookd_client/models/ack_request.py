from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="AckRequest")


@_attrs_define
class AckRequest:
    """
    Attributes:
        receipt (str): The receipt of the lease, as the pull returned it.
    """

    receipt: str

    def to_dict(self) -> dict[str, Any]:
        receipt = self.receipt

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "receipt": receipt,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        receipt = d.pop("receipt")

        ack_request = cls(
            receipt=receipt,
        )

        return ack_request
