from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.delivery import Delivery
from ..models.ordering import Ordering
from ..models.ordering_on_failure import OrderingOnFailure
from ..models.schedule_spec_type_0 import ScheduleSpecType0
from ..models.signing import Signing
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.breaker_fields import BreakerFields
    from ..models.circuit_view import CircuitView
    from ..models.endpoint_view_filter_type_0 import EndpointViewFilterType0
    from ..models.endpoint_view_headers import EndpointViewHeaders
    from ..models.rate_limit import RateLimit


T = TypeVar("T", bound="EndpointView")


@_attrs_define
class EndpointView:
    """An endpoint as the API shows it. The secret appears only when it is new
    (create, rotate) or asked for (`GET .../secret`).

        Attributes:
            circuit (CircuitView): An endpoint's circuit breaker state (docs/design.md §16).
            created_at (datetime.datetime):
            delivery (Delivery): How an endpoint's notifications reach it: POSTed by hookd (`push`), or
                taken by its consumers (`pull`).
            description (str):
            disabled (bool):
            headers (EndpointViewHeaders): Custom headers by name; their values are never shown (`***`).
            id (UUID):
            ordering (Ordering): Whether an endpoint attempts the notifications of one `order_key` one at
                a time, in creation order.
            ordering_on_failure (OrderingOnFailure): What a notification of an ordered endpoint that ends `failed` or
                `cancelled` does to the later ones of its key.
            permanent_statuses (list[int]):
            schedule (list[str] | ScheduleSpecType0): How a schedule is written: a preset name or an array of durations. The
                API takes it as JSON and validates it (`Schedule::from_json`); this type
                only describes it to the OpenAPI document. Example: ['0s', '500ms', '2m', '1h'].
            schedule_jitter (float): Each wait of the schedule is scaled by a random factor in
                [1 − j, 1 + j]; 0 keeps the schedule exact.
            signing (Signing): How an endpoint signs its deliveries.
            updated_at (datetime.datetime):
            url_secret (bool): The whole path of `url` is a credential: callers without the
                `secrets` scope see only its origin.
            breaker (BreakerFields | None | Unset):
            disabled_reason (None | str | Unset): `failing` when hookd disabled the endpoint because every attempt
                failed for `dispatcher.disable_failing_endpoints_after_hours`.
            event_types (list[str] | None | Unset):
            failing_since (datetime.datetime | None | Unset): Since when every attempt to the endpoint has failed; null
                after a
                success.
            filter_ (EndpointViewFilterType0 | None | Unset): The predicate an event's payload must satisfy to reach it, as
                written; null: every event of its types.
            fresh_share (float | None | Unset): Fresh notifications' part of the rate limit while retries are due
                beside them (lanes); `null`: `dispatcher.fresh_share` applies.
            max_in_flight (int | None | Unset):
            owner (None | str | Unset): The tenant it belongs to; events fan out within one owner.
            rate_limit (None | RateLimit | Unset):
            secret (None | str | Unset):
            success_body (None | str | Unset):
            timeout_ms (int | None | Unset):
            uid (None | str | Unset):
            url (None | str | Unset): Where hookd POSTs; null for a pull endpoint.
    """

    circuit: CircuitView
    created_at: datetime.datetime
    delivery: Delivery
    description: str
    disabled: bool
    headers: EndpointViewHeaders
    id: UUID
    ordering: Ordering
    ordering_on_failure: OrderingOnFailure
    permanent_statuses: list[int]
    schedule: list[str] | ScheduleSpecType0
    schedule_jitter: float
    signing: Signing
    updated_at: datetime.datetime
    url_secret: bool
    breaker: BreakerFields | None | Unset = UNSET
    disabled_reason: None | str | Unset = UNSET
    event_types: list[str] | None | Unset = UNSET
    failing_since: datetime.datetime | None | Unset = UNSET
    filter_: EndpointViewFilterType0 | None | Unset = UNSET
    fresh_share: float | None | Unset = UNSET
    max_in_flight: int | None | Unset = UNSET
    owner: None | str | Unset = UNSET
    rate_limit: None | RateLimit | Unset = UNSET
    secret: None | str | Unset = UNSET
    success_body: None | str | Unset = UNSET
    timeout_ms: int | None | Unset = UNSET
    uid: None | str | Unset = UNSET
    url: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.breaker_fields import BreakerFields
        from ..models.endpoint_view_filter_type_0 import EndpointViewFilterType0
        from ..models.rate_limit import RateLimit

        circuit = self.circuit.to_dict()

        created_at = self.created_at.isoformat()

        delivery = self.delivery.value

        description = self.description

        disabled = self.disabled

        headers = self.headers.to_dict()

        id = str(self.id)

        ordering = self.ordering.value

        ordering_on_failure = self.ordering_on_failure.value

        permanent_statuses = self.permanent_statuses

        schedule: list[str] | str
        if isinstance(self.schedule, ScheduleSpecType0):
            schedule = self.schedule.value
        else:
            schedule = self.schedule

        schedule_jitter = self.schedule_jitter

        signing = self.signing.value

        updated_at = self.updated_at.isoformat()

        url_secret = self.url_secret

        breaker: dict[str, Any] | None | Unset
        if isinstance(self.breaker, Unset):
            breaker = UNSET
        elif isinstance(self.breaker, BreakerFields):
            breaker = self.breaker.to_dict()
        else:
            breaker = self.breaker

        disabled_reason: None | str | Unset
        if isinstance(self.disabled_reason, Unset):
            disabled_reason = UNSET
        else:
            disabled_reason = self.disabled_reason

        event_types: list[str] | None | Unset
        if isinstance(self.event_types, Unset):
            event_types = UNSET
        elif isinstance(self.event_types, list):
            event_types = self.event_types

        else:
            event_types = self.event_types

        failing_since: None | str | Unset
        if isinstance(self.failing_since, Unset):
            failing_since = UNSET
        elif isinstance(self.failing_since, datetime.datetime):
            failing_since = self.failing_since.isoformat()
        else:
            failing_since = self.failing_since

        filter_: dict[str, Any] | None | Unset
        if isinstance(self.filter_, Unset):
            filter_ = UNSET
        elif isinstance(self.filter_, EndpointViewFilterType0):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        fresh_share: float | None | Unset
        if isinstance(self.fresh_share, Unset):
            fresh_share = UNSET
        else:
            fresh_share = self.fresh_share

        max_in_flight: int | None | Unset
        if isinstance(self.max_in_flight, Unset):
            max_in_flight = UNSET
        else:
            max_in_flight = self.max_in_flight

        owner: None | str | Unset
        if isinstance(self.owner, Unset):
            owner = UNSET
        else:
            owner = self.owner

        rate_limit: dict[str, Any] | None | Unset
        if isinstance(self.rate_limit, Unset):
            rate_limit = UNSET
        elif isinstance(self.rate_limit, RateLimit):
            rate_limit = self.rate_limit.to_dict()
        else:
            rate_limit = self.rate_limit

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        success_body: None | str | Unset
        if isinstance(self.success_body, Unset):
            success_body = UNSET
        else:
            success_body = self.success_body

        timeout_ms: int | None | Unset
        if isinstance(self.timeout_ms, Unset):
            timeout_ms = UNSET
        else:
            timeout_ms = self.timeout_ms

        uid: None | str | Unset
        if isinstance(self.uid, Unset):
            uid = UNSET
        else:
            uid = self.uid

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "circuit": circuit,
                "created_at": created_at,
                "delivery": delivery,
                "description": description,
                "disabled": disabled,
                "headers": headers,
                "id": id,
                "ordering": ordering,
                "ordering_on_failure": ordering_on_failure,
                "permanent_statuses": permanent_statuses,
                "schedule": schedule,
                "schedule_jitter": schedule_jitter,
                "signing": signing,
                "updated_at": updated_at,
                "url_secret": url_secret,
            }
        )
        if breaker is not UNSET:
            field_dict["breaker"] = breaker
        if disabled_reason is not UNSET:
            field_dict["disabled_reason"] = disabled_reason
        if event_types is not UNSET:
            field_dict["event_types"] = event_types
        if failing_since is not UNSET:
            field_dict["failing_since"] = failing_since
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if fresh_share is not UNSET:
            field_dict["fresh_share"] = fresh_share
        if max_in_flight is not UNSET:
            field_dict["max_in_flight"] = max_in_flight
        if owner is not UNSET:
            field_dict["owner"] = owner
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit
        if secret is not UNSET:
            field_dict["secret"] = secret
        if success_body is not UNSET:
            field_dict["success_body"] = success_body
        if timeout_ms is not UNSET:
            field_dict["timeout_ms"] = timeout_ms
        if uid is not UNSET:
            field_dict["uid"] = uid
        if url is not UNSET:
            field_dict["url"] = url

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.breaker_fields import BreakerFields
        from ..models.circuit_view import CircuitView
        from ..models.endpoint_view_filter_type_0 import EndpointViewFilterType0
        from ..models.endpoint_view_headers import EndpointViewHeaders
        from ..models.rate_limit import RateLimit

        d = dict(src_dict)
        circuit = CircuitView.from_dict(d.pop("circuit"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        delivery = Delivery(d.pop("delivery"))

        description = d.pop("description")

        disabled = d.pop("disabled")

        headers = EndpointViewHeaders.from_dict(d.pop("headers"))

        id = UUID(d.pop("id"))

        ordering = Ordering(d.pop("ordering"))

        ordering_on_failure = OrderingOnFailure(d.pop("ordering_on_failure"))

        permanent_statuses = cast(list[int], d.pop("permanent_statuses"))

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

        schedule_jitter = d.pop("schedule_jitter")

        signing = Signing(d.pop("signing"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        url_secret = d.pop("url_secret")

        def _parse_breaker(data: object) -> BreakerFields | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                breaker_type_0 = BreakerFields.from_dict(data)

                return breaker_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BreakerFields | None | Unset, data)

        breaker = _parse_breaker(d.pop("breaker", UNSET))

        def _parse_disabled_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        disabled_reason = _parse_disabled_reason(d.pop("disabled_reason", UNSET))

        def _parse_event_types(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                event_types_type_0 = cast(list[str], data)

                return event_types_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        event_types = _parse_event_types(d.pop("event_types", UNSET))

        def _parse_failing_since(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                failing_since_type_0 = datetime.datetime.fromisoformat(data)

                return failing_since_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        failing_since = _parse_failing_since(d.pop("failing_since", UNSET))

        def _parse_filter_(data: object) -> EndpointViewFilterType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_0 = EndpointViewFilterType0.from_dict(data)

                return filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EndpointViewFilterType0 | None | Unset, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        def _parse_fresh_share(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        fresh_share = _parse_fresh_share(d.pop("fresh_share", UNSET))

        def _parse_max_in_flight(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_in_flight = _parse_max_in_flight(d.pop("max_in_flight", UNSET))

        def _parse_owner(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        owner = _parse_owner(d.pop("owner", UNSET))

        def _parse_rate_limit(data: object) -> None | RateLimit | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                rate_limit_type_0 = RateLimit.from_dict(data)

                return rate_limit_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RateLimit | Unset, data)

        rate_limit = _parse_rate_limit(d.pop("rate_limit", UNSET))

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        def _parse_success_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        success_body = _parse_success_body(d.pop("success_body", UNSET))

        def _parse_timeout_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        timeout_ms = _parse_timeout_ms(d.pop("timeout_ms", UNSET))

        def _parse_uid(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        uid = _parse_uid(d.pop("uid", UNSET))

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

        endpoint_view = cls(
            circuit=circuit,
            created_at=created_at,
            delivery=delivery,
            description=description,
            disabled=disabled,
            headers=headers,
            id=id,
            ordering=ordering,
            ordering_on_failure=ordering_on_failure,
            permanent_statuses=permanent_statuses,
            schedule=schedule,
            schedule_jitter=schedule_jitter,
            signing=signing,
            updated_at=updated_at,
            url_secret=url_secret,
            breaker=breaker,
            disabled_reason=disabled_reason,
            event_types=event_types,
            failing_since=failing_since,
            filter_=filter_,
            fresh_share=fresh_share,
            max_in_flight=max_in_flight,
            owner=owner,
            rate_limit=rate_limit,
            secret=secret,
            success_body=success_body,
            timeout_ms=timeout_ms,
            uid=uid,
            url=url,
        )

        endpoint_view.additional_properties = d
        return endpoint_view

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
