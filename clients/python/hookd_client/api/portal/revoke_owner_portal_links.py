from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...models.owner_revoked import OwnerRevoked
from ...types import Response


def _get_kwargs(
    owner: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/owners/{owner}/portal/revoke".format(
            owner=quote(str(owner), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorBody | OwnerRevoked | None:
    if response.status_code == 200:
        response_200 = OwnerRevoked.from_dict(response.json())

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

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())

        return response_404

    if response.status_code == 408:
        response_408 = ErrorBody.from_dict(response.json())

        return response_408

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
) -> Response[ErrorBody | OwnerRevoked]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    owner: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[ErrorBody | OwnerRevoked]:
    """Revoke an owner's portal links

    Args:
        owner (str): The tenant endpoints belong to (`merchant-42`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | OwnerRevoked]
    """

    kwargs = _get_kwargs(
        owner=owner,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    owner: str,
    *,
    client: AuthenticatedClient | Client,
) -> ErrorBody | OwnerRevoked | None:
    """Revoke an owner's portal links

    Args:
        owner (str): The tenant endpoints belong to (`merchant-42`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | OwnerRevoked
    """

    return sync_detailed(
        owner=owner,
        client=client,
    ).parsed


async def asyncio_detailed(
    owner: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[ErrorBody | OwnerRevoked]:
    """Revoke an owner's portal links

    Args:
        owner (str): The tenant endpoints belong to (`merchant-42`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | OwnerRevoked]
    """

    kwargs = _get_kwargs(
        owner=owner,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    owner: str,
    *,
    client: AuthenticatedClient | Client,
) -> ErrorBody | OwnerRevoked | None:
    """Revoke an owner's portal links

    Args:
        owner (str): The tenant endpoints belong to (`merchant-42`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | OwnerRevoked
    """

    return (
        await asyncio_detailed(
            owner=owner,
            client=client,
        )
    ).parsed
