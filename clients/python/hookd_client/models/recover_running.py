from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.error_detail import ErrorDetail
    from ..models.operation_view import OperationView


T = TypeVar("T", bound="RecoverRunning")


@_attrs_define
class RecoverRunning:
    """The 409 of a second recover: the error, and the operation that runs.

    Attributes:
        error (ErrorDetail):
        operation (OperationView): An operation: work hookd does in the background, in pages, resumed
            after a restart.
    """

    error: ErrorDetail
    operation: OperationView
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        error = self.error.to_dict()

        operation = self.operation.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "error": error,
                "operation": operation,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.error_detail import ErrorDetail
        from ..models.operation_view import OperationView

        d = dict(src_dict)
        error = ErrorDetail.from_dict(d.pop("error"))

        operation = OperationView.from_dict(d.pop("operation"))

        recover_running = cls(
            error=error,
            operation=operation,
        )

        recover_running.additional_properties = d
        return recover_running

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
