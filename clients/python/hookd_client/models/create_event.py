from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.create_event_headers_type_0 import CreateEventHeadersType0


T = TypeVar("T", bound="CreateEvent")


@_attrs_define
class CreateEvent:
    """An event as a producer submits it.
    `Debug` masks header values.

        Attributes:
            event_type (str): What happened: `order.paid`. Dot-separated segments, none empty.
            body (None | str | Unset): A text body. Excludes `payload`.
            content_type (None | str | Unset): Default `application/json` (`text/plain; charset=utf-8` for a `body`).
            delay (None | str | Unset): Wait before the deliveries are due (`"30s"`). Excludes `deliver_at`.
            deliver_at (datetime.datetime | None | Unset): RFC 3339 time before which nothing is sent. Excludes `delay`.
            endpoints (list[str] | None | Unset): Only these endpoints (id or uid) of the owner, if still subscribed;
                at least one (absent: every subscribed endpoint of the owner).
            headers (CreateEventHeadersType0 | None | Unset): Extra headers on every delivery.
            key (None | str | Unset): The producer's business key, unique per owner: sending the same
                event again with it is idempotent.
            order_key (None | str | Unset): The business object it is about (`order-123`): its deliveries carry
                it, and on endpoints with `"ordering": "key"` they go one at a time
                per key, in creation order. 1 to 256 bytes.
            owner (None | str | Unset): The tenant whose endpoints hear of it; absent: endpoints without an
                owner.
            payload (Any | Unset): A JSON payload, sent as the exact bytes given. Excludes `body`.
    """

    event_type: str
    body: None | str | Unset = UNSET
    content_type: None | str | Unset = UNSET
    delay: None | str | Unset = UNSET
    deliver_at: datetime.datetime | None | Unset = UNSET
    endpoints: list[str] | None | Unset = UNSET
    headers: CreateEventHeadersType0 | None | Unset = UNSET
    key: None | str | Unset = UNSET
    order_key: None | str | Unset = UNSET
    owner: None | str | Unset = UNSET
    payload: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.create_event_headers_type_0 import CreateEventHeadersType0

        event_type = self.event_type

        body: None | str | Unset
        if isinstance(self.body, Unset):
            body = UNSET
        else:
            body = self.body

        content_type: None | str | Unset
        if isinstance(self.content_type, Unset):
            content_type = UNSET
        else:
            content_type = self.content_type

        delay: None | str | Unset
        if isinstance(self.delay, Unset):
            delay = UNSET
        else:
            delay = self.delay

        deliver_at: None | str | Unset
        if isinstance(self.deliver_at, Unset):
            deliver_at = UNSET
        elif isinstance(self.deliver_at, datetime.datetime):
            deliver_at = self.deliver_at.isoformat()
        else:
            deliver_at = self.deliver_at

        endpoints: list[str] | None | Unset
        if isinstance(self.endpoints, Unset):
            endpoints = UNSET
        elif isinstance(self.endpoints, list):
            endpoints = self.endpoints

        else:
            endpoints = self.endpoints

        headers: dict[str, Any] | None | Unset
        if isinstance(self.headers, Unset):
            headers = UNSET
        elif isinstance(self.headers, CreateEventHeadersType0):
            headers = self.headers.to_dict()
        else:
            headers = self.headers

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

        field_dict.update(
            {
                "event_type": event_type,
            }
        )
        if body is not UNSET:
            field_dict["body"] = body
        if content_type is not UNSET:
            field_dict["content_type"] = content_type
        if delay is not UNSET:
            field_dict["delay"] = delay
        if deliver_at is not UNSET:
            field_dict["deliver_at"] = deliver_at
        if endpoints is not UNSET:
            field_dict["endpoints"] = endpoints
        if headers is not UNSET:
            field_dict["headers"] = headers
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
        from ..models.create_event_headers_type_0 import CreateEventHeadersType0

        d = dict(src_dict)
        event_type = d.pop("event_type")

        def _parse_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        body = _parse_body(d.pop("body", UNSET))

        def _parse_content_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        content_type = _parse_content_type(d.pop("content_type", UNSET))

        def _parse_delay(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        delay = _parse_delay(d.pop("delay", UNSET))

        def _parse_deliver_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                deliver_at_type_0 = datetime.datetime.fromisoformat(data)

                return deliver_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        deliver_at = _parse_deliver_at(d.pop("deliver_at", UNSET))

        def _parse_endpoints(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                endpoints_type_0 = cast(list[str], data)

                return endpoints_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        endpoints = _parse_endpoints(d.pop("endpoints", UNSET))

        def _parse_headers(data: object) -> CreateEventHeadersType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                headers_type_0 = CreateEventHeadersType0.from_dict(data)

                return headers_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CreateEventHeadersType0 | None | Unset, data)

        headers = _parse_headers(d.pop("headers", UNSET))

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

        create_event = cls(
            event_type=event_type,
            body=body,
            content_type=content_type,
            delay=delay,
            deliver_at=deliver_at,
            endpoints=endpoints,
            headers=headers,
            key=key,
            order_key=order_key,
            owner=owner,
            payload=payload,
        )

        return create_event
