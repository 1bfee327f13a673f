import datetime
from http import HTTPStatus
from typing import Any
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...models.list_notifications_order import ListNotificationsOrder
from ...models.page_notification_view import PageNotificationView
from ...models.status import Status
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    endpoint: str | Unset = UNSET,
    status: Status | Unset = UNSET,
    key: str | Unset = UNSET,
    key_prefix: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    event: UUID | Unset = UNSET,
    owner: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    completed_after: datetime.datetime | Unset = UNSET,
    order: ListNotificationsOrder | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["endpoint"] = endpoint

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    params["key"] = key

    params["key_prefix"] = key_prefix

    params["event_type"] = event_type

    json_event: str | Unset = UNSET
    if not isinstance(event, Unset):
        json_event = str(event)
    params["event"] = json_event

    params["owner"] = owner

    json_created_after: str | Unset = UNSET
    if not isinstance(created_after, Unset):
        json_created_after = created_after.isoformat()
    params["created_after"] = json_created_after

    json_created_before: str | Unset = UNSET
    if not isinstance(created_before, Unset):
        json_created_before = created_before.isoformat()
    params["created_before"] = json_created_before

    json_completed_after: str | Unset = UNSET
    if not isinstance(completed_after, Unset):
        json_completed_after = completed_after.isoformat()
    params["completed_after"] = json_completed_after

    json_order: str | Unset = UNSET
    if not isinstance(order, Unset):
        json_order = order.value

    params["order"] = json_order

    params["limit"] = limit

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/notifications",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorBody | PageNotificationView | None:
    if response.status_code == 200:
        response_200 = PageNotificationView.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorBody.from_dict(response.json())

        return response_403

    if response.status_code == 408:
        response_408 = ErrorBody.from_dict(response.json())

        return response_408

    if response.status_code == 422:
        response_422 = ErrorBody.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = ErrorBody.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorBody | PageNotificationView]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    endpoint: str | Unset = UNSET,
    status: Status | Unset = UNSET,
    key: str | Unset = UNSET,
    key_prefix: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    event: UUID | Unset = UNSET,
    owner: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    completed_after: datetime.datetime | Unset = UNSET,
    order: ListNotificationsOrder | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[ErrorBody | PageNotificationView]:
    """List notifications

     Newest first, oldest first with `order=oldest`, or one endpoint's most attempted first with
    `order=attempts`. A filter that no index serves together with the list's scope (`status`,
    `event_type`, `completed_after`, a `key_prefix` that more than 5,000 notifications start with, and
    any list of an `owner`) is checked on at most 5,000 rows of each page's scope (an owner's: shared
    among its endpoints): a page then holds the matches found there, possibly fewer than `limit` or
    none, and `next_cursor` goes on past the rows read. Follow `next_cursor` until it is `null`,
    whatever the page's length: a short page is not the last one. Each page's rows are distinct from
    every other page's.

    Args:
        endpoint (str | Unset): An endpoint's id, or the uid it was given (`shop-orders`).
        status (Status | Unset): `pending` until it succeeds, exhausts its schedule (`failed`) or
            is cancelled.
        key (str | Unset):
        key_prefix (str | Unset):
        event_type (str | Unset):
        event (UUID | Unset):
        owner (str | Unset): The tenant endpoints belong to (`merchant-42`).
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        completed_after (datetime.datetime | Unset):
        order (ListNotificationsOrder | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PageNotificationView]
    """

    kwargs = _get_kwargs(
        endpoint=endpoint,
        status=status,
        key=key,
        key_prefix=key_prefix,
        event_type=event_type,
        event=event,
        owner=owner,
        created_after=created_after,
        created_before=created_before,
        completed_after=completed_after,
        order=order,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    endpoint: str | Unset = UNSET,
    status: Status | Unset = UNSET,
    key: str | Unset = UNSET,
    key_prefix: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    event: UUID | Unset = UNSET,
    owner: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    completed_after: datetime.datetime | Unset = UNSET,
    order: ListNotificationsOrder | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> ErrorBody | PageNotificationView | None:
    """List notifications

     Newest first, oldest first with `order=oldest`, or one endpoint's most attempted first with
    `order=attempts`. A filter that no index serves together with the list's scope (`status`,
    `event_type`, `completed_after`, a `key_prefix` that more than 5,000 notifications start with, and
    any list of an `owner`) is checked on at most 5,000 rows of each page's scope (an owner's: shared
    among its endpoints): a page then holds the matches found there, possibly fewer than `limit` or
    none, and `next_cursor` goes on past the rows read. Follow `next_cursor` until it is `null`,
    whatever the page's length: a short page is not the last one. Each page's rows are distinct from
    every other page's.

    Args:
        endpoint (str | Unset): An endpoint's id, or the uid it was given (`shop-orders`).
        status (Status | Unset): `pending` until it succeeds, exhausts its schedule (`failed`) or
            is cancelled.
        key (str | Unset):
        key_prefix (str | Unset):
        event_type (str | Unset):
        event (UUID | Unset):
        owner (str | Unset): The tenant endpoints belong to (`merchant-42`).
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        completed_after (datetime.datetime | Unset):
        order (ListNotificationsOrder | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PageNotificationView
    """

    return sync_detailed(
        client=client,
        endpoint=endpoint,
        status=status,
        key=key,
        key_prefix=key_prefix,
        event_type=event_type,
        event=event,
        owner=owner,
        created_after=created_after,
        created_before=created_before,
        completed_after=completed_after,
        order=order,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    endpoint: str | Unset = UNSET,
    status: Status | Unset = UNSET,
    key: str | Unset = UNSET,
    key_prefix: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    event: UUID | Unset = UNSET,
    owner: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    completed_after: datetime.datetime | Unset = UNSET,
    order: ListNotificationsOrder | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[ErrorBody | PageNotificationView]:
    """List notifications

     Newest first, oldest first with `order=oldest`, or one endpoint's most attempted first with
    `order=attempts`. A filter that no index serves together with the list's scope (`status`,
    `event_type`, `completed_after`, a `key_prefix` that more than 5,000 notifications start with, and
    any list of an `owner`) is checked on at most 5,000 rows of each page's scope (an owner's: shared
    among its endpoints): a page then holds the matches found there, possibly fewer than `limit` or
    none, and `next_cursor` goes on past the rows read. Follow `next_cursor` until it is `null`,
    whatever the page's length: a short page is not the last one. Each page's rows are distinct from
    every other page's.

    Args:
        endpoint (str | Unset): An endpoint's id, or the uid it was given (`shop-orders`).
        status (Status | Unset): `pending` until it succeeds, exhausts its schedule (`failed`) or
            is cancelled.
        key (str | Unset):
        key_prefix (str | Unset):
        event_type (str | Unset):
        event (UUID | Unset):
        owner (str | Unset): The tenant endpoints belong to (`merchant-42`).
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        completed_after (datetime.datetime | Unset):
        order (ListNotificationsOrder | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PageNotificationView]
    """

    kwargs = _get_kwargs(
        endpoint=endpoint,
        status=status,
        key=key,
        key_prefix=key_prefix,
        event_type=event_type,
        event=event,
        owner=owner,
        created_after=created_after,
        created_before=created_before,
        completed_after=completed_after,
        order=order,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    endpoint: str | Unset = UNSET,
    status: Status | Unset = UNSET,
    key: str | Unset = UNSET,
    key_prefix: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    event: UUID | Unset = UNSET,
    owner: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    completed_after: datetime.datetime | Unset = UNSET,
    order: ListNotificationsOrder | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> ErrorBody | PageNotificationView | None:
    """List notifications

     Newest first, oldest first with `order=oldest`, or one endpoint's most attempted first with
    `order=attempts`. A filter that no index serves together with the list's scope (`status`,
    `event_type`, `completed_after`, a `key_prefix` that more than 5,000 notifications start with, and
    any list of an `owner`) is checked on at most 5,000 rows of each page's scope (an owner's: shared
    among its endpoints): a page then holds the matches found there, possibly fewer than `limit` or
    none, and `next_cursor` goes on past the rows read. Follow `next_cursor` until it is `null`,
    whatever the page's length: a short page is not the last one. Each page's rows are distinct from
    every other page's.

    Args:
        endpoint (str | Unset): An endpoint's id, or the uid it was given (`shop-orders`).
        status (Status | Unset): `pending` until it succeeds, exhausts its schedule (`failed`) or
            is cancelled.
        key (str | Unset):
        key_prefix (str | Unset):
        event_type (str | Unset):
        event (UUID | Unset):
        owner (str | Unset): The tenant endpoints belong to (`merchant-42`).
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        completed_after (datetime.datetime | Unset):
        order (ListNotificationsOrder | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PageNotificationView
    """

    return (
        await asyncio_detailed(
            client=client,
            endpoint=endpoint,
            status=status,
            key=key,
            key_prefix=key_prefix,
            event_type=event_type,
            event=event,
            owner=owner,
            created_after=created_after,
            created_before=created_before,
            completed_after=completed_after,
            order=order,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
