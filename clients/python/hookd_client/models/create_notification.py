from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.schedule_spec_type_0 import ScheduleSpecType0
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.create_notification_headers_type_0 import (
        CreateNotificationHeadersType0,
    )


T = TypeVar("T", bound="CreateNotification")


@_attrs_define
class CreateNotification:
    """A notification as a producer submits it.

    Attributes:
        endpoint (str): The endpoint's id or uid.
        body (None | str | Unset): A text body (with `content_type`, e.g. a form for Alipay-style
            receivers). Excludes `payload`.
        content_type (None | str | Unset): Default `application/json`.
        delay (None | str | Unset): Wait before the notification is due (`"30s"`, `"2m"`). Excludes `deliver_at`.
        deliver_at (datetime.datetime | None | Unset): RFC 3339 time before which nothing is sent. Excludes `delay`.
        event_type (None | str | Unset):
        headers (CreateNotificationHeadersType0 | None | Unset): Extra headers for this notification's deliveries.
        key (None | str | Unset): The producer's business key (`order-123:paid`), unique per endpoint:
            creating again with it is idempotent.
        order_key (None | str | Unset): The business object it is about (`order-123`): on an endpoint with
            `"ordering": "key"`, notifications of one key are attempted one at
            a time, in creation order. 1 to 256 bytes.
        payload (Any | Unset): A JSON payload, sent as the exact bytes given. Excludes `body`.
        schedule (list[str] | None | ScheduleSpecType0 | Unset):
        url (None | str | Unset): Where to send this notification instead of the endpoint's URL
            (Alipay's per-order `notify_url`), signed with the endpoint's secret
            and sent on its schedule and policy. The address guard applies.
    """

    endpoint: str
    body: None | str | Unset = UNSET
    content_type: None | str | Unset = UNSET
    delay: None | str | Unset = UNSET
    deliver_at: datetime.datetime | None | Unset = UNSET
    event_type: None | str | Unset = UNSET
    headers: CreateNotificationHeadersType0 | None | Unset = UNSET
    key: None | str | Unset = UNSET
    order_key: None | str | Unset = UNSET
    payload: Any | Unset = UNSET
    schedule: list[str] | None | ScheduleSpecType0 | Unset = UNSET
    url: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.create_notification_headers_type_0 import (
            CreateNotificationHeadersType0,
        )

        endpoint = self.endpoint

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

        event_type: None | str | Unset
        if isinstance(self.event_type, Unset):
            event_type = UNSET
        else:
            event_type = self.event_type

        headers: dict[str, Any] | None | Unset
        if isinstance(self.headers, Unset):
            headers = UNSET
        elif isinstance(self.headers, CreateNotificationHeadersType0):
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

        payload = self.payload

        schedule: list[str] | None | str | Unset
        if isinstance(self.schedule, Unset):
            schedule = UNSET
        elif isinstance(self.schedule, ScheduleSpecType0):
            schedule = self.schedule.value
        elif isinstance(self.schedule, list):
            schedule = self.schedule

        else:
            schedule = self.schedule

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "endpoint": endpoint,
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
        if event_type is not UNSET:
            field_dict["event_type"] = event_type
        if headers is not UNSET:
            field_dict["headers"] = headers
        if key is not UNSET:
            field_dict["key"] = key
        if order_key is not UNSET:
            field_dict["order_key"] = order_key
        if payload is not UNSET:
            field_dict["payload"] = payload
        if schedule is not UNSET:
            field_dict["schedule"] = schedule
        if url is not UNSET:
            field_dict["url"] = url

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.create_notification_headers_type_0 import (
            CreateNotificationHeadersType0,
        )

        d = dict(src_dict)
        endpoint = d.pop("endpoint")

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

        def _parse_event_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event_type = _parse_event_type(d.pop("event_type", UNSET))

        def _parse_headers(
            data: object,
        ) -> CreateNotificationHeadersType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                headers_type_0 = CreateNotificationHeadersType0.from_dict(data)

                return headers_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CreateNotificationHeadersType0 | None | Unset, data)

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

        payload = d.pop("payload", UNSET)

        def _parse_schedule(
            data: object,
        ) -> list[str] | None | ScheduleSpecType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_schedule_spec_type_0 = ScheduleSpecType0(data)

                return componentsschemas_schedule_spec_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, list):
                    raise TypeError()
                componentsschemas_schedule_spec_type_1 = cast(list[str], data)

                return componentsschemas_schedule_spec_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | ScheduleSpecType0 | Unset, data)

        schedule = _parse_schedule(d.pop("schedule", UNSET))

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

        create_notification = cls(
            endpoint=endpoint,
            body=body,
            content_type=content_type,
            delay=delay,
            deliver_at=deliver_at,
            event_type=event_type,
            headers=headers,
            key=key,
            order_key=order_key,
            payload=payload,
            schedule=schedule,
            url=url,
        )

        return create_notification
