from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_detail import ErrorDetail
    from ..models.event_view import EventView


T = TypeVar("T", bound="EventBatchItem")


@_attrs_define
class EventBatchItem:
    """One item's result: `status` is what a single create would have answered.

    Attributes:
        status (int):
        error (ErrorDetail | None | Unset):
        event (EventView | None | Unset):
    """

    status: int
    error: ErrorDetail | None | Unset = UNSET
    event: EventView | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.error_detail import ErrorDetail
        from ..models.event_view import EventView

        status = self.status

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, ErrorDetail):
            error = self.error.to_dict()
        else:
            error = self.error

        event: dict[str, Any] | None | Unset
        if isinstance(self.event, Unset):
            event = UNSET
        elif isinstance(self.event, EventView):
            event = self.event.to_dict()
        else:
            event = self.event

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if event is not UNSET:
            field_dict["event"] = event

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.error_detail import ErrorDetail
        from ..models.event_view import EventView

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

        def _parse_event(data: object) -> EventView | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                event_type_0 = EventView.from_dict(data)

                return event_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EventView | None | Unset, data)

        event = _parse_event(d.pop("event", UNSET))

        event_batch_item = cls(
            status=status,
            error=error,
            event=event,
        )

        event_batch_item.additional_properties = d
        return event_batch_item

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
