from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="EndpointFieldsSuccessFilterType0")


@_attrs_define
class EndpointFieldsSuccessFilterType0:
    """For receivers that acknowledge in JSON: when set, a 2xx only
    succeeds if its body is JSON that satisfies this filter, in the
    language of `filter` (`{"code": "SUCCESS"}`; `{"ret_code": "0000"}`).
    An answer that is not JSON, or longer than hookd reads of it,
    fails. Set this or `success_body`, not both. Absent or null: none.

    """

    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        endpoint_fields_success_filter_type_0 = cls()

        endpoint_fields_success_filter_type_0.additional_properties = d
        return endpoint_fields_success_filter_type_0

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
