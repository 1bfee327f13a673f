from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SendTest")


@_attrs_define
class SendTest:
    """
    Attributes:
        event_type (None | str | Unset): The test's event type: one the endpoint takes. Absent: `hookd.test`
            for an endpoint that takes every type, and none (which every
            endpoint takes) for one that takes only some.
    """

    event_type: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        event_type: None | str | Unset
        if isinstance(self.event_type, Unset):
            event_type = UNSET
        else:
            event_type = self.event_type

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if event_type is not UNSET:
            field_dict["event_type"] = event_type

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_event_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event_type = _parse_event_type(d.pop("event_type", UNSET))

        send_test = cls(
            event_type=event_type,
        )

        return send_test
