from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.operation_kind import OperationKind
from ..models.operation_status import OperationStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.bulk_filter import BulkFilter


T = TypeVar("T", bound="OperationView")


@_attrs_define
class OperationView:
    """An operation: work hookd does in the background, in pages, resumed
    after a restart.

        Attributes:
            created_at (datetime.datetime):
            endpoint_id (UUID):
            id (UUID):
            kind (OperationKind): What an operation does.
            matched (int): Failed notifications of the window (a retry: that its filter holds;
                a cancel: pending ones its filter holds) found so far.
            since (datetime.datetime): The failures it reads: a recover's window; a retry's, from the
                beginning to when it started.
            started (int): Of those, restarted as a new attempt series (due now); a cancel's,
                cancelled.
            status (OperationStatus): Where an operation is.
            until (datetime.datetime):
            error (None | str | Unset): Why it failed.
            filter_ (BulkFilter | None | Unset):
            finished_at (datetime.datetime | None | Unset): When it ended `done` or `failed`; null while it runs.
    """

    created_at: datetime.datetime
    endpoint_id: UUID
    id: UUID
    kind: OperationKind
    matched: int
    since: datetime.datetime
    started: int
    status: OperationStatus
    until: datetime.datetime
    error: None | str | Unset = UNSET
    filter_: BulkFilter | None | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.bulk_filter import BulkFilter

        created_at = self.created_at.isoformat()

        endpoint_id = str(self.endpoint_id)

        id = str(self.id)

        kind = self.kind.value

        matched = self.matched

        since = self.since.isoformat()

        started = self.started

        status = self.status.value

        until = self.until.isoformat()

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        filter_: dict[str, Any] | None | Unset
        if isinstance(self.filter_, Unset):
            filter_ = UNSET
        elif isinstance(self.filter_, BulkFilter):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "endpoint_id": endpoint_id,
                "id": id,
                "kind": kind,
                "matched": matched,
                "since": since,
                "started": started,
                "status": status,
                "until": until,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.bulk_filter import BulkFilter

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        endpoint_id = UUID(d.pop("endpoint_id"))

        id = UUID(d.pop("id"))

        kind = OperationKind(d.pop("kind"))

        matched = d.pop("matched")

        since = datetime.datetime.fromisoformat(d.pop("since"))

        started = d.pop("started")

        status = OperationStatus(d.pop("status"))

        until = datetime.datetime.fromisoformat(d.pop("until"))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_filter_(data: object) -> BulkFilter | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_0 = BulkFilter.from_dict(data)

                return filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BulkFilter | None | Unset, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        operation_view = cls(
            created_at=created_at,
            endpoint_id=endpoint_id,
            id=id,
            kind=kind,
            matched=matched,
            since=since,
            started=started,
            status=status,
            until=until,
            error=error,
            filter_=filter_,
            finished_at=finished_at,
        )

        operation_view.additional_properties = d
        return operation_view

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
