from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.previous_public_key_view import PreviousPublicKeyView


T = TypeVar("T", bound="PublicKeyView")


@_attrs_define
class PublicKeyView:
    """What verifies an `ed25519` endpoint's deliveries.

    Attributes:
        previous_public_keys (list[PreviousPublicKeyView]): Rotated-out keys that still sign beside it, newest first.
        public_key (str): `whpk_<base64 of the 32 bytes>` (ed25519): verifies the `v1a,`
            signatures; a PEM SubjectPublicKeyInfo (rsa2): verifies `sign`.
    """

    previous_public_keys: list[PreviousPublicKeyView]
    public_key: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        previous_public_keys = []
        for previous_public_keys_item_data in self.previous_public_keys:
            previous_public_keys_item = previous_public_keys_item_data.to_dict()
            previous_public_keys.append(previous_public_keys_item)

        public_key = self.public_key

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "previous_public_keys": previous_public_keys,
                "public_key": public_key,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.previous_public_key_view import PreviousPublicKeyView

        d = dict(src_dict)
        previous_public_keys = []
        _previous_public_keys = d.pop("previous_public_keys")
        for previous_public_keys_item_data in _previous_public_keys:
            previous_public_keys_item = PreviousPublicKeyView.from_dict(
                previous_public_keys_item_data
            )

            previous_public_keys.append(previous_public_keys_item)

        public_key = d.pop("public_key")

        public_key_view = cls(
            previous_public_keys=previous_public_keys,
            public_key=public_key,
        )

        public_key_view.additional_properties = d
        return public_key_view

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
