from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.failing_endpoint_view import FailingEndpointView
    from ..models.stats_totals import StatsTotals


T = TypeVar("T", bound="StatsView")


@_attrs_define
class StatsView:
    """A window's columns, one entry per step, oldest first; the last step is
    the current, partial one.

        Attributes:
            attempts (list[int]): Attempts recorded in the step (by when they started).
            delivered (list[int]): Notifications that ended delivered in the step.
            failed (list[int]): Notifications that ended failed in the step (schedule exhausted, a
                permanent failure, held past their hold behind an open circuit).
            failed_attempts (list[int]): Attempts that were not a success.
            failing_endpoints (list[FailingEndpointView]): Up to 10 endpoints with the most failed attempts in the window,
                most first; only those with at least one.
            lateness_p99_ms (list[int | None]): p99 of how late push attempts started (start minus due), in ms;
                never below the true p99, at most 41 % above it; null without one.
            pending (list[int | None]): Pending notifications of the whole deployment, the last sample
                taken in the step, once a minute; null without a sample, and always
                null with an `endpoint` or `owner` filter (a portal link's view):
                the sample counts every endpoint's.
            step_seconds (int): 60 (1h: 60 steps) or 600 (24h: 144 steps).
            success_ratio (list[float | None]): Successful attempts over attempts; null without an attempt.
            time (list[int]): Unix seconds, the start of each step.
            totals (StatsTotals): The window added up.
            window (str): `1h` or `24h`.
    """

    attempts: list[int]
    delivered: list[int]
    failed: list[int]
    failed_attempts: list[int]
    failing_endpoints: list[FailingEndpointView]
    lateness_p99_ms: list[int | None]
    pending: list[int | None]
    step_seconds: int
    success_ratio: list[float | None]
    time: list[int]
    totals: StatsTotals
    window: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        delivered = self.delivered

        failed = self.failed

        failed_attempts = self.failed_attempts

        failing_endpoints = []
        for failing_endpoints_item_data in self.failing_endpoints:
            failing_endpoints_item = failing_endpoints_item_data.to_dict()
            failing_endpoints.append(failing_endpoints_item)

        lateness_p99_ms = []
        for lateness_p99_ms_item_data in self.lateness_p99_ms:
            lateness_p99_ms_item: int | None
            lateness_p99_ms_item = lateness_p99_ms_item_data
            lateness_p99_ms.append(lateness_p99_ms_item)

        pending = []
        for pending_item_data in self.pending:
            pending_item: int | None
            pending_item = pending_item_data
            pending.append(pending_item)

        step_seconds = self.step_seconds

        success_ratio = []
        for success_ratio_item_data in self.success_ratio:
            success_ratio_item: float | None
            success_ratio_item = success_ratio_item_data
            success_ratio.append(success_ratio_item)

        time = self.time

        totals = self.totals.to_dict()

        window = self.window

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "delivered": delivered,
                "failed": failed,
                "failed_attempts": failed_attempts,
                "failing_endpoints": failing_endpoints,
                "lateness_p99_ms": lateness_p99_ms,
                "pending": pending,
                "step_seconds": step_seconds,
                "success_ratio": success_ratio,
                "time": time,
                "totals": totals,
                "window": window,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.failing_endpoint_view import FailingEndpointView
        from ..models.stats_totals import StatsTotals

        d = dict(src_dict)
        attempts = cast(list[int], d.pop("attempts"))

        delivered = cast(list[int], d.pop("delivered"))

        failed = cast(list[int], d.pop("failed"))

        failed_attempts = cast(list[int], d.pop("failed_attempts"))

        failing_endpoints = []
        _failing_endpoints = d.pop("failing_endpoints")
        for failing_endpoints_item_data in _failing_endpoints:
            failing_endpoints_item = FailingEndpointView.from_dict(
                failing_endpoints_item_data
            )

            failing_endpoints.append(failing_endpoints_item)

        lateness_p99_ms = []
        _lateness_p99_ms = d.pop("lateness_p99_ms")
        for lateness_p99_ms_item_data in _lateness_p99_ms:

            def _parse_lateness_p99_ms_item(data: object) -> int | None:
                if data is None:
                    return data
                return cast(int | None, data)

            lateness_p99_ms_item = _parse_lateness_p99_ms_item(
                lateness_p99_ms_item_data
            )

            lateness_p99_ms.append(lateness_p99_ms_item)

        pending = []
        _pending = d.pop("pending")
        for pending_item_data in _pending:

            def _parse_pending_item(data: object) -> int | None:
                if data is None:
                    return data
                return cast(int | None, data)

            pending_item = _parse_pending_item(pending_item_data)

            pending.append(pending_item)

        step_seconds = d.pop("step_seconds")

        success_ratio = []
        _success_ratio = d.pop("success_ratio")
        for success_ratio_item_data in _success_ratio:

            def _parse_success_ratio_item(data: object) -> float | None:
                if data is None:
                    return data
                return cast(float | None, data)

            success_ratio_item = _parse_success_ratio_item(success_ratio_item_data)

            success_ratio.append(success_ratio_item)

        time = cast(list[int], d.pop("time"))

        totals = StatsTotals.from_dict(d.pop("totals"))

        window = d.pop("window")

        stats_view = cls(
            attempts=attempts,
            delivered=delivered,
            failed=failed,
            failed_attempts=failed_attempts,
            failing_endpoints=failing_endpoints,
            lateness_p99_ms=lateness_p99_ms,
            pending=pending,
            step_seconds=step_seconds,
            success_ratio=success_ratio,
            time=time,
            totals=totals,
            window=window,
        )

        stats_view.additional_properties = d
        return stats_view

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
