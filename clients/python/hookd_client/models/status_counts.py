from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="StatusCounts")


@_attrs_define
class StatusCounts:
    """How many of an event's deliveries are in each status.

    Attributes:
        cancelled (int):
        failed (int):
        pending (int):
        succeeded (int):
    """

    cancelled: int
    failed: int
    pending: int
    succeeded: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cancelled = self.cancelled

        failed = self.failed

        pending = self.pending

        succeeded = self.succeeded

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancelled": cancelled,
                "failed": failed,
                "pending": pending,
                "succeeded": succeeded,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cancelled = d.pop("cancelled")

        failed = d.pop("failed")

        pending = d.pop("pending")

        succeeded = d.pop("succeeded")

        status_counts = cls(
            cancelled=cancelled,
            failed=failed,
            pending=pending,
            succeeded=succeeded,
        )

        status_counts.additional_properties = d
        return status_counts

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
