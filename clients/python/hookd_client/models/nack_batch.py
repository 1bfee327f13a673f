from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="NackBatch")


@_attrs_define
class NackBatch:
    """
    Attributes:
        receipts (list[str]): 1 to 1000 receipts of this endpoint's leases.
        error (None | str | Unset):
        permanent (bool | Unset):
        retry_after (None | str | Unset):  Example: 5m.
    """

    receipts: list[str]
    error: None | str | Unset = UNSET
    permanent: bool | Unset = UNSET
    retry_after: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        receipts = self.receipts

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
                "receipts": receipts,
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
        receipts = cast(list[str], d.pop("receipts"))

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

        nack_batch = cls(
            receipts=receipts,
            error=error,
            permanent=permanent,
            retry_after=retry_after,
        )

        return nack_batch
