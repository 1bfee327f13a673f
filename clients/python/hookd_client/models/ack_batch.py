from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="AckBatch")


@_attrs_define
class AckBatch:
    """
    Attributes:
        receipts (list[str]): 1 to 1000 receipts of this endpoint's leases.
    """

    receipts: list[str]

    def to_dict(self) -> dict[str, Any]:
        receipts = self.receipts

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "receipts": receipts,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        receipts = cast(list[str], d.pop("receipts"))

        ack_batch = cls(
            receipts=receipts,
        )

        return ack_batch
