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
    from ..models.endpoint_view_success_filter_type_0 import (
        EndpointViewSuccessFilterType0,
    )
    from ..models.rate_limit import RateLimit


T = TypeVar("T", bound="EndpointView")


@_attrs_define
class EndpointView:
    """An endpoint as the API shows it. The secret appears only when it is new
    (create, rotate) or asked for (`GET .../secret`).

        Attributes:
            breaker (BreakerFields | None):
            circuit (CircuitView): An endpoint's circuit breaker state.
            created_at (datetime.datetime):
            delivery (Delivery): How an endpoint's notifications reach it: POSTed by hookd (`push`), or
                taken by its consumers (`pull`).
            description (str):
            disabled (bool):
            disabled_reason (None | str): `failing` when hookd disabled the endpoint because every attempt
                failed for `dispatcher.disable_failing_endpoints_after_hours`.
            event_types (list[str] | None):
            failing_since (datetime.datetime | None): Since when every attempt to the endpoint has failed; null after a
                success.
            filter_ (EndpointViewFilterType0 | None): The predicate an event's payload must satisfy to reach it, as
                written; null: every event of its types.
            fresh_share (float | None): Fresh notifications' part of the rate limit while retries are due
                beside them (lanes); `null`: `dispatcher.fresh_share` applies.
            headers (EndpointViewHeaders): Custom headers by name; their values are never shown (`***`).
            id (UUID):
            max_in_flight (int | None):
            ordering (Ordering): Whether an endpoint attempts the notifications of one `order_key` one at
                a time, in creation order.
            ordering_on_failure (OrderingOnFailure): What a notification of an ordered endpoint that ends `failed` or
                `cancelled` does to the later ones of its key.
            owner (None | str): The tenant it belongs to; events fan out within one owner.
            permanent_statuses (list[int]):
            rate_limit (None | RateLimit):
            schedule (list[str] | ScheduleSpecType0): How a schedule is written: a preset name (`alipay`, `wechat`,
                `exponential`) or an
                array of durations (`["0s", "2m", "1h"]`). Example: ['0s', '500ms', '2m', '1h'].
            schedule_jitter (float): Each wait of the schedule is scaled by a random factor in
                [1 − j, 1 + j]; 0 keeps the schedule exact.
            signing (Signing): How an endpoint signs its deliveries.
            success_body (None | str):
            success_filter (EndpointViewSuccessFilterType0 | None): The filter a 2xx answer's JSON body must satisfy, as
                written;
                null: none.
            timeout_ms (int | None):
            uid (None | str):
            updated_at (datetime.datetime):
            url (None | str): Where hookd POSTs; null for a pull endpoint.
            url_secret (bool): The whole path of `url` is a credential: callers without the
                `secrets` scope see only its origin.
            secret (None | str | Unset):
    """

    breaker: BreakerFields | None
    circuit: CircuitView
    created_at: datetime.datetime
    delivery: Delivery
    description: str
    disabled: bool
    disabled_reason: None | str
    event_types: list[str] | None
    failing_since: datetime.datetime | None
    filter_: EndpointViewFilterType0 | None
    fresh_share: float | None
    headers: EndpointViewHeaders
    id: UUID
    max_in_flight: int | None
    ordering: Ordering
    ordering_on_failure: OrderingOnFailure
    owner: None | str
    permanent_statuses: list[int]
    rate_limit: None | RateLimit
    schedule: list[str] | ScheduleSpecType0
    schedule_jitter: float
    signing: Signing
    success_body: None | str
    success_filter: EndpointViewSuccessFilterType0 | None
    timeout_ms: int | None
    uid: None | str
    updated_at: datetime.datetime
    url: None | str
    url_secret: bool
    secret: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.breaker_fields import BreakerFields
        from ..models.endpoint_view_filter_type_0 import EndpointViewFilterType0
        from ..models.endpoint_view_success_filter_type_0 import (
            EndpointViewSuccessFilterType0,
        )
        from ..models.rate_limit import RateLimit

        breaker: dict[str, Any] | None
        if isinstance(self.breaker, BreakerFields):
            breaker = self.breaker.to_dict()
        else:
            breaker = self.breaker

        circuit = self.circuit.to_dict()

        created_at = self.created_at.isoformat()

        delivery = self.delivery.value

        description = self.description

        disabled = self.disabled

        disabled_reason: None | str
        disabled_reason = self.disabled_reason

        event_types: list[str] | None
        if isinstance(self.event_types, list):
            event_types = self.event_types

        else:
            event_types = self.event_types

        failing_since: None | str
        if isinstance(self.failing_since, datetime.datetime):
            failing_since = self.failing_since.isoformat()
        else:
            failing_since = self.failing_since

        filter_: dict[str, Any] | None
        if isinstance(self.filter_, EndpointViewFilterType0):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        fresh_share: float | None
        fresh_share = self.fresh_share

        headers = self.headers.to_dict()

        id = str(self.id)

        max_in_flight: int | None
        max_in_flight = self.max_in_flight

        ordering = self.ordering.value

        ordering_on_failure = self.ordering_on_failure.value

        owner: None | str
        owner = self.owner

        permanent_statuses = self.permanent_statuses

        rate_limit: dict[str, Any] | None
        if isinstance(self.rate_limit, RateLimit):
            rate_limit = self.rate_limit.to_dict()
        else:
            rate_limit = self.rate_limit

        schedule: list[str] | str
        if isinstance(self.schedule, ScheduleSpecType0):
            schedule = self.schedule.value
        else:
            schedule = self.schedule

        schedule_jitter = self.schedule_jitter

        signing = self.signing.value

        success_body: None | str
        success_body = self.success_body

        success_filter: dict[str, Any] | None
        if isinstance(self.success_filter, EndpointViewSuccessFilterType0):
            success_filter = self.success_filter.to_dict()
        else:
            success_filter = self.success_filter

        timeout_ms: int | None
        timeout_ms = self.timeout_ms

        uid: None | str
        uid = self.uid

        updated_at = self.updated_at.isoformat()

        url: None | str
        url = self.url

        url_secret = self.url_secret

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "breaker": breaker,
                "circuit": circuit,
                "created_at": created_at,
                "delivery": delivery,
                "description": description,
                "disabled": disabled,
                "disabled_reason": disabled_reason,
                "event_types": event_types,
                "failing_since": failing_since,
                "filter": filter_,
                "fresh_share": fresh_share,
                "headers": headers,
                "id": id,
                "max_in_flight": max_in_flight,
                "ordering": ordering,
                "ordering_on_failure": ordering_on_failure,
                "owner": owner,
                "permanent_statuses": permanent_statuses,
                "rate_limit": rate_limit,
                "schedule": schedule,
                "schedule_jitter": schedule_jitter,
                "signing": signing,
                "success_body": success_body,
                "success_filter": success_filter,
                "timeout_ms": timeout_ms,
                "uid": uid,
                "updated_at": updated_at,
                "url": url,
                "url_secret": url_secret,
            }
        )
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.breaker_fields import BreakerFields
        from ..models.circuit_view import CircuitView
        from ..models.endpoint_view_filter_type_0 import EndpointViewFilterType0
        from ..models.endpoint_view_headers import EndpointViewHeaders
        from ..models.endpoint_view_success_filter_type_0 import (
            EndpointViewSuccessFilterType0,
        )
        from ..models.rate_limit import RateLimit

        d = dict(src_dict)

        def _parse_breaker(data: object) -> BreakerFields | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                breaker_type_0 = BreakerFields.from_dict(data)

                return breaker_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BreakerFields | None, data)

        breaker = _parse_breaker(d.pop("breaker"))

        circuit = CircuitView.from_dict(d.pop("circuit"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        delivery = Delivery(d.pop("delivery"))

        description = d.pop("description")

        disabled = d.pop("disabled")

        def _parse_disabled_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        disabled_reason = _parse_disabled_reason(d.pop("disabled_reason"))

        def _parse_event_types(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                event_types_type_0 = cast(list[str], data)

                return event_types_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        event_types = _parse_event_types(d.pop("event_types"))

        def _parse_failing_since(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                failing_since_type_0 = datetime.datetime.fromisoformat(data)

                return failing_since_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        failing_since = _parse_failing_since(d.pop("failing_since"))

        def _parse_filter_(data: object) -> EndpointViewFilterType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_0 = EndpointViewFilterType0.from_dict(data)

                return filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EndpointViewFilterType0 | None, data)

        filter_ = _parse_filter_(d.pop("filter"))

        def _parse_fresh_share(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        fresh_share = _parse_fresh_share(d.pop("fresh_share"))

        headers = EndpointViewHeaders.from_dict(d.pop("headers"))

        id = UUID(d.pop("id"))

        def _parse_max_in_flight(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        max_in_flight = _parse_max_in_flight(d.pop("max_in_flight"))

        ordering = Ordering(d.pop("ordering"))

        ordering_on_failure = OrderingOnFailure(d.pop("ordering_on_failure"))

        def _parse_owner(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        owner = _parse_owner(d.pop("owner"))

        permanent_statuses = cast(list[int], d.pop("permanent_statuses"))

        def _parse_rate_limit(data: object) -> None | RateLimit:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                rate_limit_type_0 = RateLimit.from_dict(data)

                return rate_limit_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RateLimit, data)

        rate_limit = _parse_rate_limit(d.pop("rate_limit"))

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

        def _parse_success_body(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        success_body = _parse_success_body(d.pop("success_body"))

        def _parse_success_filter(
            data: object,
        ) -> EndpointViewSuccessFilterType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                success_filter_type_0 = EndpointViewSuccessFilterType0.from_dict(data)

                return success_filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EndpointViewSuccessFilterType0 | None, data)

        success_filter = _parse_success_filter(d.pop("success_filter"))

        def _parse_timeout_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        timeout_ms = _parse_timeout_ms(d.pop("timeout_ms"))

        def _parse_uid(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        uid = _parse_uid(d.pop("uid"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_url(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        url = _parse_url(d.pop("url"))

        url_secret = d.pop("url_secret")

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        endpoint_view = cls(
            breaker=breaker,
            circuit=circuit,
            created_at=created_at,
            delivery=delivery,
            description=description,
            disabled=disabled,
            disabled_reason=disabled_reason,
            event_types=event_types,
            failing_since=failing_since,
            filter_=filter_,
            fresh_share=fresh_share,
            headers=headers,
            id=id,
            max_in_flight=max_in_flight,
            ordering=ordering,
            ordering_on_failure=ordering_on_failure,
            owner=owner,
            permanent_statuses=permanent_statuses,
            rate_limit=rate_limit,
            schedule=schedule,
            schedule_jitter=schedule_jitter,
            signing=signing,
            success_body=success_body,
            success_filter=success_filter,
            timeout_ms=timeout_ms,
            uid=uid,
            updated_at=updated_at,
            url=url,
            url_secret=url_secret,
            secret=secret,
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
