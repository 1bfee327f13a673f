from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PullRequest")


@_attrs_define
class PullRequest:
    """
    Attributes:
        lease (None | str | Unset): How long the consumer holds them, `1s` to `12h`. Default `30s`. Example: 30s.
        max_ (int | None | Unset): Most notifications to take, 1 to 1000. Default 10.
        wait (None | str | Unset): How long to wait for the first due notification, `0s` to `20s`.
            Default `0s`: answer at once. Example: 20s.
    """

    lease: None | str | Unset = UNSET
    max_: int | None | Unset = UNSET
    wait: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        lease: None | str | Unset
        if isinstance(self.lease, Unset):
            lease = UNSET
        else:
            lease = self.lease

        max_: int | None | Unset
        if isinstance(self.max_, Unset):
            max_ = UNSET
        else:
            max_ = self.max_

        wait: None | str | Unset
        if isinstance(self.wait, Unset):
            wait = UNSET
        else:
            wait = self.wait

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if lease is not UNSET:
            field_dict["lease"] = lease
        if max_ is not UNSET:
            field_dict["max"] = max_
        if wait is not UNSET:
            field_dict["wait"] = wait

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_lease(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        lease = _parse_lease(d.pop("lease", UNSET))

        def _parse_max_(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_ = _parse_max_(d.pop("max", UNSET))

        def _parse_wait(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        wait = _parse_wait(d.pop("wait", UNSET))

        pull_request = cls(
            lease=lease,
            max_=max_,
            wait=wait,
        )

        return pull_request
