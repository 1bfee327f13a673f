from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.delivery import Delivery
from ..models.ordering import Ordering
from ..models.ordering_on_failure import OrderingOnFailure
from ..models.schedule_spec_type_0 import ScheduleSpecType0
from ..models.signing import Signing
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.breaker_fields import BreakerFields
    from ..models.endpoint_fields_filter_type_0 import EndpointFieldsFilterType0
    from ..models.endpoint_fields_headers_type_0 import EndpointFieldsHeadersType0
    from ..models.endpoint_fields_success_filter_type_0 import (
        EndpointFieldsSuccessFilterType0,
    )
    from ..models.rate_limit import RateLimit


T = TypeVar("T", bound="EndpointFields")


@_attrs_define
class EndpointFields:
    """Fields of an endpoint as a producer writes them. In a PATCH, an absent
    field is left alone and `null` resets it to its default.

        Attributes:
            breaker (BreakerFields | None | Unset):
            delivery (Delivery | None | Unset):
            description (None | str | Unset):
            disabled (bool | None | Unset):
            event_types (list[str] | None | Unset): Patterns of the event types this endpoint takes: exact
                (`order.paid`), a prefix (`order.*`: one or more segments under
                `order`) or `*`; absent or null: all.
            filter_ (EndpointFieldsFilterType0 | None | Unset): Only events whose JSON payload satisfies this predicate
                reach the
                endpoint: `{"amount": {"$gte": 100}, "currency": "CNY"}`. Dotted
                paths (`customer.tier`), a scalar for equality or operators `$eq
                $ne $in $nin $gt $gte $lt $lte $exists`, and `$and` / `$or` lists;
                at most 4096 bytes, 64 conditions, `$and`/`$or` 4 deep. An event
                with a text `body` matches no filter. Absent or null: every event
                of the subscribed types. A key one object of the filter names twice
                is refused (`invalid_filter`).
            fresh_share (float | None | Unset): The part of the rate limit kept for fresh notifications (first
                attempts) while retries are due beside them; either lane lends
                what it leaves idle to the other. 0 to 1; 0: one budget in due
                order. `null`: `dispatcher.fresh_share` (0.5 by default).
            headers (EndpointFieldsHeadersType0 | None | Unset): Extra headers sent with every delivery.
            max_in_flight (int | None | Unset): Cap on concurrent deliveries to this endpoint.
            ordering (None | Ordering | Unset):
            ordering_on_failure (None | OrderingOnFailure | Unset):
            owner (None | str | Unset): The tenant the endpoint belongs to (`merchant-42`): events fan out
                only to endpoints of their own owner.
            permanent_statuses (list[int] | None | Unset): Statuses (400 to 599) that end the schedule at once. Default
                `[410]`.
            rate_limit (None | RateLimit | Unset):
            schedule (list[str] | None | ScheduleSpecType0 | Unset):
            schedule_jitter (float | None | Unset): Scales each wait of the schedule (not the first attempt's, nor a
                receiver's `Retry-After`) by a random factor in [1 − j, 1 + j], so
                that notifications that failed together do not retry together.
                0 to 0.5; default (and `null`) 0: the schedule exact.
            secret (None | str | Unset): `whsec_<base64 of 24 to 64 bytes>` (hmac), `whsk_<base64 of an
                Ed25519 seed or secret key>` (ed25519), or an RSA private key of
                2048 to 4096 bits in PEM (rsa2, required: hookd makes none);
                generated when absent, of the kind `signing` asks. Set on create
                only: change it with `POST .../secret/rotate`.
            signing (None | Signing | Unset):
            success_body (None | str | Unset): When set, a 2xx only succeeds if the trimmed body equals it (`success`).
            success_filter (EndpointFieldsSuccessFilterType0 | None | Unset): For receivers that acknowledge in JSON: when
                set, a 2xx only
                succeeds if its body is JSON that satisfies this filter, in the
                language of `filter` (`{"code": "SUCCESS"}`; `{"ret_code": "0000"}`).
                An answer that is not JSON, or longer than hookd reads of it,
                fails. Set this or `success_body`, not both. Absent or null: none.
            timeout_ms (int | None | Unset): Per-attempt time limit, from 1 ms to the longest the delivery lease
                allows (55000 with the default lease); default `sender.timeout_ms`.
            uid (None | str | Unset): The producer's own name for the endpoint, usable wherever an id is.
            url (None | str | Unset): `http` or `https` URL that receives the POSTs. Required for a push
                endpoint; a pull endpoint has none.
            url_secret (bool | None | Unset): The whole path of `url` is a credential (e.g. a chat webhook's
                `/services/T…/B…/…`): callers without the `secrets` scope see only
                its origin, and the URLs of its notifications likewise. Default
                (and `null`) false: path segments that look like credentials are
                masked one by one.
    """

    breaker: BreakerFields | None | Unset = UNSET
    delivery: Delivery | None | Unset = UNSET
    description: None | str | Unset = UNSET
    disabled: bool | None | Unset = UNSET
    event_types: list[str] | None | Unset = UNSET
    filter_: EndpointFieldsFilterType0 | None | Unset = UNSET
    fresh_share: float | None | Unset = UNSET
    headers: EndpointFieldsHeadersType0 | None | Unset = UNSET
    max_in_flight: int | None | Unset = UNSET
    ordering: None | Ordering | Unset = UNSET
    ordering_on_failure: None | OrderingOnFailure | Unset = UNSET
    owner: None | str | Unset = UNSET
    permanent_statuses: list[int] | None | Unset = UNSET
    rate_limit: None | RateLimit | Unset = UNSET
    schedule: list[str] | None | ScheduleSpecType0 | Unset = UNSET
    schedule_jitter: float | None | Unset = UNSET
    secret: None | str | Unset = UNSET
    signing: None | Signing | Unset = UNSET
    success_body: None | str | Unset = UNSET
    success_filter: EndpointFieldsSuccessFilterType0 | None | Unset = UNSET
    timeout_ms: int | None | Unset = UNSET
    uid: None | str | Unset = UNSET
    url: None | str | Unset = UNSET
    url_secret: bool | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.breaker_fields import BreakerFields
        from ..models.endpoint_fields_filter_type_0 import EndpointFieldsFilterType0
        from ..models.endpoint_fields_headers_type_0 import EndpointFieldsHeadersType0
        from ..models.endpoint_fields_success_filter_type_0 import (
            EndpointFieldsSuccessFilterType0,
        )
        from ..models.rate_limit import RateLimit

        breaker: dict[str, Any] | None | Unset
        if isinstance(self.breaker, Unset):
            breaker = UNSET
        elif isinstance(self.breaker, BreakerFields):
            breaker = self.breaker.to_dict()
        else:
            breaker = self.breaker

        delivery: None | str | Unset
        if isinstance(self.delivery, Unset):
            delivery = UNSET
        elif isinstance(self.delivery, Delivery):
            delivery = self.delivery.value
        else:
            delivery = self.delivery

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        disabled: bool | None | Unset
        if isinstance(self.disabled, Unset):
            disabled = UNSET
        else:
            disabled = self.disabled

        event_types: list[str] | None | Unset
        if isinstance(self.event_types, Unset):
            event_types = UNSET
        elif isinstance(self.event_types, list):
            event_types = self.event_types

        else:
            event_types = self.event_types

        filter_: dict[str, Any] | None | Unset
        if isinstance(self.filter_, Unset):
            filter_ = UNSET
        elif isinstance(self.filter_, EndpointFieldsFilterType0):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        fresh_share: float | None | Unset
        if isinstance(self.fresh_share, Unset):
            fresh_share = UNSET
        else:
            fresh_share = self.fresh_share

        headers: dict[str, Any] | None | Unset
        if isinstance(self.headers, Unset):
            headers = UNSET
        elif isinstance(self.headers, EndpointFieldsHeadersType0):
            headers = self.headers.to_dict()
        else:
            headers = self.headers

        max_in_flight: int | None | Unset
        if isinstance(self.max_in_flight, Unset):
            max_in_flight = UNSET
        else:
            max_in_flight = self.max_in_flight

        ordering: None | str | Unset
        if isinstance(self.ordering, Unset):
            ordering = UNSET
        elif isinstance(self.ordering, Ordering):
            ordering = self.ordering.value
        else:
            ordering = self.ordering

        ordering_on_failure: None | str | Unset
        if isinstance(self.ordering_on_failure, Unset):
            ordering_on_failure = UNSET
        elif isinstance(self.ordering_on_failure, OrderingOnFailure):
            ordering_on_failure = self.ordering_on_failure.value
        else:
            ordering_on_failure = self.ordering_on_failure

        owner: None | str | Unset
        if isinstance(self.owner, Unset):
            owner = UNSET
        else:
            owner = self.owner

        permanent_statuses: list[int] | None | Unset
        if isinstance(self.permanent_statuses, Unset):
            permanent_statuses = UNSET
        elif isinstance(self.permanent_statuses, list):
            permanent_statuses = self.permanent_statuses

        else:
            permanent_statuses = self.permanent_statuses

        rate_limit: dict[str, Any] | None | Unset
        if isinstance(self.rate_limit, Unset):
            rate_limit = UNSET
        elif isinstance(self.rate_limit, RateLimit):
            rate_limit = self.rate_limit.to_dict()
        else:
            rate_limit = self.rate_limit

        schedule: list[str] | None | str | Unset
        if isinstance(self.schedule, Unset):
            schedule = UNSET
        elif isinstance(self.schedule, ScheduleSpecType0):
            schedule = self.schedule.value
        elif isinstance(self.schedule, list):
            schedule = self.schedule

        else:
            schedule = self.schedule

        schedule_jitter: float | None | Unset
        if isinstance(self.schedule_jitter, Unset):
            schedule_jitter = UNSET
        else:
            schedule_jitter = self.schedule_jitter

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        signing: None | str | Unset
        if isinstance(self.signing, Unset):
            signing = UNSET
        elif isinstance(self.signing, Signing):
            signing = self.signing.value
        else:
            signing = self.signing

        success_body: None | str | Unset
        if isinstance(self.success_body, Unset):
            success_body = UNSET
        else:
            success_body = self.success_body

        success_filter: dict[str, Any] | None | Unset
        if isinstance(self.success_filter, Unset):
            success_filter = UNSET
        elif isinstance(self.success_filter, EndpointFieldsSuccessFilterType0):
            success_filter = self.success_filter.to_dict()
        else:
            success_filter = self.success_filter

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

        url_secret: bool | None | Unset
        if isinstance(self.url_secret, Unset):
            url_secret = UNSET
        else:
            url_secret = self.url_secret

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if breaker is not UNSET:
            field_dict["breaker"] = breaker
        if delivery is not UNSET:
            field_dict["delivery"] = delivery
        if description is not UNSET:
            field_dict["description"] = description
        if disabled is not UNSET:
            field_dict["disabled"] = disabled
        if event_types is not UNSET:
            field_dict["event_types"] = event_types
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if fresh_share is not UNSET:
            field_dict["fresh_share"] = fresh_share
        if headers is not UNSET:
            field_dict["headers"] = headers
        if max_in_flight is not UNSET:
            field_dict["max_in_flight"] = max_in_flight
        if ordering is not UNSET:
            field_dict["ordering"] = ordering
        if ordering_on_failure is not UNSET:
            field_dict["ordering_on_failure"] = ordering_on_failure
        if owner is not UNSET:
            field_dict["owner"] = owner
        if permanent_statuses is not UNSET:
            field_dict["permanent_statuses"] = permanent_statuses
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit
        if schedule is not UNSET:
            field_dict["schedule"] = schedule
        if schedule_jitter is not UNSET:
            field_dict["schedule_jitter"] = schedule_jitter
        if secret is not UNSET:
            field_dict["secret"] = secret
        if signing is not UNSET:
            field_dict["signing"] = signing
        if success_body is not UNSET:
            field_dict["success_body"] = success_body
        if success_filter is not UNSET:
            field_dict["success_filter"] = success_filter
        if timeout_ms is not UNSET:
            field_dict["timeout_ms"] = timeout_ms
        if uid is not UNSET:
            field_dict["uid"] = uid
        if url is not UNSET:
            field_dict["url"] = url
        if url_secret is not UNSET:
            field_dict["url_secret"] = url_secret

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.breaker_fields import BreakerFields
        from ..models.endpoint_fields_filter_type_0 import EndpointFieldsFilterType0
        from ..models.endpoint_fields_headers_type_0 import EndpointFieldsHeadersType0
        from ..models.endpoint_fields_success_filter_type_0 import (
            EndpointFieldsSuccessFilterType0,
        )
        from ..models.rate_limit import RateLimit

        d = dict(src_dict)

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

        def _parse_delivery(data: object) -> Delivery | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                delivery_type_0 = Delivery(data)

                return delivery_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Delivery | None | Unset, data)

        delivery = _parse_delivery(d.pop("delivery", UNSET))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_disabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        disabled = _parse_disabled(d.pop("disabled", UNSET))

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

        def _parse_filter_(data: object) -> EndpointFieldsFilterType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_0 = EndpointFieldsFilterType0.from_dict(data)

                return filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EndpointFieldsFilterType0 | None | Unset, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        def _parse_fresh_share(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        fresh_share = _parse_fresh_share(d.pop("fresh_share", UNSET))

        def _parse_headers(data: object) -> EndpointFieldsHeadersType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                headers_type_0 = EndpointFieldsHeadersType0.from_dict(data)

                return headers_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EndpointFieldsHeadersType0 | None | Unset, data)

        headers = _parse_headers(d.pop("headers", UNSET))

        def _parse_max_in_flight(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_in_flight = _parse_max_in_flight(d.pop("max_in_flight", UNSET))

        def _parse_ordering(data: object) -> None | Ordering | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ordering_type_0 = Ordering(data)

                return ordering_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Ordering | Unset, data)

        ordering = _parse_ordering(d.pop("ordering", UNSET))

        def _parse_ordering_on_failure(
            data: object,
        ) -> None | OrderingOnFailure | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ordering_on_failure_type_0 = OrderingOnFailure(data)

                return ordering_on_failure_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OrderingOnFailure | Unset, data)

        ordering_on_failure = _parse_ordering_on_failure(
            d.pop("ordering_on_failure", UNSET)
        )

        def _parse_owner(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        owner = _parse_owner(d.pop("owner", UNSET))

        def _parse_permanent_statuses(data: object) -> list[int] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                permanent_statuses_type_0 = cast(list[int], data)

                return permanent_statuses_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[int] | None | Unset, data)

        permanent_statuses = _parse_permanent_statuses(
            d.pop("permanent_statuses", UNSET)
        )

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

        def _parse_schedule_jitter(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        schedule_jitter = _parse_schedule_jitter(d.pop("schedule_jitter", UNSET))

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        def _parse_signing(data: object) -> None | Signing | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                signing_type_0 = Signing(data)

                return signing_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Signing | Unset, data)

        signing = _parse_signing(d.pop("signing", UNSET))

        def _parse_success_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        success_body = _parse_success_body(d.pop("success_body", UNSET))

        def _parse_success_filter(
            data: object,
        ) -> EndpointFieldsSuccessFilterType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                success_filter_type_0 = EndpointFieldsSuccessFilterType0.from_dict(data)

                return success_filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EndpointFieldsSuccessFilterType0 | None | Unset, data)

        success_filter = _parse_success_filter(d.pop("success_filter", UNSET))

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

        def _parse_url_secret(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        url_secret = _parse_url_secret(d.pop("url_secret", UNSET))

        endpoint_fields = cls(
            breaker=breaker,
            delivery=delivery,
            description=description,
            disabled=disabled,
            event_types=event_types,
            filter_=filter_,
            fresh_share=fresh_share,
            headers=headers,
            max_in_flight=max_in_flight,
            ordering=ordering,
            ordering_on_failure=ordering_on_failure,
            owner=owner,
            permanent_statuses=permanent_statuses,
            rate_limit=rate_limit,
            schedule=schedule,
            schedule_jitter=schedule_jitter,
            secret=secret,
            signing=signing,
            success_body=success_body,
            success_filter=success_filter,
            timeout_ms=timeout_ms,
            uid=uid,
            url=url,
            url_secret=url_secret,
        )

        return endpoint_fields
