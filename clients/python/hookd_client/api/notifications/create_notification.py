from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.create_notification import CreateNotification
from ...models.error_body import ErrorBody
from ...models.notification_view import NotificationView
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: CreateNotification,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(traceparent, Unset):
        headers["traceparent"] = traceparent

    if not isinstance(tracestate, Unset):
        headers["tracestate"] = tracestate

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/notifications",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorBody | NotificationView | None:
    if response.status_code == 200:
        response_200 = NotificationView.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = NotificationView.from_dict(response.json())

        return response_201

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

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = ErrorBody.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = ErrorBody.from_dict(response.json())

        return response_422

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorBody | NotificationView]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: CreateNotification,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Response[ErrorBody | NotificationView]:
    """Create a notification

    Args:
        traceparent (None | str | Unset):
        tracestate (None | str | Unset):
        body (CreateNotification): A notification as a producer submits it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | NotificationView]
    """

    kwargs = _get_kwargs(
        body=body,
        traceparent=traceparent,
        tracestate=tracestate,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: CreateNotification,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> ErrorBody | NotificationView | None:
    """Create a notification

    Args:
        traceparent (None | str | Unset):
        tracestate (None | str | Unset):
        body (CreateNotification): A notification as a producer submits it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | NotificationView
    """

    return sync_detailed(
        client=client,
        body=body,
        traceparent=traceparent,
        tracestate=tracestate,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: CreateNotification,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Response[ErrorBody | NotificationView]:
    """Create a notification

    Args:
        traceparent (None | str | Unset):
        tracestate (None | str | Unset):
        body (CreateNotification): A notification as a producer submits it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | NotificationView]
    """

    kwargs = _get_kwargs(
        body=body,
        traceparent=traceparent,
        tracestate=tracestate,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: CreateNotification,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> ErrorBody | NotificationView | None:
    """Create a notification

    Args:
        traceparent (None | str | Unset):
        tracestate (None | str | Unset):
        body (CreateNotification): A notification as a producer submits it.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | NotificationView
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            traceparent=traceparent,
            tracestate=tracestate,
        )
    ).parsed
