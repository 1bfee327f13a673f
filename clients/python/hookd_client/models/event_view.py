from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.status_counts import StatusCounts


T = TypeVar("T", bound="EventView")


@_attrs_define
class EventView:
    """An event as the API shows it.

    Attributes:
        content_type (str):
        created_at (datetime.datetime):
        deliver_at (datetime.datetime):
        deliveries (int): Notifications its fan-out created, one per subscribed endpoint.
        event_type (str):
        id (UUID):
        body (None | str | Unset): The body as text (single reads only, other content types).
        counts (None | StatusCounts | Unset):
        key (None | str | Unset):
        order_key (None | str | Unset): The business object it is about: its deliveries carry it, and on
            endpoints ordered by key go one at a time per key.
        owner (None | str | Unset):
        payload (Any | Unset): The JSON payload (single reads only, JSON content types).
    """

    content_type: str
    created_at: datetime.datetime
    deliver_at: datetime.datetime
    deliveries: int
    event_type: str
    id: UUID
    body: None | str | Unset = UNSET
    counts: None | StatusCounts | Unset = UNSET
    key: None | str | Unset = UNSET
    order_key: None | str | Unset = UNSET
    owner: None | str | Unset = UNSET
    payload: Any | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.status_counts import StatusCounts

        content_type = self.content_type

        created_at = self.created_at.isoformat()

        deliver_at = self.deliver_at.isoformat()

        deliveries = self.deliveries

        event_type = self.event_type

        id = str(self.id)

        body: None | str | Unset
        if isinstance(self.body, Unset):
            body = UNSET
        else:
            body = self.body

        counts: dict[str, Any] | None | Unset
        if isinstance(self.counts, Unset):
            counts = UNSET
        elif isinstance(self.counts, StatusCounts):
            counts = self.counts.to_dict()
        else:
            counts = self.counts

        key: None | str | Unset
        if isinstance(self.key, Unset):
            key = UNSET
        else:
            key = self.key

        order_key: None | str | Unset
        if isinstance(self.order_key, Unset):
            order_key = UNSET
        else:
            order_key = self.order_key

        owner: None | str | Unset
        if isinstance(self.owner, Unset):
            owner = UNSET
        else:
            owner = self.owner

        payload = self.payload

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "content_type": content_type,
                "created_at": created_at,
                "deliver_at": deliver_at,
                "deliveries": deliveries,
                "event_type": event_type,
                "id": id,
            }
        )
        if body is not UNSET:
            field_dict["body"] = body
        if counts is not UNSET:
            field_dict["counts"] = counts
        if key is not UNSET:
            field_dict["key"] = key
        if order_key is not UNSET:
            field_dict["order_key"] = order_key
        if owner is not UNSET:
            field_dict["owner"] = owner
        if payload is not UNSET:
            field_dict["payload"] = payload

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.status_counts import StatusCounts

        d = dict(src_dict)
        content_type = d.pop("content_type")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        deliver_at = datetime.datetime.fromisoformat(d.pop("deliver_at"))

        deliveries = d.pop("deliveries")

        event_type = d.pop("event_type")

        id = UUID(d.pop("id"))

        def _parse_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        body = _parse_body(d.pop("body", UNSET))

        def _parse_counts(data: object) -> None | StatusCounts | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                counts_type_0 = StatusCounts.from_dict(data)

                return counts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StatusCounts | Unset, data)

        counts = _parse_counts(d.pop("counts", UNSET))

        def _parse_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key = _parse_key(d.pop("key", UNSET))

        def _parse_order_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        order_key = _parse_order_key(d.pop("order_key", UNSET))

        def _parse_owner(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        owner = _parse_owner(d.pop("owner", UNSET))

        payload = d.pop("payload", UNSET)

        event_view = cls(
            content_type=content_type,
            created_at=created_at,
            deliver_at=deliver_at,
            deliveries=deliveries,
            event_type=event_type,
            id=id,
            body=body,
            counts=counts,
            key=key,
            order_key=order_key,
            owner=owner,
            payload=payload,
        )

        event_view.additional_properties = d
        return event_view

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
