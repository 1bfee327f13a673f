from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="FailingEndpointView")


@_attrs_define
class FailingEndpointView:
    """
    Attributes:
        attempts (int):
        endpoint_id (UUID):
        failed_attempts (int):
        url (None | str | Unset): As in the endpoint's JSON (query values masked without `secrets`);
            null for a pull endpoint.
    """

    attempts: int
    endpoint_id: UUID
    failed_attempts: int
    url: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        endpoint_id = str(self.endpoint_id)

        failed_attempts = self.failed_attempts

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "endpoint_id": endpoint_id,
                "failed_attempts": failed_attempts,
            }
        )
        if url is not UNSET:
            field_dict["url"] = url

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        attempts = d.pop("attempts")

        endpoint_id = UUID(d.pop("endpoint_id"))

        failed_attempts = d.pop("failed_attempts")

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

        failing_endpoint_view = cls(
            attempts=attempts,
            endpoint_id=endpoint_id,
            failed_attempts=failed_attempts,
            url=url,
        )

        failing_endpoint_view.additional_properties = d
        return failing_endpoint_view

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
