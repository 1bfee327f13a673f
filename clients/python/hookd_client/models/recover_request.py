from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RecoverRequest")


@_attrs_define
class RecoverRequest:
    """What to recover: the notifications that ended `failed` (by the time
    they failed, their `completed_at`) between `since` and `until`, both
    included.

        Attributes:
            since (datetime.datetime): Required. RFC 3339, not in the future. Example: 2026-11-26T02:00:00Z.
            dry_run (bool | Unset): Count what it would restart, and change nothing.
            until (datetime.datetime | None | Unset): RFC 3339, not before `since`, not in the future; default: now.
    """

    since: datetime.datetime
    dry_run: bool | Unset = UNSET
    until: datetime.datetime | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        since = self.since.isoformat()

        dry_run = self.dry_run

        until: None | str | Unset
        if isinstance(self.until, Unset):
            until = UNSET
        elif isinstance(self.until, datetime.datetime):
            until = self.until.isoformat()
        else:
            until = self.until

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "since": since,
            }
        )
        if dry_run is not UNSET:
            field_dict["dry_run"] = dry_run
        if until is not UNSET:
            field_dict["until"] = until

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        since = datetime.datetime.fromisoformat(d.pop("since"))

        dry_run = d.pop("dry_run", UNSET)

        def _parse_until(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                until_type_0 = datetime.datetime.fromisoformat(data)

                return until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        until = _parse_until(d.pop("until", UNSET))

        recover_request = cls(
            since=since,
            dry_run=dry_run,
            until=until,
        )

        return recover_request
