from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="BacklogView")


@_attrs_define
class BacklogView:
    """An endpoint's pending notifications. Each count stops at 100,000:
    `capped` says one reached it (then read it as "at least").

        Attributes:
            capped (bool): Some count reached 100,000 and stopped there.
            due (int): Pending and due by now, not under a live consumer's lease: waiting
                for a delivery slot, the rate limit, a closed circuit or a consumer
                (a lease that ran out counts here).
            leased (int): Pending under a pull consumer's lease that has not run out.
            pending (int): Not ended yet.
    """

    capped: bool
    due: int
    leased: int
    pending: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        capped = self.capped

        due = self.due

        leased = self.leased

        pending = self.pending

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "capped": capped,
                "due": due,
                "leased": leased,
                "pending": pending,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        capped = d.pop("capped")

        due = d.pop("due")

        leased = d.pop("leased")

        pending = d.pop("pending")

        backlog_view = cls(
            capped=capped,
            due=due,
            leased=leased,
            pending=pending,
        )

        backlog_view.additional_properties = d
        return backlog_view

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
