from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_detail import ErrorDetail
    from ..models.notification_view import NotificationView


T = TypeVar("T", bound="BatchItem")


@_attrs_define
class BatchItem:
    """One item's result: `status` is what a single create would have answered.

    Attributes:
        status (int):
        error (ErrorDetail | None | Unset):
        notification (None | NotificationView | Unset):
    """

    status: int
    error: ErrorDetail | None | Unset = UNSET
    notification: None | NotificationView | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.error_detail import ErrorDetail
        from ..models.notification_view import NotificationView

        status = self.status

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, ErrorDetail):
            error = self.error.to_dict()
        else:
            error = self.error

        notification: dict[str, Any] | None | Unset
        if isinstance(self.notification, Unset):
            notification = UNSET
        elif isinstance(self.notification, NotificationView):
            notification = self.notification.to_dict()
        else:
            notification = self.notification

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if notification is not UNSET:
            field_dict["notification"] = notification

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.error_detail import ErrorDetail
        from ..models.notification_view import NotificationView

        d = dict(src_dict)
        status = d.pop("status")

        def _parse_error(data: object) -> ErrorDetail | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = ErrorDetail.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ErrorDetail | None | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_notification(data: object) -> None | NotificationView | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                notification_type_0 = NotificationView.from_dict(data)

                return notification_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | NotificationView | Unset, data)

        notification = _parse_notification(d.pop("notification", UNSET))

        batch_item = cls(
            status=status,
            error=error,
            notification=notification,
        )

        batch_item.additional_properties = d
        return batch_item

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
