from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="CircuitView")


@_attrs_define
class CircuitView:
    """An endpoint's circuit breaker state.

    Attributes:
        held (int): Pending notifications due by now that wait for the circuit to
            close; 0 when closed.
        state (str): `closed` (delivering), `open` (nothing sent; due notifications
            held) or `probing` (one notification sent to see if it is back). Example: closed.
        next_probe_at (datetime.datetime | None | Unset): When the next probe goes.
        opened_at (datetime.datetime | None | Unset): When the circuit opened (kept through failed probes).
    """

    held: int
    state: str
    next_probe_at: datetime.datetime | None | Unset = UNSET
    opened_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        held = self.held

        state = self.state

        next_probe_at: None | str | Unset
        if isinstance(self.next_probe_at, Unset):
            next_probe_at = UNSET
        elif isinstance(self.next_probe_at, datetime.datetime):
            next_probe_at = self.next_probe_at.isoformat()
        else:
            next_probe_at = self.next_probe_at

        opened_at: None | str | Unset
        if isinstance(self.opened_at, Unset):
            opened_at = UNSET
        elif isinstance(self.opened_at, datetime.datetime):
            opened_at = self.opened_at.isoformat()
        else:
            opened_at = self.opened_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "held": held,
                "state": state,
            }
        )
        if next_probe_at is not UNSET:
            field_dict["next_probe_at"] = next_probe_at
        if opened_at is not UNSET:
            field_dict["opened_at"] = opened_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        held = d.pop("held")

        state = d.pop("state")

        def _parse_next_probe_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_probe_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_probe_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_probe_at = _parse_next_probe_at(d.pop("next_probe_at", UNSET))

        def _parse_opened_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                opened_at_type_0 = datetime.datetime.fromisoformat(data)

                return opened_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        opened_at = _parse_opened_at(d.pop("opened_at", UNSET))

        circuit_view = cls(
            held=held,
            state=state,
            next_probe_at=next_probe_at,
            opened_at=opened_at,
        )

        circuit_view.additional_properties = d
        return circuit_view

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
