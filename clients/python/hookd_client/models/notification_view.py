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
    from ..models.notification_view_headers import NotificationViewHeaders
    from ..models.waiting import Waiting


T = TypeVar("T", bound="NotificationView")


@_attrs_define
class NotificationView:
    """
    Attributes:
        attempts (int): Attempts made so far, over every series.
        content_type (str):
        created_at (datetime.datetime):
        deliver_at (datetime.datetime):
        endpoint_id (UUID):
        headers (NotificationViewHeaders): Custom headers by name; their values are never shown (`***`),
            except a trace context's (`traceparent`, `tracestate`).
        id (UUID):
        leased (bool): A pull consumer holds it under a lease that has not run out: its
            attempt is under way.
        schedule (list[str] | ScheduleSpecType0): How a schedule is written: a preset name or an array of durations. The
            API takes it as JSON and validates it (`Schedule::from_json`); this type
            only describes it to the OpenAPI document. Example: ['0s', '500ms', '2m', '1h'].
        status (Status): `pending` until it succeeds, exhausts its schedule (`failed`) or is cancelled.
            Stored as its lowercase name in a `text` column (the schema's CHECK lists
            the same four), so a row decodes to one of these or not at all.
        updated_at (datetime.datetime):
        body (None | str | Unset): The body as text (single reads only, other content types).
        completed_at (datetime.datetime | None | Unset):
        event_id (None | Unset | UUID): The event this notification delivers, when it is one's delivery.
        event_type (None | str | Unset):
        key (None | str | Unset):
        last_attempt (LastAttempt | None | Unset):
        next_attempt_at (datetime.datetime | None | Unset): When the next attempt is due; `null` once final. While
            `leased`,
            when the lease runs out.
        order_key (None | str | Unset): The business object it is about; on an endpoint ordered by key,
            notifications of one `order_key` go one at a time.
        payload (Any | Unset): The JSON payload (single reads only, JSON content types).
        sequence (int | None | Unset): Its place in its key's order (1, 2, 3 …, and 1 again once retention
            removed every notification of the key), sent as `webhook-sequence`;
            `null` unless its endpoint orders by key.
        url (None | str | Unset): Where it is sent, when not to its endpoint's URL.
        waiting (None | Unset | Waiting):
    """

    attempts: int
    content_type: str
    created_at: datetime.datetime
    deliver_at: datetime.datetime
    endpoint_id: UUID
    headers: NotificationViewHeaders
    id: UUID
    leased: bool
    schedule: list[str] | ScheduleSpecType0
    status: Status
    updated_at: datetime.datetime
    body: None | str | Unset = UNSET
    completed_at: datetime.datetime | None | Unset = UNSET
    event_id: None | Unset | UUID = UNSET
    event_type: None | str | Unset = UNSET
    key: None | str | Unset = UNSET
    last_attempt: LastAttempt | None | Unset = UNSET
    next_attempt_at: datetime.datetime | None | Unset = UNSET
    order_key: None | str | Unset = UNSET
    payload: Any | Unset = UNSET
    sequence: int | None | Unset = UNSET
    url: None | str | Unset = UNSET
    waiting: None | Unset | Waiting = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.last_attempt import LastAttempt
        from ..models.waiting import Waiting

        attempts = self.attempts

        content_type = self.content_type

        created_at = self.created_at.isoformat()

        deliver_at = self.deliver_at.isoformat()

        endpoint_id = str(self.endpoint_id)

        headers = self.headers.to_dict()

        id = str(self.id)

        leased = self.leased

        schedule: list[str] | str
        if isinstance(self.schedule, ScheduleSpecType0):
            schedule = self.schedule.value
        else:
            schedule = self.schedule

        status = self.status.value

        updated_at = self.updated_at.isoformat()

        body: None | str | Unset
        if isinstance(self.body, Unset):
            body = UNSET
        else:
            body = self.body

        completed_at: None | str | Unset
        if isinstance(self.completed_at, Unset):
            completed_at = UNSET
        elif isinstance(self.completed_at, datetime.datetime):
            completed_at = self.completed_at.isoformat()
        else:
            completed_at = self.completed_at

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

        last_attempt: dict[str, Any] | None | Unset
        if isinstance(self.last_attempt, Unset):
            last_attempt = UNSET
        elif isinstance(self.last_attempt, LastAttempt):
            last_attempt = self.last_attempt.to_dict()
        else:
            last_attempt = self.last_attempt

        next_attempt_at: None | str | Unset
        if isinstance(self.next_attempt_at, Unset):
            next_attempt_at = UNSET
        elif isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        order_key: None | str | Unset
        if isinstance(self.order_key, Unset):
            order_key = UNSET
        else:
            order_key = self.order_key

        payload = self.payload

        sequence: int | None | Unset
        if isinstance(self.sequence, Unset):
            sequence = UNSET
        else:
            sequence = self.sequence

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        waiting: dict[str, Any] | None | Unset
        if isinstance(self.waiting, Unset):
            waiting = UNSET
        elif isinstance(self.waiting, Waiting):
            waiting = self.waiting.to_dict()
        else:
            waiting = self.waiting

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "content_type": content_type,
                "created_at": created_at,
                "deliver_at": deliver_at,
                "endpoint_id": endpoint_id,
                "headers": headers,
                "id": id,
                "leased": leased,
                "schedule": schedule,
                "status": status,
                "updated_at": updated_at,
            }
        )
        if body is not UNSET:
            field_dict["body"] = body
        if completed_at is not UNSET:
            field_dict["completed_at"] = completed_at
        if event_id is not UNSET:
            field_dict["event_id"] = event_id
        if event_type is not UNSET:
            field_dict["event_type"] = event_type
        if key is not UNSET:
            field_dict["key"] = key
        if last_attempt is not UNSET:
            field_dict["last_attempt"] = last_attempt
        if next_attempt_at is not UNSET:
            field_dict["next_attempt_at"] = next_attempt_at
        if order_key is not UNSET:
            field_dict["order_key"] = order_key
        if payload is not UNSET:
            field_dict["payload"] = payload
        if sequence is not UNSET:
            field_dict["sequence"] = sequence
        if url is not UNSET:
            field_dict["url"] = url
        if waiting is not UNSET:
            field_dict["waiting"] = waiting

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.last_attempt import LastAttempt
        from ..models.notification_view_headers import NotificationViewHeaders
        from ..models.waiting import Waiting

        d = dict(src_dict)
        attempts = d.pop("attempts")

        content_type = d.pop("content_type")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        deliver_at = datetime.datetime.fromisoformat(d.pop("deliver_at"))

        endpoint_id = UUID(d.pop("endpoint_id"))

        headers = NotificationViewHeaders.from_dict(d.pop("headers"))

        id = UUID(d.pop("id"))

        leased = d.pop("leased")

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

        status = Status(d.pop("status"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        body = _parse_body(d.pop("body", UNSET))

        def _parse_completed_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                completed_at_type_0 = datetime.datetime.fromisoformat(data)

                return completed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        completed_at = _parse_completed_at(d.pop("completed_at", UNSET))

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

        def _parse_last_attempt(data: object) -> LastAttempt | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                last_attempt_type_0 = LastAttempt.from_dict(data)

                return last_attempt_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LastAttempt | None | Unset, data)

        last_attempt = _parse_last_attempt(d.pop("last_attempt", UNSET))

        def _parse_next_attempt_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_attempt_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at", UNSET))

        def _parse_order_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        order_key = _parse_order_key(d.pop("order_key", UNSET))

        payload = d.pop("payload", UNSET)

        def _parse_sequence(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        sequence = _parse_sequence(d.pop("sequence", UNSET))

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

        def _parse_waiting(data: object) -> None | Unset | Waiting:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                waiting_type_0 = Waiting.from_dict(data)

                return waiting_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | Waiting, data)

        waiting = _parse_waiting(d.pop("waiting", UNSET))

        notification_view = cls(
            attempts=attempts,
            content_type=content_type,
            created_at=created_at,
            deliver_at=deliver_at,
            endpoint_id=endpoint_id,
            headers=headers,
            id=id,
            leased=leased,
            schedule=schedule,
            status=status,
            updated_at=updated_at,
            body=body,
            completed_at=completed_at,
            event_id=event_id,
            event_type=event_type,
            key=key,
            last_attempt=last_attempt,
            next_attempt_at=next_attempt_at,
            order_key=order_key,
            payload=payload,
            sequence=sequence,
            url=url,
            waiting=waiting,
        )

        notification_view.additional_properties = d
        return notification_view

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
