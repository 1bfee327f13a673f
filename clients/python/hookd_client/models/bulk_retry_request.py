from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="BulkRetryRequest")


@_attrs_define
class BulkRetryRequest:
    """Which failed notifications to restart: those of `endpoint` that the
    other fields (each as the list's filter of that name) all hold.

        Attributes:
            completed_after (datetime.datetime | None | Unset): RFC 3339: failed at or after (as a recover's `since`), not
                in the
                future.
            created_after (datetime.datetime | None | Unset): RFC 3339: created at or after.
            created_before (datetime.datetime | None | Unset): RFC 3339: created before.
            dry_run (bool | Unset): Count what it would restart, and change nothing.
            endpoint (None | str | Unset): Required: the endpoint's id or uid.
            event_type (None | str | Unset): The notification's type, or its event's.
            key_prefix (None | str | Unset): A prefix of the notification's key, or of its event's.
            status (None | str | Unset): Only `failed` (the default): pending notifications are on their way,
                succeeded and cancelled ones are final.
    """

    completed_after: datetime.datetime | None | Unset = UNSET
    created_after: datetime.datetime | None | Unset = UNSET
    created_before: datetime.datetime | None | Unset = UNSET
    dry_run: bool | Unset = UNSET
    endpoint: None | str | Unset = UNSET
    event_type: None | str | Unset = UNSET
    key_prefix: None | str | Unset = UNSET
    status: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        completed_after: None | str | Unset
        if isinstance(self.completed_after, Unset):
            completed_after = UNSET
        elif isinstance(self.completed_after, datetime.datetime):
            completed_after = self.completed_after.isoformat()
        else:
            completed_after = self.completed_after

        created_after: None | str | Unset
        if isinstance(self.created_after, Unset):
            created_after = UNSET
        elif isinstance(self.created_after, datetime.datetime):
            created_after = self.created_after.isoformat()
        else:
            created_after = self.created_after

        created_before: None | str | Unset
        if isinstance(self.created_before, Unset):
            created_before = UNSET
        elif isinstance(self.created_before, datetime.datetime):
            created_before = self.created_before.isoformat()
        else:
            created_before = self.created_before

        dry_run = self.dry_run

        endpoint: None | str | Unset
        if isinstance(self.endpoint, Unset):
            endpoint = UNSET
        else:
            endpoint = self.endpoint

        event_type: None | str | Unset
        if isinstance(self.event_type, Unset):
            event_type = UNSET
        else:
            event_type = self.event_type

        key_prefix: None | str | Unset
        if isinstance(self.key_prefix, Unset):
            key_prefix = UNSET
        else:
            key_prefix = self.key_prefix

        status: None | str | Unset
        if isinstance(self.status, Unset):
            status = UNSET
        else:
            status = self.status

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if completed_after is not UNSET:
            field_dict["completed_after"] = completed_after
        if created_after is not UNSET:
            field_dict["created_after"] = created_after
        if created_before is not UNSET:
            field_dict["created_before"] = created_before
        if dry_run is not UNSET:
            field_dict["dry_run"] = dry_run
        if endpoint is not UNSET:
            field_dict["endpoint"] = endpoint
        if event_type is not UNSET:
            field_dict["event_type"] = event_type
        if key_prefix is not UNSET:
            field_dict["key_prefix"] = key_prefix
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_completed_after(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                completed_after_type_0 = datetime.datetime.fromisoformat(data)

                return completed_after_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        completed_after = _parse_completed_after(d.pop("completed_after", UNSET))

        def _parse_created_after(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_after_type_0 = datetime.datetime.fromisoformat(data)

                return created_after_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        created_after = _parse_created_after(d.pop("created_after", UNSET))

        def _parse_created_before(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_before_type_0 = datetime.datetime.fromisoformat(data)

                return created_before_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        created_before = _parse_created_before(d.pop("created_before", UNSET))

        dry_run = d.pop("dry_run", UNSET)

        def _parse_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        endpoint = _parse_endpoint(d.pop("endpoint", UNSET))

        def _parse_event_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event_type = _parse_event_type(d.pop("event_type", UNSET))

        def _parse_key_prefix(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key_prefix = _parse_key_prefix(d.pop("key_prefix", UNSET))

        def _parse_status(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        status = _parse_status(d.pop("status", UNSET))

        bulk_retry_request = cls(
            completed_after=completed_after,
            created_after=created_after,
            created_before=created_before,
            dry_run=dry_run,
            endpoint=endpoint,
            event_type=event_type,
            key_prefix=key_prefix,
            status=status,
        )

        return bulk_retry_request
