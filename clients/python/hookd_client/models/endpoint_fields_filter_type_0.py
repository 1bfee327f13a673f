from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="EndpointFieldsFilterType0")


@_attrs_define
class EndpointFieldsFilterType0:
    """Only events whose JSON payload satisfies this predicate reach the
    endpoint: `{"amount": {"$gte": 100}, "currency": "CNY"}`. Dotted
    paths (`customer.tier`), a scalar for equality or operators `$eq
    $ne $in $nin $gt $gte $lt $lte $exists`, and `$and` / `$or` lists;
    at most 4096 bytes, 64 conditions, `$and`/`$or` 4 deep. An event
    with a text `body` matches no filter. Absent or null: every event
    of the subscribed types. A key one object of the filter names twice
    is refused (`invalid_filter`).

    """

    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        endpoint_fields_filter_type_0 = cls()

        endpoint_fields_filter_type_0.additional_properties = d
        return endpoint_fields_filter_type_0

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
