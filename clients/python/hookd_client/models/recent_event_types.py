from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="RecentEventTypes")


@_attrs_define
class RecentEventTypes:
    """
    Attributes:
        data (list[str]): The distinct event types, sorted: of the newest 10,000 events of
            the endpoint's owner and of its own newest 10,000 notifications
            created since `since`, whether or not the endpoint takes them (for
            a busy owner, the types of its latest traffic); at most 200.
        partial (bool): More than 200 types were found: the first 200 are answered.
        since (datetime.datetime): 30 days before the request.
    """

    data: list[str]
    partial: bool
    since: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        partial = self.partial

        since = self.since.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "partial": partial,
                "since": since,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        data = cast(list[str], d.pop("data"))

        partial = d.pop("partial")

        since = datetime.datetime.fromisoformat(d.pop("since"))

        recent_event_types = cls(
            data=data,
            partial=partial,
            since=since,
        )

        recent_event_types.additional_properties = d
        return recent_event_types

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
