from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Deleted")


@_attrs_define
class Deleted:
    """
    Attributes:
        cancelled_notifications (int): Pending notifications of the endpoint that were cancelled.
        deleted (bool):
    """

    cancelled_notifications: int
    deleted: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cancelled_notifications = self.cancelled_notifications

        deleted = self.deleted

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancelled_notifications": cancelled_notifications,
                "deleted": deleted,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cancelled_notifications = d.pop("cancelled_notifications")

        deleted = d.pop("deleted")

        deleted = cls(
            cancelled_notifications=cancelled_notifications,
            deleted=deleted,
        )

        deleted.additional_properties = d
        return deleted

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
