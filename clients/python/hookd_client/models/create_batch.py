from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.create_notification import CreateNotification


T = TypeVar("T", bound="CreateBatch")


@_attrs_define
class CreateBatch:
    """
    Attributes:
        notifications (list[CreateNotification]): Up to 1000 notifications, each as for `POST /v1/notifications`.
    """

    notifications: list[CreateNotification]

    def to_dict(self) -> dict[str, Any]:
        notifications = []
        for notifications_item_data in self.notifications:
            notifications_item = notifications_item_data.to_dict()
            notifications.append(notifications_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "notifications": notifications,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.create_notification import CreateNotification

        d = dict(src_dict)
        notifications = []
        _notifications = d.pop("notifications")
        for notifications_item_data in _notifications:
            notifications_item = CreateNotification.from_dict(notifications_item_data)

            notifications.append(notifications_item)

        create_batch = cls(
            notifications=notifications,
        )

        return create_batch
