from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.attempt_error import AttemptError
    from ..models.header_line import HeaderLine


T = TypeVar("T", bound="AttemptView")


@_attrs_define
class AttemptView:
    """
    Attributes:
        duration_ms (int):
        number (int): 1-based, over every series.
        outcome (str): `succeeded`, `retry` (another attempt follows) or `failed` (final).
        retried (bool): It opens an attempt series a retry started (a caller's, a bulk
            retry's or a recover's).
        started_at (datetime.datetime):
        error (AttemptError | None | Unset):
        request_headers (list[HeaderLine] | None | Unset): The request's headers as sent: hookd's own (`webhook-id`,
            `webhook-timestamp`, `webhook-signature`, ...), then each custom
            header by name, its value `null` (never kept: credentials, often).
            `null` when no request was made (a pull consumer's attempt, one
            refused before sending), for a delivery at its first attempt (kept
            in its notification's row, without headers), or for an attempt
            recorded before hookd kept them.
        response_body (None | str | Unset): The first 4 KiB of the response body.
        response_headers (list[HeaderLine] | None | Unset): The response's headers, whole ones within their first 4 KiB;
            `null`
            as `request_headers` is.
        status_code (int | None | Unset):
        url (None | str | Unset): Where the attempt went, when the notification names its own URL.
    """

    duration_ms: int
    number: int
    outcome: str
    retried: bool
    started_at: datetime.datetime
    error: AttemptError | None | Unset = UNSET
    request_headers: list[HeaderLine] | None | Unset = UNSET
    response_body: None | str | Unset = UNSET
    response_headers: list[HeaderLine] | None | Unset = UNSET
    status_code: int | None | Unset = UNSET
    url: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.attempt_error import AttemptError

        duration_ms = self.duration_ms

        number = self.number

        outcome = self.outcome

        retried = self.retried

        started_at = self.started_at.isoformat()

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, AttemptError):
            error = self.error.to_dict()
        else:
            error = self.error

        request_headers: list[dict[str, Any]] | None | Unset
        if isinstance(self.request_headers, Unset):
            request_headers = UNSET
        elif isinstance(self.request_headers, list):
            request_headers = []
            for request_headers_type_0_item_data in self.request_headers:
                request_headers_type_0_item = request_headers_type_0_item_data.to_dict()
                request_headers.append(request_headers_type_0_item)

        else:
            request_headers = self.request_headers

        response_body: None | str | Unset
        if isinstance(self.response_body, Unset):
            response_body = UNSET
        else:
            response_body = self.response_body

        response_headers: list[dict[str, Any]] | None | Unset
        if isinstance(self.response_headers, Unset):
            response_headers = UNSET
        elif isinstance(self.response_headers, list):
            response_headers = []
            for response_headers_type_0_item_data in self.response_headers:
                response_headers_type_0_item = (
                    response_headers_type_0_item_data.to_dict()
                )
                response_headers.append(response_headers_type_0_item)

        else:
            response_headers = self.response_headers

        status_code: int | None | Unset
        if isinstance(self.status_code, Unset):
            status_code = UNSET
        else:
            status_code = self.status_code

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "duration_ms": duration_ms,
                "number": number,
                "outcome": outcome,
                "retried": retried,
                "started_at": started_at,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if request_headers is not UNSET:
            field_dict["request_headers"] = request_headers
        if response_body is not UNSET:
            field_dict["response_body"] = response_body
        if response_headers is not UNSET:
            field_dict["response_headers"] = response_headers
        if status_code is not UNSET:
            field_dict["status_code"] = status_code
        if url is not UNSET:
            field_dict["url"] = url

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.attempt_error import AttemptError
        from ..models.header_line import HeaderLine

        d = dict(src_dict)
        duration_ms = d.pop("duration_ms")

        number = d.pop("number")

        outcome = d.pop("outcome")

        retried = d.pop("retried")

        started_at = datetime.datetime.fromisoformat(d.pop("started_at"))

        def _parse_error(data: object) -> AttemptError | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = AttemptError.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AttemptError | None | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_request_headers(data: object) -> list[HeaderLine] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                request_headers_type_0 = []
                _request_headers_type_0 = data
                for request_headers_type_0_item_data in _request_headers_type_0:
                    request_headers_type_0_item = HeaderLine.from_dict(
                        request_headers_type_0_item_data
                    )

                    request_headers_type_0.append(request_headers_type_0_item)

                return request_headers_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[HeaderLine] | None | Unset, data)

        request_headers = _parse_request_headers(d.pop("request_headers", UNSET))

        def _parse_response_body(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        response_body = _parse_response_body(d.pop("response_body", UNSET))

        def _parse_response_headers(data: object) -> list[HeaderLine] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                response_headers_type_0 = []
                _response_headers_type_0 = data
                for response_headers_type_0_item_data in _response_headers_type_0:
                    response_headers_type_0_item = HeaderLine.from_dict(
                        response_headers_type_0_item_data
                    )

                    response_headers_type_0.append(response_headers_type_0_item)

                return response_headers_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[HeaderLine] | None | Unset, data)

        response_headers = _parse_response_headers(d.pop("response_headers", UNSET))

        def _parse_status_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        status_code = _parse_status_code(d.pop("status_code", UNSET))

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

        attempt_view = cls(
            duration_ms=duration_ms,
            number=number,
            outcome=outcome,
            retried=retried,
            started_at=started_at,
            error=error,
            request_headers=request_headers,
            response_body=response_body,
            response_headers=response_headers,
            status_code=status_code,
            url=url,
        )

        attempt_view.additional_properties = d
        return attempt_view

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
