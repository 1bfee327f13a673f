from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.waiting_reason import WaitingReason
from ..types import UNSET, Unset

T = TypeVar("T", bound="Waiting")


@_attrs_define
class Waiting:
    """Why a pending notification waits, and until when if that is known.

    Attributes:
        reason (WaitingReason): What a pending notification waits for.
        behind (None | Unset | UUID): The notification it waits behind (`ordering`).
        until (datetime.datetime | None | Unset): When the wait ends, if known.
    """

    reason: WaitingReason
    behind: None | Unset | UUID = UNSET
    until: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        reason = self.reason.value

        behind: None | str | Unset
        if isinstance(self.behind, Unset):
            behind = UNSET
        elif isinstance(self.behind, UUID):
            behind = str(self.behind)
        else:
            behind = self.behind

        until: None | str | Unset
        if isinstance(self.until, Unset):
            until = UNSET
        elif isinstance(self.until, datetime.datetime):
            until = self.until.isoformat()
        else:
            until = self.until

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "reason": reason,
            }
        )
        if behind is not UNSET:
            field_dict["behind"] = behind
        if until is not UNSET:
            field_dict["until"] = until

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        reason = WaitingReason(d.pop("reason"))

        def _parse_behind(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                behind_type_0 = UUID(data)

                return behind_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        behind = _parse_behind(d.pop("behind", UNSET))

        def _parse_until(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                until_type_0 = datetime.datetime.fromisoformat(data)

                return until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        until = _parse_until(d.pop("until", UNSET))

        waiting = cls(
            reason=reason,
            behind=behind,
            until=until,
        )

        waiting.additional_properties = d
        return waiting

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
