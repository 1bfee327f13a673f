from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.schedule_spec_type_0 import ScheduleSpecType0
from ..models.status import Status
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.last_attempt import LastAttempt
    from ..models.page_notification_view_data_item_headers import (
        PageNotificationViewDataItemHeaders,
    )
    from ..models.waiting import Waiting


T = TypeVar("T", bound="PageNotificationViewDataItem")


@_attrs_define
class PageNotificationViewDataItem:
    """
    Attributes:
        attempts (int): Attempts made so far, over every series.
        completed_at (datetime.datetime | None):
        content_type (str):
        created_at (datetime.datetime):
        deliver_at (datetime.datetime):
        endpoint_id (UUID):
        event_id (None | UUID): The event this notification delivers, when it is one's delivery.
        event_type (None | str):
        headers (PageNotificationViewDataItemHeaders): Custom headers by name; their values are never shown (`***`),
            except a trace context's (`traceparent`, `tracestate`).
        id (UUID):
        key (None | str):
        last_attempt (LastAttempt | None):
        leased (bool): A pull consumer holds it under a lease that has not run out: its
            attempt is under way.
        next_attempt_at (datetime.datetime | None): When the next attempt is due; `null` once final. While `leased`,
            when the lease runs out.
        order_key (None | str): The business object it is about; on an endpoint ordered by key,
            notifications of one `order_key` go one at a time.
        schedule (list[str] | ScheduleSpecType0): How a schedule is written: a preset name (`alipay`, `wechat`,
            `exponential`) or an
            array of durations (`["0s", "2m", "1h"]`). Example: ['0s', '500ms', '2m', '1h'].
        sequence (int | None): Its place in its key's order (1, 2, 3 …, and 1 again once retention
            removed every notification of the key), sent as `webhook-sequence`;
            `null` unless its endpoint orders by key.
        status (Status): `pending` until it succeeds, exhausts its schedule (`failed`) or is cancelled.
        updated_at (datetime.datetime):
        waiting (None | Waiting):
        body (None | str | Unset): The body as text (single reads only, other content types).
        payload (Any | Unset): The JSON payload (single reads only, JSON content types).
        url (None | str | Unset): Where it is sent, when not to its endpoint's URL.
    """

    attempts: int
    completed_at: datetime.datetime | None
    content_type: str
    created_at: datetime.datetime
    deliver_at: datetime.datetime
    endpoint_id: UUID
    event_id: None | UUID
    event_type: None | str
    headers: PageNotificationViewDataItemHeaders
    id: UUID
    key: None | str
    last_attempt: LastAttempt | None
    leased: bool
    next_attempt_at: datetime.datetime | None
    order_key: None | str
    schedule: list[str] | ScheduleSpecType0
    sequence: int | None
    status: Status
    updated_at: datetime.datetime
    waiting: None | Waiting
    body: None | str | Unset = UNSET
    payload: Any | Unset = UNSET
    url: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.last_attempt import LastAttempt
        from ..models.waiting import Waiting

        attempts = self.attempts

        completed_at: None | str
        if isinstance(self.completed_at, datetime.datetime):
            completed_at = self.completed_at.isoformat()
        else:
            completed_at = self.completed_at

        content_type = self.content_type

        created_at = self.created_at.isoformat()

        deliver_at = self.deliver_at.isoformat()

        endpoint_id = str(self.endpoint_id)

        event_id: None | str
        if isinstance(self.event_id, UUID):
            event_id = str(self.event_id)
        else:
            event_id = self.event_id

        event_type: None | str
        event_type = self.event_type

        headers = self.headers.to_dict()

        id = str(self.id)

        key: None | str
        key = self.key

        last_attempt: dict[str, Any] | None
        if isinstance(self.last_attempt, LastAttempt):
            last_attempt = self.last_attempt.to_dict()
        else:
            last_attempt = self.last_attempt

        leased = self.leased

        next_attempt_at: None | str
        if isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        order_key: None | str
        order_key = self.order_key

        schedule: list[str] | str
        if isinstance(self.schedule, ScheduleSpecType0):
            schedule = self.schedule.value
        else:
            schedule = self.schedule

        sequence: int | None
        sequence = self.sequence

        status = self.status.value

        updated_at = self.updated_at.isoformat()

        waiting: dict[str, Any] | None
        if isinstance(self.waiting, Waiting):
            waiting = self.waiting.to_dict()
        else:
            waiting = self.waiting

        body: None | str | Unset
        if isinstance(self.body, Unset):
            body = UNSET
        else:
            body = self.body

        payload = self.payload

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "completed_at": completed_at,
                "content_type": content_type,
                "created_at": created_at,
                "deliver_at": deliver_at,
                "endpoint_id": endpoint_id,
                "event_id": event_id,
                "event_type": event_type,
                "headers": headers,
                "id": id,
                "key": key,
                "last_attempt": last_attempt,
                "leased": leased,
                "next_attempt_at": next_attempt_at,
                "order_key": order_key,
                "schedule": schedule,
                "sequence": sequence,
                "status": status,
                "updated_at": updated_at,
                "waiting": waiting,
            }
        )
        if body is not UNSET:
            field_dict["body"] = body
        if payload is not UNSET:
            field_dict["payload"] = payload
        if url is not UNSET:
            field_dict["url"] = url

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.last_attempt import LastAttempt
        from ..models.page_notification_view_data_item_headers import (
            PageNotificationViewDataItemHeaders,
        )
        from ..models.waiting import Waiting

        d = dict(src_dict)
        attempts = d.pop("attempts")

        def _parse_completed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                completed_at_type_0 = datetime.datetime.fromisoformat(data)

                return completed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        completed_at = _parse_completed_at(d.pop("completed_at"))

        content_type = d.pop("content_type")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        deliver_at = datetime.datetime.fromisoformat(d.pop("deliver_at"))

        endpoint_id = UUID(d.pop("endpoint_id"))

        def _parse_event_id(data: object) -> None | UUID:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                event_id_type_0 = UUID(data)

                return event_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | UUID, data)

        event_id = _parse_event_id(d.pop("event_id"))

        def _parse_event_type(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        event_type = _parse_event_type(d.pop("event_type"))

        headers = PageNotificationViewDataItemHeaders.from_dict(d.pop("headers"))

        id = UUID(d.pop("id"))

        def _parse_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        key = _parse_key(d.pop("key"))

        def _parse_last_attempt(data: object) -> LastAttempt | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                last_attempt_type_0 = LastAttempt.from_dict(data)

                return last_attempt_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LastAttempt | None, data)

        last_attempt = _parse_last_attempt(d.pop("last_attempt"))

        leased = d.pop("leased")

        def _parse_next_attempt_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_attempt_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at"))

        def _parse_order_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        order_key = _parse_order_key(d.pop("order_key"))

        def _parse_schedule(data: object) -> list[str] | ScheduleSpecType0:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_schedule_spec_type_0 = ScheduleSpecType0(data)

                return componentsschemas_schedule_spec_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, list):
                raise TypeError()
            componentsschemas_schedule_spec_type_1 = cast(list[str], data)

            return componentsschemas_schedule_spec_type_1

        schedule = _parse_schedule(d.pop("schedule"))

        def _parse_sequence(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        sequence = _parse_sequence(d.pop("sequence"))

        status = Status(d.pop("status"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_waiting(data: object) -> None | Waiting:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                waiting_type_0 = Waiting.from_dict(data)

                return waiting_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Waiting, data)

        waiting = _parse_waiting(d.pop("waiting"))

        def _parse_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        body = _parse_body(d.pop("body", UNSET))

        payload = d.pop("payload", UNSET)

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

        page_notification_view_data_item = cls(
            attempts=attempts,
            completed_at=completed_at,
            content_type=content_type,
            created_at=created_at,
            deliver_at=deliver_at,
            endpoint_id=endpoint_id,
            event_id=event_id,
            event_type=event_type,
            headers=headers,
            id=id,
            key=key,
            last_attempt=last_attempt,
            leased=leased,
            next_attempt_at=next_attempt_at,
            order_key=order_key,
            schedule=schedule,
            sequence=sequence,
            status=status,
            updated_at=updated_at,
            waiting=waiting,
            body=body,
            payload=payload,
            url=url,
        )

        page_notification_view_data_item.additional_properties = d
        return page_notification_view_data_item

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
