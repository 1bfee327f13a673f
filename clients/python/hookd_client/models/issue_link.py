from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.portal_permission import PortalPermission
from ..types import UNSET, Unset

T = TypeVar("T", bound="IssueLink")


@_attrs_define
class IssueLink:
    """
    Attributes:
        expires_in_seconds (int | None | Unset): How long the link works: 1 to 604800 seconds (7 days); default
            86400 (a day).
        permissions (list[PortalPermission] | None | Unset): What the holder may do: `read` (always named), `retry` (its
            notifications) and `manage` (change its endpoints' URL and event
            types, read and rotate their signing secret, send a test), each at
            most once. Default `["read", "retry"]`. Example: ['read', 'retry', 'manage'].
    """

    expires_in_seconds: int | None | Unset = UNSET
    permissions: list[PortalPermission] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        expires_in_seconds: int | None | Unset
        if isinstance(self.expires_in_seconds, Unset):
            expires_in_seconds = UNSET
        else:
            expires_in_seconds = self.expires_in_seconds

        permissions: list[str] | None | Unset
        if isinstance(self.permissions, Unset):
            permissions = UNSET
        elif isinstance(self.permissions, list):
            permissions = []
            for permissions_type_0_item_data in self.permissions:
                permissions_type_0_item = permissions_type_0_item_data.value
                permissions.append(permissions_type_0_item)

        else:
            permissions = self.permissions

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if expires_in_seconds is not UNSET:
            field_dict["expires_in_seconds"] = expires_in_seconds
        if permissions is not UNSET:
            field_dict["permissions"] = permissions

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_expires_in_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        expires_in_seconds = _parse_expires_in_seconds(
            d.pop("expires_in_seconds", UNSET)
        )

        def _parse_permissions(data: object) -> list[PortalPermission] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                permissions_type_0 = []
                _permissions_type_0 = data
                for permissions_type_0_item_data in _permissions_type_0:
                    permissions_type_0_item = PortalPermission(
                        permissions_type_0_item_data
                    )

                    permissions_type_0.append(permissions_type_0_item)

                return permissions_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[PortalPermission] | None | Unset, data)

        permissions = _parse_permissions(d.pop("permissions", UNSET))

        issue_link = cls(
            expires_in_seconds=expires_in_seconds,
            permissions=permissions,
        )

        return issue_link
