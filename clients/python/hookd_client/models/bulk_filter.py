from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="BulkFilter")


@_attrs_define
class BulkFilter:
    """What a bulk retry restarts, beside its endpoint and `failed`.

    Attributes:
        created_after (datetime.datetime | None | Unset): Created at or after.
        created_before (datetime.datetime | None | Unset): Created before.
        event_type (None | str | Unset): The notification's type, or its event's.
        key_prefix (None | str | Unset): A prefix of the notification's key, or of its event's.
    """

    created_after: datetime.datetime | None | Unset = UNSET
    created_before: datetime.datetime | None | Unset = UNSET
    event_type: None | str | Unset = UNSET
    key_prefix: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_after: None | str | Unset
        if isinstance(self.created_after, Unset):
            created_after = UNSET
        elif isinstance(self.created_after, datetime.datetime):
            created_after = self.created_after.isoformat()
        else:
            created_after = self.created_after

        created_before: None | str | Unset
        if isinstance(self.created_before, Unset):
            created_before = UNSET
        elif isinstance(self.created_before, datetime.datetime):
            created_before = self.created_before.isoformat()
        else:
            created_before = self.created_before

        event_type: None | str | Unset
        if isinstance(self.event_type, Unset):
            event_type = UNSET
        else:
            event_type = self.event_type

        key_prefix: None | str | Unset
        if isinstance(self.key_prefix, Unset):
            key_prefix = UNSET
        else:
            key_prefix = self.key_prefix

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if created_after is not UNSET:
            field_dict["created_after"] = created_after
        if created_before is not UNSET:
            field_dict["created_before"] = created_before
        if event_type is not UNSET:
            field_dict["event_type"] = event_type
        if key_prefix is not UNSET:
            field_dict["key_prefix"] = key_prefix

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_created_after(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_after_type_0 = datetime.datetime.fromisoformat(data)

                return created_after_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        created_after = _parse_created_after(d.pop("created_after", UNSET))

        def _parse_created_before(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_before_type_0 = datetime.datetime.fromisoformat(data)

                return created_before_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        created_before = _parse_created_before(d.pop("created_before", UNSET))

        def _parse_event_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event_type = _parse_event_type(d.pop("event_type", UNSET))

        def _parse_key_prefix(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key_prefix = _parse_key_prefix(d.pop("key_prefix", UNSET))

        bulk_filter = cls(
            created_after=created_after,
            created_before=created_before,
            event_type=event_type,
            key_prefix=key_prefix,
        )

        bulk_filter.additional_properties = d
        return bulk_filter

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
