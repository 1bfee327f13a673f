from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.pulled_headers import PulledHeaders


T = TypeVar("T", bound="Pulled")


@_attrs_define
class Pulled:
    """A notification taken under a lease.

    Attributes:
        attempt (int): 1-based, over every series: this lease is that attempt.
        content_type (str):
        created_at (datetime.datetime):
        headers (PulledHeaders): The notification's custom headers.
        id (UUID):
        lease_until (datetime.datetime): When the lease runs out unless extended.
        order_key (None | str): The business object it is about, on an endpoint ordered by key: a
            pull offers only each key's earliest pending notification.
        receipt (str): Names this lease: ack, nack or extend with it.
        sequence (int | None): Its place in its key's order (1, 2, 3 …), as a push delivery's
            `webhook-sequence`: a gap tells the consumer one is missing. `null`
            unless its endpoint orders by key.
        body (None | str | Unset): The body as text (other content types).
        event_id (None | Unset | UUID):
        event_type (None | str | Unset):
        key (None | str | Unset):
        payload (Any | Unset): The JSON payload (JSON content types).
    """

    attempt: int
    content_type: str
    created_at: datetime.datetime
    headers: PulledHeaders
    id: UUID
    lease_until: datetime.datetime
    order_key: None | str
    receipt: str
    sequence: int | None
    body: None | str | Unset = UNSET
    event_id: None | Unset | UUID = UNSET
    event_type: None | str | Unset = UNSET
    key: None | str | Unset = UNSET
    payload: Any | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        content_type = self.content_type

        created_at = self.created_at.isoformat()

        headers = self.headers.to_dict()

        id = str(self.id)

        lease_until = self.lease_until.isoformat()

        order_key: None | str
        order_key = self.order_key

        receipt = self.receipt

        sequence: int | None
        sequence = self.sequence

        body: None | str | Unset
        if isinstance(self.body, Unset):
            body = UNSET
        else:
            body = self.body

        event_id: None | str | Unset
        if isinstance(self.event_id, Unset):
            event_id = UNSET
        elif isinstance(self.event_id, UUID):
            event_id = str(self.event_id)
        else:
            event_id = self.event_id

        event_type: None | str | Unset
        if isinstance(self.event_type, Unset):
            event_type = UNSET
        else:
            event_type = self.event_type

        key: None | str | Unset
        if isinstance(self.key, Unset):
            key = UNSET
        else:
            key = self.key

        payload = self.payload

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "content_type": content_type,
                "created_at": created_at,
                "headers": headers,
                "id": id,
                "lease_until": lease_until,
                "order_key": order_key,
                "receipt": receipt,
                "sequence": sequence,
            }
        )
        if body is not UNSET:
            field_dict["body"] = body
        if event_id is not UNSET:
            field_dict["event_id"] = event_id
        if event_type is not UNSET:
            field_dict["event_type"] = event_type
        if key is not UNSET:
            field_dict["key"] = key
        if payload is not UNSET:
            field_dict["payload"] = payload

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.pulled_headers import PulledHeaders

        d = dict(src_dict)
        attempt = d.pop("attempt")

        content_type = d.pop("content_type")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        headers = PulledHeaders.from_dict(d.pop("headers"))

        id = UUID(d.pop("id"))

        lease_until = datetime.datetime.fromisoformat(d.pop("lease_until"))

        def _parse_order_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        order_key = _parse_order_key(d.pop("order_key"))

        receipt = d.pop("receipt")

        def _parse_sequence(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        sequence = _parse_sequence(d.pop("sequence"))

        def _parse_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        body = _parse_body(d.pop("body", UNSET))

        def _parse_event_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                event_id_type_0 = UUID(data)

                return event_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        event_id = _parse_event_id(d.pop("event_id", UNSET))

        def _parse_event_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event_type = _parse_event_type(d.pop("event_type", UNSET))

        def _parse_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key = _parse_key(d.pop("key", UNSET))

        payload = d.pop("payload", UNSET)

        pulled = cls(
            attempt=attempt,
            content_type=content_type,
            created_at=created_at,
            headers=headers,
            id=id,
            lease_until=lease_until,
            order_key=order_key,
            receipt=receipt,
            sequence=sequence,
            body=body,
            event_id=event_id,
            event_type=event_type,
            key=key,
            payload=payload,
        )

        pulled.additional_properties = d
        return pulled

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
