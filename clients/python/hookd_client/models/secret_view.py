from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.previous_secret_view import PreviousSecretView


T = TypeVar("T", bound="SecretView")


@_attrs_define
class SecretView:
    """
    Attributes:
        previous_secrets (list[PreviousSecretView]): The rotated-out secrets that still sign beside `secret`, newest
            first: their expiry only, never their value.
        secret (str):
        previous_secret_expires_at (datetime.datetime | None | Unset): Until when the last rotated-out secret still
            signs, if one does.
    """

    previous_secrets: list[PreviousSecretView]
    secret: str
    previous_secret_expires_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        previous_secrets = []
        for previous_secrets_item_data in self.previous_secrets:
            previous_secrets_item = previous_secrets_item_data.to_dict()
            previous_secrets.append(previous_secrets_item)

        secret = self.secret

        previous_secret_expires_at: None | str | Unset
        if isinstance(self.previous_secret_expires_at, Unset):
            previous_secret_expires_at = UNSET
        elif isinstance(self.previous_secret_expires_at, datetime.datetime):
            previous_secret_expires_at = self.previous_secret_expires_at.isoformat()
        else:
            previous_secret_expires_at = self.previous_secret_expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "previous_secrets": previous_secrets,
                "secret": secret,
            }
        )
        if previous_secret_expires_at is not UNSET:
            field_dict["previous_secret_expires_at"] = previous_secret_expires_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.previous_secret_view import PreviousSecretView

        d = dict(src_dict)
        previous_secrets = []
        _previous_secrets = d.pop("previous_secrets")
        for previous_secrets_item_data in _previous_secrets:
            previous_secrets_item = PreviousSecretView.from_dict(
                previous_secrets_item_data
            )

            previous_secrets.append(previous_secrets_item)

        secret = d.pop("secret")

        def _parse_previous_secret_expires_at(
            data: object,
        ) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                previous_secret_expires_at_type_0 = datetime.datetime.fromisoformat(
                    data
                )

                return previous_secret_expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        previous_secret_expires_at = _parse_previous_secret_expires_at(
            d.pop("previous_secret_expires_at", UNSET)
        )

        secret_view = cls(
            previous_secrets=previous_secrets,
            secret=secret,
            previous_secret_expires_at=previous_secret_expires_at,
        )

        secret_view.additional_properties = d
        return secret_view

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
