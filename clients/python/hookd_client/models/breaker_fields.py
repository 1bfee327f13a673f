from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="BreakerFields")


@_attrs_define
class BreakerFields:
    """An endpoint's circuit breaker settings; each absent one is the
    default of `[dispatcher.breaker]`.

        Attributes:
            failures (int | None | Unset): Consecutive failed attempts that open the circuit. 1 to 1000.
            max_open_ms (int | None | Unset): The longest the open period grows to. open_ms to 86400000.
            open_ms (int | None | Unset): How long the circuit stays open before one probe. 1 to 86400000.
    """

    failures: int | None | Unset = UNSET
    max_open_ms: int | None | Unset = UNSET
    open_ms: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        failures: int | None | Unset
        if isinstance(self.failures, Unset):
            failures = UNSET
        else:
            failures = self.failures

        max_open_ms: int | None | Unset
        if isinstance(self.max_open_ms, Unset):
            max_open_ms = UNSET
        else:
            max_open_ms = self.max_open_ms

        open_ms: int | None | Unset
        if isinstance(self.open_ms, Unset):
            open_ms = UNSET
        else:
            open_ms = self.open_ms

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if failures is not UNSET:
            field_dict["failures"] = failures
        if max_open_ms is not UNSET:
            field_dict["max_open_ms"] = max_open_ms
        if open_ms is not UNSET:
            field_dict["open_ms"] = open_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_failures(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        failures = _parse_failures(d.pop("failures", UNSET))

        def _parse_max_open_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_open_ms = _parse_max_open_ms(d.pop("max_open_ms", UNSET))

        def _parse_open_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        open_ms = _parse_open_ms(d.pop("open_ms", UNSET))

        breaker_fields = cls(
            failures=failures,
            max_open_ms=max_open_ms,
            open_ms=open_ms,
        )

        return breaker_fields
