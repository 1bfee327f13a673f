from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.create_event import CreateEvent


T = TypeVar("T", bound="CreateEventBatch")


@_attrs_define
class CreateEventBatch:
    """
    Attributes:
        events (list[CreateEvent]): Up to 1000 events, each as for `POST /v1/events`.
    """

    events: list[CreateEvent]

    def to_dict(self) -> dict[str, Any]:
        events = []
        for events_item_data in self.events:
            events_item = events_item_data.to_dict()
            events.append(events_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "events": events,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.create_event import CreateEvent

        d = dict(src_dict)
        events = []
        _events = d.pop("events")
        for events_item_data in _events:
            events_item = CreateEvent.from_dict(events_item_data)

            events.append(events_item)

        create_event_batch = cls(
            events=events,
        )

        return create_event_batch
