from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.cancel_request import CancelRequest
from ...models.cancelled import Cancelled
from ...models.error_body import ErrorBody
from ...models.matched import Matched
from ...models.operation_view import OperationView
from ...models.recover_running import RecoverRunning
from ...types import Response


def _get_kwargs(
    *,
    body: CancelRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/notifications/cancel",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Cancelled | Matched | ErrorBody | OperationView | RecoverRunning | None:
    if response.status_code == 200:

        def _parse_response_200(data: object) -> Cancelled | Matched:
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_cancel_answer_type_0 = Cancelled.from_dict(data)

                return componentsschemas_cancel_answer_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            componentsschemas_cancel_answer_type_1 = Matched.from_dict(data)

            return componentsschemas_cancel_answer_type_1

        response_200 = _parse_response_200(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = OperationView.from_dict(response.json())

        return response_202

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
        response_409 = RecoverRunning.from_dict(response.json())

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
) -> Response[Cancelled | Matched | ErrorBody | OperationView | RecoverRunning]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: CancelRequest,
) -> Response[Cancelled | Matched | ErrorBody | OperationView | RecoverRunning]:
    """Cancel pending notifications by filter

    Args:
        body (CancelRequest): Cancel by key (at once), or by filter (an operation): `key`, or
            `endpoint` with the list's filters, not both.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Cancelled | Matched | ErrorBody | OperationView | RecoverRunning]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: CancelRequest,
) -> Cancelled | Matched | ErrorBody | OperationView | RecoverRunning | None:
    """Cancel pending notifications by filter

    Args:
        body (CancelRequest): Cancel by key (at once), or by filter (an operation): `key`, or
            `endpoint` with the list's filters, not both.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Cancelled | Matched | ErrorBody | OperationView | RecoverRunning
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: CancelRequest,
) -> Response[Cancelled | Matched | ErrorBody | OperationView | RecoverRunning]:
    """Cancel pending notifications by filter

    Args:
        body (CancelRequest): Cancel by key (at once), or by filter (an operation): `key`, or
            `endpoint` with the list's filters, not both.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Cancelled | Matched | ErrorBody | OperationView | RecoverRunning]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: CancelRequest,
) -> Cancelled | Matched | ErrorBody | OperationView | RecoverRunning | None:
    """Cancel pending notifications by filter

    Args:
        body (CancelRequest): Cancel by key (at once), or by filter (an operation): `key`, or
            `endpoint` with the list's filters, not both.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Cancelled | Matched | ErrorBody | OperationView | RecoverRunning
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
