from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="NackRequest")


@_attrs_define
class NackRequest:
    """
    Attributes:
        receipt (str):
        error (None | str | Unset): Why, recorded as the attempt's error (at most 1,000 bytes kept).
        permanent (bool | Unset): End it `failed` now, whatever the schedule says.
        retry_after (None | str | Unset): Not before this long from now (`"5m"`): only pushes the schedule's
            next attempt later, never earlier; at most 24h. Example: 5m.
    """

    receipt: str
    error: None | str | Unset = UNSET
    permanent: bool | Unset = UNSET
    retry_after: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        receipt = self.receipt

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        permanent = self.permanent

        retry_after: None | str | Unset
        if isinstance(self.retry_after, Unset):
            retry_after = UNSET
        else:
            retry_after = self.retry_after

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "receipt": receipt,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if permanent is not UNSET:
            field_dict["permanent"] = permanent
        if retry_after is not UNSET:
            field_dict["retry_after"] = retry_after

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        receipt = d.pop("receipt")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        permanent = d.pop("permanent", UNSET)

        def _parse_retry_after(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        retry_after = _parse_retry_after(d.pop("retry_after", UNSET))

        nack_request = cls(
            receipt=receipt,
            error=error,
            permanent=permanent,
            retry_after=retry_after,
        )

        return nack_request
