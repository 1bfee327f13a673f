from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="StatsTotals")


@_attrs_define
class StatsTotals:
    """The window added up.

    Attributes:
        attempts (int):
        delivered (int):
        failed (int):
        failed_attempts (int):
        success_ratio (float | None | Unset):
    """

    attempts: int
    delivered: int
    failed: int
    failed_attempts: int
    success_ratio: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        delivered = self.delivered

        failed = self.failed

        failed_attempts = self.failed_attempts

        success_ratio: float | None | Unset
        if isinstance(self.success_ratio, Unset):
            success_ratio = UNSET
        else:
            success_ratio = self.success_ratio

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "delivered": delivered,
                "failed": failed,
                "failed_attempts": failed_attempts,
            }
        )
        if success_ratio is not UNSET:
            field_dict["success_ratio"] = success_ratio

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        attempts = d.pop("attempts")

        delivered = d.pop("delivered")

        failed = d.pop("failed")

        failed_attempts = d.pop("failed_attempts")

        def _parse_success_ratio(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        success_ratio = _parse_success_ratio(d.pop("success_ratio", UNSET))

        stats_totals = cls(
            attempts=attempts,
            delivered=delivered,
            failed=failed,
            failed_attempts=failed_attempts,
            success_ratio=success_ratio,
        )

        stats_totals.additional_properties = d
        return stats_totals

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
