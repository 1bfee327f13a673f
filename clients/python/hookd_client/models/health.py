from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Health")


@_attrs_define
class Health:
    """
    Attributes:
        status (str): `ok` (healthz); `ready`, `degraded` (Redis unreachable: notifications
            are accepted and indexed once it is back, deliveries wait) or
            `unavailable` (the database unreachable) for readiness.
        mode (None | str | Unset): Readiness only: `embedded` (SQLite, the due index in the process) or
            `server` (PostgreSQL and Redis).
        postgres (None | str | Unset): Server mode's stores, `ok` or `unreachable` (readiness only).
        redis (None | str | Unset): `ok`, `unreachable`, or `paused`: Redis answers, but this process
            does not use its index (another index serves the database, or this
            process could not tell the database which index it uses for 15 s;
            `warnings` says which).
        sqlite (None | str | Unset): The embedded mode's file, `ok`, `unreachable`, or `unwritable`: its
            file system has no room for another page or is read-only, so creates
            fail (readiness only).
        warnings (list[str] | Unset): What an operator should fix, e.g. a Redis `maxmemory-policy` that
            may evict the due index.
    """

    status: str
    mode: None | str | Unset = UNSET
    postgres: None | str | Unset = UNSET
    redis: None | str | Unset = UNSET
    sqlite: None | str | Unset = UNSET
    warnings: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status = self.status

        mode: None | str | Unset
        if isinstance(self.mode, Unset):
            mode = UNSET
        else:
            mode = self.mode

        postgres: None | str | Unset
        if isinstance(self.postgres, Unset):
            postgres = UNSET
        else:
            postgres = self.postgres

        redis: None | str | Unset
        if isinstance(self.redis, Unset):
            redis = UNSET
        else:
            redis = self.redis

        sqlite: None | str | Unset
        if isinstance(self.sqlite, Unset):
            sqlite = UNSET
        else:
            sqlite = self.sqlite

        warnings: list[str] | Unset = UNSET
        if not isinstance(self.warnings, Unset):
            warnings = self.warnings

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
            }
        )
        if mode is not UNSET:
            field_dict["mode"] = mode
        if postgres is not UNSET:
            field_dict["postgres"] = postgres
        if redis is not UNSET:
            field_dict["redis"] = redis
        if sqlite is not UNSET:
            field_dict["sqlite"] = sqlite
        if warnings is not UNSET:
            field_dict["warnings"] = warnings

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        status = d.pop("status")

        def _parse_mode(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        mode = _parse_mode(d.pop("mode", UNSET))

        def _parse_postgres(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        postgres = _parse_postgres(d.pop("postgres", UNSET))

        def _parse_redis(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        redis = _parse_redis(d.pop("redis", UNSET))

        def _parse_sqlite(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        sqlite = _parse_sqlite(d.pop("sqlite", UNSET))

        warnings = cast(list[str], d.pop("warnings", UNSET))

        health = cls(
            status=status,
            mode=mode,
            postgres=postgres,
            redis=redis,
            sqlite=sqlite,
            warnings=warnings,
        )

        health.additional_properties = d
        return health

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
