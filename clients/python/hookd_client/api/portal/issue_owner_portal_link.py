from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...models.issue_link import IssueLink
from ...models.portal_link import PortalLink
from ...types import UNSET, Response, Unset


def _get_kwargs(
    owner: str,
    *,
    body: IssueLink | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/owners/{owner}/portal".format(
            owner=quote(str(owner), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorBody | PortalLink | None:
    if response.status_code == 201:
        response_201 = PortalLink.from_dict(response.json())

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

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())

        return response_404

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
) -> Response[ErrorBody | PortalLink]:
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
    body: IssueLink | Unset = UNSET,
) -> Response[ErrorBody | PortalLink]:
    """Issue a portal link for an owner

    Args:
        owner (str): The tenant endpoints belong to (`merchant-42`).
        body (IssueLink | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PortalLink]
    """

    kwargs = _get_kwargs(
        owner=owner,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    owner: str,
    *,
    client: AuthenticatedClient | Client,
    body: IssueLink | Unset = UNSET,
) -> ErrorBody | PortalLink | None:
    """Issue a portal link for an owner

    Args:
        owner (str): The tenant endpoints belong to (`merchant-42`).
        body (IssueLink | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PortalLink
    """

    return sync_detailed(
        owner=owner,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    owner: str,
    *,
    client: AuthenticatedClient | Client,
    body: IssueLink | Unset = UNSET,
) -> Response[ErrorBody | PortalLink]:
    """Issue a portal link for an owner

    Args:
        owner (str): The tenant endpoints belong to (`merchant-42`).
        body (IssueLink | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PortalLink]
    """

    kwargs = _get_kwargs(
        owner=owner,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    owner: str,
    *,
    client: AuthenticatedClient | Client,
    body: IssueLink | Unset = UNSET,
) -> ErrorBody | PortalLink | None:
    """Issue a portal link for an owner

    Args:
        owner (str): The tenant endpoints belong to (`merchant-42`).
        body (IssueLink | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PortalLink
    """

    return (
        await asyncio_detailed(
            owner=owner,
            client=client,
            body=body,
        )
    ).parsed
