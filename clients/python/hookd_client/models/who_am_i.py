from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.portal_permission import PortalPermission
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.brand import Brand
    from ..models.portal_view_type_0 import PortalViewType0
    from ..models.portal_view_type_1 import PortalViewType1


T = TypeVar("T", bound="WhoAmI")


@_attrs_define
class WhoAmI:
    """Who the caller is, as `GET /v1/whoami` shows it.

    Attributes:
        name (str): The token's name from `api.tokens`; `local` in the open mode;
            `portal:endpoint:<id>` or `portal:owner:<uid>` for a portal link;
            `consumer:<endpoint id>` for a consumer token.
        scopes (list[str]): The token's scopes. Empty for a portal link or a consumer token:
            what those may do is fixed (see `portal`).
        brand (Brand | None | Unset):
        expires_at (datetime.datetime | None | Unset): When a portal link stops working.
        permissions (list[PortalPermission] | None | Unset): For a portal link, what its holder may do: `read`, and any
            of
            `retry` and `manage`.
        portal (None | PortalViewType0 | PortalViewType1 | Unset):
    """

    name: str
    scopes: list[str]
    brand: Brand | None | Unset = UNSET
    expires_at: datetime.datetime | None | Unset = UNSET
    permissions: list[PortalPermission] | None | Unset = UNSET
    portal: None | PortalViewType0 | PortalViewType1 | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.brand import Brand
        from ..models.portal_view_type_0 import PortalViewType0
        from ..models.portal_view_type_1 import PortalViewType1

        name = self.name

        scopes = self.scopes

        brand: dict[str, Any] | None | Unset
        if isinstance(self.brand, Unset):
            brand = UNSET
        elif isinstance(self.brand, Brand):
            brand = self.brand.to_dict()
        else:
            brand = self.brand

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        elif isinstance(self.expires_at, datetime.datetime):
            expires_at = self.expires_at.isoformat()
        else:
            expires_at = self.expires_at

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

        portal: dict[str, Any] | None | Unset
        if isinstance(self.portal, Unset):
            portal = UNSET
        elif isinstance(self.portal, PortalViewType0) or isinstance(
            self.portal, PortalViewType1
        ):
            portal = self.portal.to_dict()
        else:
            portal = self.portal

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "scopes": scopes,
            }
        )
        if brand is not UNSET:
            field_dict["brand"] = brand
        if expires_at is not UNSET:
            field_dict["expires_at"] = expires_at
        if permissions is not UNSET:
            field_dict["permissions"] = permissions
        if portal is not UNSET:
            field_dict["portal"] = portal

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.brand import Brand
        from ..models.portal_view_type_0 import PortalViewType0
        from ..models.portal_view_type_1 import PortalViewType1

        d = dict(src_dict)
        name = d.pop("name")

        scopes = cast(list[str], d.pop("scopes"))

        def _parse_brand(data: object) -> Brand | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                brand_type_0 = Brand.from_dict(data)

                return brand_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Brand | None | Unset, data)

        brand = _parse_brand(d.pop("brand", UNSET))

        def _parse_expires_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        expires_at = _parse_expires_at(d.pop("expires_at", UNSET))

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

        def _parse_portal(
            data: object,
        ) -> None | PortalViewType0 | PortalViewType1 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_portal_view_type_0 = PortalViewType0.from_dict(data)

                return componentsschemas_portal_view_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_portal_view_type_1 = PortalViewType1.from_dict(data)

                return componentsschemas_portal_view_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PortalViewType0 | PortalViewType1 | Unset, data)

        portal = _parse_portal(d.pop("portal", UNSET))

        who_am_i = cls(
            name=name,
            scopes=scopes,
            brand=brand,
            expires_at=expires_at,
            permissions=permissions,
            portal=portal,
        )

        who_am_i.additional_properties = d
        return who_am_i

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
