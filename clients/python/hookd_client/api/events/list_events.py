import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...models.page_event_view import PageEventView
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    owner: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    key: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["owner"] = owner

    params["event_type"] = event_type

    params["key"] = key

    json_created_after: str | Unset = UNSET
    if not isinstance(created_after, Unset):
        json_created_after = created_after.isoformat()
    params["created_after"] = json_created_after

    json_created_before: str | Unset = UNSET
    if not isinstance(created_before, Unset):
        json_created_before = created_before.isoformat()
    params["created_before"] = json_created_before

    params["limit"] = limit

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/events",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorBody | PageEventView | None:
    if response.status_code == 200:
        response_200 = PageEventView.from_dict(response.json())

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
) -> Response[ErrorBody | PageEventView]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    owner: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    key: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[ErrorBody | PageEventView]:
    """List events

     Newest first. With `event_type` (and no `key`), each page checks at most 5,000 events of its scope
    (an owner's, or all): it holds the matches found there, possibly fewer than `limit` or none, and
    `next_cursor` goes on past the events read. Follow `next_cursor` until it is `null`, whatever the
    page's length.

    Args:
        owner (str | Unset): The tenant endpoints belong to (`merchant-42`).
        event_type (str | Unset):
        key (str | Unset):
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PageEventView]
    """

    kwargs = _get_kwargs(
        owner=owner,
        event_type=event_type,
        key=key,
        created_after=created_after,
        created_before=created_before,
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
    owner: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    key: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> ErrorBody | PageEventView | None:
    """List events

     Newest first. With `event_type` (and no `key`), each page checks at most 5,000 events of its scope
    (an owner's, or all): it holds the matches found there, possibly fewer than `limit` or none, and
    `next_cursor` goes on past the events read. Follow `next_cursor` until it is `null`, whatever the
    page's length.

    Args:
        owner (str | Unset): The tenant endpoints belong to (`merchant-42`).
        event_type (str | Unset):
        key (str | Unset):
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PageEventView
    """

    return sync_detailed(
        client=client,
        owner=owner,
        event_type=event_type,
        key=key,
        created_after=created_after,
        created_before=created_before,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    owner: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    key: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[ErrorBody | PageEventView]:
    """List events

     Newest first. With `event_type` (and no `key`), each page checks at most 5,000 events of its scope
    (an owner's, or all): it holds the matches found there, possibly fewer than `limit` or none, and
    `next_cursor` goes on past the events read. Follow `next_cursor` until it is `null`, whatever the
    page's length.

    Args:
        owner (str | Unset): The tenant endpoints belong to (`merchant-42`).
        event_type (str | Unset):
        key (str | Unset):
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PageEventView]
    """

    kwargs = _get_kwargs(
        owner=owner,
        event_type=event_type,
        key=key,
        created_after=created_after,
        created_before=created_before,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    owner: str | Unset = UNSET,
    event_type: str | Unset = UNSET,
    key: str | Unset = UNSET,
    created_after: datetime.datetime | Unset = UNSET,
    created_before: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> ErrorBody | PageEventView | None:
    """List events

     Newest first. With `event_type` (and no `key`), each page checks at most 5,000 events of its scope
    (an owner's, or all): it holds the matches found there, possibly fewer than `limit` or none, and
    `next_cursor` goes on past the events read. Follow `next_cursor` until it is `null`, whatever the
    page's length.

    Args:
        owner (str | Unset): The tenant endpoints belong to (`merchant-42`).
        event_type (str | Unset):
        key (str | Unset):
        created_after (datetime.datetime | Unset):
        created_before (datetime.datetime | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PageEventView
    """

    return (
        await asyncio_detailed(
            client=client,
            owner=owner,
            event_type=event_type,
            key=key,
            created_after=created_after,
            created_before=created_before,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
