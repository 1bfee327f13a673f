from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.ended_view import EndedView
    from ..models.error_detail import ErrorDetail


T = TypeVar("T", bound="EndedItem")


@_attrs_define
class EndedItem:
    """One receipt's result in a batch.

    Attributes:
        receipt (str):
        status (int): 200, or the status the receipt alone would have had.
        error (ErrorDetail | None | Unset):
        result (EndedView | None | Unset):
    """

    receipt: str
    status: int
    error: ErrorDetail | None | Unset = UNSET
    result: EndedView | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.ended_view import EndedView
        from ..models.error_detail import ErrorDetail

        receipt = self.receipt

        status = self.status

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, ErrorDetail):
            error = self.error.to_dict()
        else:
            error = self.error

        result: dict[str, Any] | None | Unset
        if isinstance(self.result, Unset):
            result = UNSET
        elif isinstance(self.result, EndedView):
            result = self.result.to_dict()
        else:
            result = self.result

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "receipt": receipt,
                "status": status,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if result is not UNSET:
            field_dict["result"] = result

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.ended_view import EndedView
        from ..models.error_detail import ErrorDetail

        d = dict(src_dict)
        receipt = d.pop("receipt")

        status = d.pop("status")

        def _parse_error(data: object) -> ErrorDetail | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = ErrorDetail.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ErrorDetail | None | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_result(data: object) -> EndedView | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                result_type_0 = EndedView.from_dict(data)

                return result_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EndedView | None | Unset, data)

        result = _parse_result(d.pop("result", UNSET))

        ended_item = cls(
            receipt=receipt,
            status=status,
            error=error,
            result=result,
        )

        ended_item.additional_properties = d
        return ended_item

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
